"""What the checks of one old spec against its new counterpart share.

The versions the checks judge are the *existing* ones: versions both specs define, released on
the old side (not the newest version of a spec marked ``latestVersionUnstable``). Of those,
``changed`` are the versions whose byte layouts differ (:func:`codegen.lint.layout.difference`):
the lint's judgement of the wire. A finding about the bytes of existing versions names the
versions it is about and is kept only when one of them changed, so a rename, a restructure
that keeps the old versions' bytes, or a field moved with the same bytes never reads as a wire
break; a changed version no such finding explains gets ``version-layout-changed``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from codegen.lint.findings import Finding
from codegen.lint.model import LField, SpecView
from codegen.lint.records import Role

# Findings about the bytes of existing versions, kept only for versions whose layout changed.
LAYOUT_RULES = frozenset(
    {
        "flexible-versions-changed",
        "field-type-changed",
        "tagged-field-type-changed",
        "field-versions-changed",
        "field-added-to-existing-version",
        "field-removed-from-existing-version",
        "field-tagging-changed",
        "fields-reordered",
        "nullability-narrowed",
        "nullability-widened",
        "tagged-default-changed",
        "tag-changed",
        "tag-reused",
        "field-flexible-versions-changed",
        "coordinator-key-changed",
    }
)


@dataclass(slots=True)
class Rename:
    """A field of existing versions under another name (``struct`` is the old struct's)."""

    struct: str
    old: LField
    new: LField
    versions: set[int]
    by_place: bool  # paired by its place in an unchanged layout


@dataclass(slots=True)
class PairContext:
    old: SpecView
    new: SpecView
    role: Role
    cross_model: bool
    judged: frozenset[int] = frozenset()  # existing versions (both specs, released on the old)
    changed: frozenset[int] = frozenset()  # judged versions whose byte layout differs
    findings: list[Finding] = field(default_factory=list)
    covered: set[int] = field(default_factory=set)  # changed versions a finding explains
    # fields of existing versions with new names, and the fields only new versions have
    # beside them: one field-renamed finding for the spec
    renames: dict[tuple[str, str, str], Rename] = field(default_factory=dict)
    grown: dict[str, LField] = field(default_factory=dict)
    # fields whose name another type takes in versions they share none of: (old, new)
    retyped: dict[str, tuple[LField, LField]] = field(default_factory=dict)

    def add(
        self,
        rule_id: str,
        message: str,
        json_path: str,
        line: int | None = None,
        versions: Iterable[int] | None = None,
    ) -> None:
        """Add a finding; one of LAYOUT_RULES only when one of its ``versions`` changed."""
        if versions is not None:
            claimed = set(versions) & self.changed
            if rule_id in LAYOUT_RULES and not claimed:
                return
            self.covered |= claimed
        where = self.new.line_of(json_path) if line is None else line
        self.findings.append(
            Finding(
                rule_id, message, self.new.path, where, json_path, self.new.name, rel=self.new.rel
            )
        )
