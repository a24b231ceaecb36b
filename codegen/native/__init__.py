"""The native decoder: one C engine (``engine.c``) driven by layout tables.

The tables come from ``codegen.native_tables``; this package only loads the compiled
engine and never imports the generator. The pure generated readers stay the reference and
the fallback: ``engine()`` is None when the engine is not built.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from importlib import import_module
from types import ModuleType
from typing import Any


def engine() -> ModuleType | None:
    """The compiled engine module, or None when it has not been built."""
    try:
        return import_module("codegen.native._engine")
    except ImportError:
        return None


def reader(
    table: tuple[Any, ...],
    classes: Mapping[str, type],
    unknown_tags: Callable[[list[tuple[int, bytes]]], Any] = dict,
) -> Callable[[bytes, int], tuple[Any, int]]:
    """A native ``reader(buf, offset) -> (obj, next_offset)`` for one layout table.

    ``classes`` maps each struct name of the table to its generated class; ``unknown_tags``
    makes an object's ``unknown_tags`` value from its (tag, bytes) pairs in wire order.
    """
    module = engine()
    if module is None:
        raise ImportError("the native engine is not built: run python -m codegen.native.build")
    made: Callable[[bytes, int], tuple[Any, int]] = module.reader(table, classes, unknown_tags)
    return made
