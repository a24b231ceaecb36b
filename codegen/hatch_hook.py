"""A hatchling build hook that generates codecs from specs whenever a project is built.

Use it from another project's ``pyproject.toml``::

    [build-system]
    requires = ["hatchling", "kafka-specgen"]
    build-backend = "hatchling.build"

    [tool.hatch.build.hooks.kafka-specgen]
    specs = "specs"              # folder of Kafka-style JSON specs (default: message_specs)
    out = "src/myproject/kafka"  # package folder to write, inside the project (default: generated)
    # package = "codecs"         # optional dotted package name: modules go to out/codecs

This project uses the same class through ``[tool.hatch.build.hooks.custom]``.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface
from hatchling.plugin import hookimpl


class SpecgenBuildHook(BuildHookInterface):  # type: ignore[type-arg]
    """Runs ``python -m codegen generate`` for the configured specs before the build."""

    PLUGIN_NAME = "kafka-specgen"

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        root = Path(self.root)
        if str(root) not in sys.path:
            sys.path.insert(0, str(root))  # building this project itself: use its own codegen
        from codegen.emit import write_package

        specs = [root / str(p) for p in _as_list(self.config.get("specs", "message_specs"))]
        out = output_folder(root, self.config)
        files = write_package(specs, out)
        self.app.display_info(f"kafka-specgen: {len(files)} module(s) in {out}")


def output_folder(root: Path, config: dict[str, Any]) -> Path:
    """The folder the hook writes: ``out`` (and ``package`` below it) inside the project.

    Raise OutputError for a bad package name or a folder outside the project root.
    """
    from codegen.emit import OutputError, package_folder

    out = root / str(config.get("out", "generated"))
    if not out.resolve().is_relative_to(root.resolve()):
        raise OutputError(
            f"out = {config.get('out')!r} resolves to {out.resolve()}, outside "
            f"the project {root}; give a folder inside the project"
        )
    package = config.get("package")
    return package_folder(out, None if package is None else str(package))


def _as_list(value: object) -> list[object]:
    return list(value) if isinstance(value, (list, tuple)) else [value]


@hookimpl
def hatch_register_build_hook() -> type[SpecgenBuildHook]:
    return SpecgenBuildHook
