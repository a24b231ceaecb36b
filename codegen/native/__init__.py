"""The native decoder: one C engine (``engine.c``) driven by layout tables.

The tables come from ``codegen.native_tables`` and are carried by every generated module;
``codegen.runtime.backends`` turns them into the readers of the native backend. This package
holds the engine's source and its build (``python -m codegen.native.build``) and never
imports the generator. ``engine()`` is None when the engine is not built.
"""

from __future__ import annotations

from importlib import import_module
from types import ModuleType


def engine() -> ModuleType | None:
    """The compiled engine module, or None when it has not been built."""
    try:
        return import_module("codegen.native._engine")
    except ImportError:
        return None
