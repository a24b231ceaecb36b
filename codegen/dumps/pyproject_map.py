"""Where ``dump`` finds a topic map by itself: the current folder's ``pyproject.toml``, when it
holds a ``[tool.kafka-specgen.topics]`` table (:mod:`codegen.dumps.topic_map` reads the map).

Apart from the map's model and parser so that a dump without a map (the coordinator topics',
a folder whose pyproject.toml has no such table) does not load them at start-up.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

__all__ = ["PYPROJECT_TABLE", "pyproject_with_map"]

PYPROJECT_TABLE: Final = ("tool", "kafka-specgen")
"""Where ``pyproject.toml`` holds the map: ``[tool.kafka-specgen]`` (``package``) and
``[tool.kafka-specgen.topics]``."""


def pyproject_with_map(folder: str | Path = ".") -> Path | None:
    """``folder``'s ``pyproject.toml`` when it has a ``[tool.kafka-specgen.topics]`` table, else
    None (no file, one that cannot be read or is not TOML: not ours to judge)."""
    path = Path(folder) / "pyproject.toml"
    if not path.is_file():
        return None
    try:
        document = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError):
        return None
    table: Any = document
    for part in (*PYPROJECT_TABLE, "topics"):
        table = table.get(part) if isinstance(table, Mapping) else None
    return None if table is None else path
