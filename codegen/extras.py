"""Optional dependency groups ("extras") and the error that says which one to install.

The base distribution ``kafka-specgen`` is what generated codecs import at run time: the
stdlib-only runtime. Every other library is an extra's (:data:`EXTRA_MODULES`), imported behind
one guard: :func:`missing_extra` turns the ``ModuleNotFoundError`` of a guarded import into a
:class:`MissingExtraError` naming the extra to install, which the command line prints as one
line (exit status 1) instead of a traceback. Stdlib only, like the runtime.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

__all__ = ["EXTRA_MODULES", "MissingExtraError", "missing_extra"]

EXTRA_MODULES: Final[Mapping[str, tuple[str, ...]]] = {
    "generator": ("jinja2", "jsonschema", "ruff", "click"),
    "dumps": (
        "crc32c",
        "lz4",
        "zstandard",
        "cramjam",
        "click",
        "rich",
        "orjson",
        "pyarrow",
        "numpy",
    ),
    "report": ("matplotlib",),
    "spark": ("pyspark", "pandas", "pyarrow", "numpy"),
}
"""The top-level modules each extra installs (pyproject.toml's optional dependencies; a test
keeps the two equal). ``all`` is ``generator``, ``dumps`` and ``report``: every command;
``spark`` is its own (pyspark alone is some 400 MB)."""


class MissingExtraError(ImportError):
    """``feature`` needs the libraries of ``extra``; ``missing`` names the module not found.
    ``option`` names the option that needs them where the rest of a command runs without
    (``--format html``)."""

    def __init__(
        self, feature: str, extra: str, missing: str | None, option: str | None = None
    ) -> None:
        self.feature = feature
        self.extra = extra
        self.missing = missing
        self.option = option
        super().__init__(self.text(feature))

    def text(self, feature: str) -> str:
        """The message, worded for ``feature`` (a command line, a module...)."""
        who = feature if self.option is None else f"{feature} {self.option}"
        hint = f"{who} needs the {self.extra} extra: pip install 'kafka-specgen[{self.extra}]'"
        return f"{hint} ({self.missing} is not installed)" if self.missing else hint


def missing_extra(
    feature: str, extra: str, exc: ModuleNotFoundError, option: str | None = None
) -> MissingExtraError:
    """The error to raise, from the ``ModuleNotFoundError`` of a guarded import."""
    missing = exc.name.partition(".")[0] if exc.name else None
    return MissingExtraError(feature, extra, missing, option)
