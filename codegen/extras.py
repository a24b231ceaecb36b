"""Optional dependency groups ("extras") and the error that says which one to install.

The base distribution ``kafka-specgen`` is what generated codecs import at run time: the
stdlib-only runtime. The generator (``generator`` extra: jinja2, jsonschema, ruff, click) and the
dump decoders (``dumps`` extra: crc32c, lz4, zstandard, cramjam) import their libraries behind a
guard that raises :class:`MissingExtraError` naming the extra, instead of a bare
``ModuleNotFoundError``. Stdlib only, like the runtime.
"""

from __future__ import annotations

__all__ = ["MissingExtraError", "missing_extra"]


class MissingExtraError(ImportError):
    """``feature`` needs the libraries of ``extra``; ``missing`` names the module not found."""

    def __init__(self, feature: str, extra: str, missing: str | None) -> None:
        self.feature = feature
        self.extra = extra
        self.missing = missing
        super().__init__(self.text(feature))

    def text(self, feature: str) -> str:
        """The message, worded for ``feature`` (a command line, a module...)."""
        hint = f"{feature} needs the {self.extra} extra: pip install 'kafka-specgen[{self.extra}]'"
        return f"{hint} ({self.missing} is not installed)" if self.missing else hint


def missing_extra(feature: str, extra: str, exc: ModuleNotFoundError) -> MissingExtraError:
    """The error to raise, from the ``ModuleNotFoundError`` of a guarded import."""
    return MissingExtraError(feature, extra, exc.name.partition(".")[0] if exc.name else None)
