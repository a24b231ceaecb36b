"""Counts in messages: ``1 problem``, ``2 problems``, ``1,024 batches`` (standard library only)."""

from __future__ import annotations

__all__ = ["plural"]


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
