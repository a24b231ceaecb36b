"""The build hook's settings in a project's ``pyproject.toml``, for the command line.

``python -m codegen generate``, ``check`` and ``validate`` without ``--specs``/``--out``/
``--package`` read them from the ``[tool.hatch.build.hooks.kafka-specgen]`` table of the nearest
``pyproject.toml`` (the working folder or a parent), so they write and check exactly what the
build writes. Paths are relative to the folder of that ``pyproject.toml``, as in the build.
"""

from __future__ import annotations

import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

CONFIG_TABLE = "[tool.hatch.build.hooks.kafka-specgen]"
DEFAULT_SPECS = "message_specs"
DEFAULT_OUT = "generated"


class ProjectSettingsError(ValueError):
    """The hook's table is there but unusable (bad TOML, a value of the wrong type)."""


@dataclass(frozen=True, slots=True)
class HookSettings:
    """``specs``, ``out`` and ``package`` of the hook's table, paths made absolute."""

    pyproject: Path
    specs: tuple[Path, ...]
    out: Path
    package: str | None

    @property
    def root(self) -> Path:
        return self.pyproject.parent


def nearest_pyproject(start: Path) -> Path | None:
    """``pyproject.toml`` in ``start`` or its nearest parent that has one."""
    for folder in (start, *start.parents):
        candidate = folder / "pyproject.toml"
        if candidate.is_file():
            return candidate
    return None


def hook_settings(start: Path) -> HookSettings | None:
    """The hook's settings of the nearest ``pyproject.toml`` above ``start``; None when there is
    none or it has no kafka-specgen table (then the defaults apply, relative to ``start``)."""
    pyproject = nearest_pyproject(start.resolve())
    if pyproject is None:
        return None
    try:
        document = tomllib.loads(pyproject.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ProjectSettingsError(f"{pyproject}: cannot read it: {exc}") from None
    table = document.get("tool", {}).get("hatch", {}).get("build", {}).get("hooks", {})
    config = table.get("kafka-specgen") if isinstance(table, dict) else None
    if not isinstance(config, dict):
        return None
    root = pyproject.parent
    specs = config.get("specs", DEFAULT_SPECS)
    spec_list = specs if isinstance(specs, list) else [specs]
    out = config.get("out", DEFAULT_OUT)
    package = config.get("package")
    _expect(pyproject, "specs", spec_list, lambda v: all(isinstance(s, str) for s in v))
    _expect(pyproject, "out", out, lambda v: isinstance(v, str))
    _expect(pyproject, "package", package, lambda v: v is None or isinstance(v, str))
    if not (root / out).resolve().is_relative_to(root.resolve()):
        raise ProjectSettingsError(
            f"{pyproject}: out = {out!r} under {CONFIG_TABLE} resolves to "
            f"{(root / out).resolve()}, outside the project {root}; give a folder inside it"
        )
    return HookSettings(
        pyproject=pyproject,
        specs=tuple(root / s for s in spec_list),
        out=root / out,
        package=package,
    )


def _expect(pyproject: Path, key: str, value: Any, ok: Callable[[Any], bool]) -> None:
    if not ok(value):
        raise ProjectSettingsError(
            f"{pyproject}: {key} = {value!r} under {CONFIG_TABLE} is not "
            + ("a path or a list of paths" if key == "specs" else "a string")
        )
