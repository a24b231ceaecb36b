"""Version ranges as a value type: ``"none"``, ``"3"``, ``"3-7"``, ``"3+"``.

Kafka's generator and every stage of ours (validation, emission, lint) reason about
sets of versions; this module is the one place that knows how to spell and combine them.
Stdlib only: the runtime and generated code may use it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import ClassVar

MAX_VERSION = 32767


class VersionRangeError(ValueError):
    """Text that is not a version range."""


@dataclass(frozen=True, slots=True, order=True)
class VersionRange:
    """A contiguous range of versions, ``lowest..highest`` inclusive.

    The empty range is ``VersionRange(0, -1)``, like Kafka's ``Versions.NONE``.
    """

    lowest: int
    highest: int

    NONE: ClassVar[VersionRange]
    ALL: ClassVar[VersionRange]

    @classmethod
    def parse(cls, text: str) -> VersionRange:
        """Parse ``none``, ``N``, ``A-B`` or ``A+``; raise VersionRangeError otherwise."""
        s = text.strip()
        if s == "none":
            return cls.NONE
        try:
            if s.endswith("+"):
                return cls(_part(s[:-1], text), MAX_VERSION)
            if "-" in s:
                low, high = s.split("-", 1)
                return cls._checked(_part(low, text), _part(high, text), text)
            n = _part(s, text)
            return cls(n, n)
        except VersionRangeError:
            raise
        except ValueError as exc:  # pragma: no cover - _part wraps these
            raise VersionRangeError(f"invalid version range {text!r}") from exc

    @classmethod
    def _checked(cls, low: int, high: int, text: str) -> VersionRange:
        if high < low:
            raise VersionRangeError(f"invalid version range {text!r}: {high} is below {low}")
        return cls(low, high)

    @classmethod
    def single(cls, version: int) -> VersionRange:
        return cls(version, version)

    @property
    def empty(self) -> bool:
        return self.highest < self.lowest

    @property
    def open_ended(self) -> bool:
        return not self.empty and self.highest == MAX_VERSION

    def __contains__(self, version: object) -> bool:
        return isinstance(version, int) and self.lowest <= version <= self.highest

    def contains(self, other: VersionRange) -> bool:
        """True when every version of ``other`` is in this range (the empty range is in all)."""
        return other.empty or (self.lowest <= other.lowest and other.highest <= self.highest)

    def intersect(self, other: VersionRange) -> VersionRange:
        low, high = max(self.lowest, other.lowest), min(self.highest, other.highest)
        return VersionRange(low, high) if low <= high else VersionRange.NONE

    def overlaps(self, other: VersionRange) -> bool:
        return not self.intersect(other).empty

    def subtract(self, other: VersionRange) -> VersionRange | None:
        """This range minus ``other``; None when the result would be two ranges."""
        if self.empty or other.empty or not self.overlaps(other):
            return self
        if other.lowest <= self.lowest and self.highest <= other.highest:
            return VersionRange.NONE
        if other.lowest <= self.lowest:
            return VersionRange(other.highest + 1, self.highest)
        if self.highest <= other.highest:
            return VersionRange(self.lowest, other.lowest - 1)
        return None

    def versions(self) -> range:
        return range(self.lowest, self.highest + 1)

    def __str__(self) -> str:
        if self.empty:
            return "none"
        if self.highest == MAX_VERSION:
            return f"{self.lowest}+"
        if self.lowest == self.highest:
            return str(self.lowest)
        return f"{self.lowest}-{self.highest}"

    def __repr__(self) -> str:
        return f"VersionRange.parse({str(self)!r})"


def _part(text: str, whole: str) -> int:
    if not text.isdigit():
        raise VersionRangeError(f"invalid version range {whole!r}")
    n = int(text)
    if n > MAX_VERSION:
        raise VersionRangeError(f"invalid version range {whole!r}: {n} is above {MAX_VERSION}")
    return n


VersionRange.NONE = VersionRange(0, -1)
VersionRange.ALL = VersionRange(0, MAX_VERSION)


def versions_text(versions: Iterable[int]) -> str:
    """A set of versions as runs: ``[0, 1, 2, 5]`` -> ``"0-2, 5"``."""
    parts: list[str] = []
    for v in sorted(set(versions)):
        if parts and parts[-1].split("-")[-1] == str(v - 1):
            parts[-1] = f"{parts[-1].split('-')[0]}-{v}"
        else:
            parts.append(str(v))
    return ", ".join(parts)


def parse_versions_text(text: str) -> list[int]:
    """The versions of :func:`versions_text`; VersionRangeError when the text is not one."""
    found: list[int] = []
    for part in text.split(", "):
        low, _, high = part.partition("-")
        found.extend(range(_part(low, text), _part(high or low, text) + 1))
    return found


def versions_phrase(versions: Iterable[int]) -> str:
    """``"version 3"`` or ``"versions 0-2, 5"``."""
    numbers = sorted(set(versions))
    return f"{'version' if len(numbers) == 1 else 'versions'} {versions_text(numbers)}"
