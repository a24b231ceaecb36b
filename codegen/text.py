"""Numbers and moments in messages and tables: ``1 problem``, ``2 problems``, ``1,024 batches``;
``2023-05-14T01:25:34.529Z`` (standard library only)."""

from __future__ import annotations

from datetime import UTC, datetime

__all__ = ["plural", "utc_text"]


def plural(count: int, word: str, many: str | None = None) -> str:
    """``count`` and ``word``, the word in the plural unless the count is one (``many``, or the
    regular English plural: ``batch`` -> ``batches``, ``entry`` -> ``entries``)."""
    if count == 1:
        return f"1 {word}"
    if many is None:
        if word.endswith(("s", "x", "ch", "sh")):
            many = f"{word}es"
        elif word.endswith("y") and word[-2:-1] not in ("a", "e", "i", "o", "u"):
            many = f"{word[:-1]}ies"
        else:
            many = f"{word}s"
    return f"{count:,} {many}"


def utc_text(ms: int, none: str = "") -> str:
    """Epoch milliseconds as UTC ISO 8601 (``2023-05-14T01:25:34.529Z``); ``none`` when negative
    (no timestamp) or out of range."""
    if ms < 0:
        return none
    try:
        moment = datetime.fromtimestamp(ms / 1000, tz=UTC)
    except (OverflowError, OSError, ValueError):
        return none
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")
