"""A hatchling build hook that generates codecs from specs whenever a project is built.

Use it from another project's ``pyproject.toml`` (README.md, "Generating codecs in your own
project", shows how to get the ``kafka-specgen`` wheel without a package index)::

    [build-system]
    requires = ["hatchling", "kafka-specgen[generator]"]
    build-backend = "hatchling.build"

    [tool.hatch.build.hooks.kafka-specgen]
    specs = "specs"              # folder of Kafka-style JSON specs (default: message_specs)
    out = "src/myproject/kafka"  # package folder to write, inside the project (default: generated)
    # package = "codecs"         # optional dotted package name: modules go to out/codecs

The wheel gets the generated modules even when ``out`` is git-ignored, and a run-time dependency
on ``kafka-specgen`` (the stdlib-only runtime the modules import) of the generator's major.minor
version. Spec problems stop the build with one ``path:line: $.json.path: message`` line each.

This project uses the same class through ``[tool.hatch.build.hooks.custom]``: building
kafka-specgen itself compiles the native engine into a platform wheel (``SPECGEN_NATIVE_BUILD``:
``auto``, ``required`` or ``skip``; see :mod:`codegen.native.build`) and ships the committed
``generated/`` as it is.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface
from hatchling.plugin import hookimpl

# The project's modules are imported in the functions that use them: hatchling loads this file
# before kafka-specgen itself is on sys.path (initialize puts it there), and a project that
# generates codecs needs the generator extra only when it builds.

DISTRIBUTION = "kafka-specgen"
CONFIG_TABLE = "[tool.hatch.build.hooks.kafka-specgen]"


class SpecgenBuildError(SystemExit):
    """The build cannot go on; the text says why, with no traceback (``SystemExit`` prints
    its text and exits 1, in hatchling's command line and in pip's build subprocess)."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.text = text

    def __str__(self) -> str:
        return self.text


def runtime_requirement() -> str:
    """``kafka-specgen`` of the generator's major.minor, at least its own version."""
    from codegen import __version__

    return f"{DISTRIBUTION}~={__version__}"


class SpecgenBuildHook(BuildHookInterface):  # type: ignore[type-arg]
    """Runs ``python -m codegen generate`` for the configured specs before the build."""

    PLUGIN_NAME = "kafka-specgen"

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        root = Path(self.root)
        if self.metadata.name == DISTRIBUTION:
            # Building kafka-specgen itself: its generated/ is committed and kept current by
            # `python -m codegen check`, so the build needs hatchling alone (an sdist builds on
            # any Python); only the native engine is compiled.
            if str(root) not in sys.path:
                sys.path.insert(0, str(root))
            if self.target_name == "wheel":
                self._build_native_engine(version, build_data)
            return
        from codegen.extras import MissingExtraError

        try:
            from codegen.emit import write_package
        except MissingExtraError as exc:  # the build requirements name kafka-specgen alone
            raise SpecgenBuildError(
                f"{exc.text('the kafka-specgen build hook')}; list it in [build-system]: "
                f'requires = ["hatchling", "{DISTRIBUTION}[generator]"]'
            ) from None
        from codegen.errors import SpecErrors
        from codegen.text import plural

        specs = [root / str(p) for p in _as_list(self.config.get("specs", "message_specs"))]
        _check_spec_paths(root, specs)
        from codegen.emit import OutputError

        try:
            out = output_folder(root, self.config)
        except OutputError as exc:
            raise SpecgenBuildError(f"kafka-specgen: {exc}") from None
        try:
            files = write_package(specs, out)
        except SpecErrors as exc:
            lines = [str(p) for p in exc.problems]
            lines.append(
                f"kafka-specgen: {plural(len(lines), 'problem')} in the specs; nothing built"
            )
            raise SpecgenBuildError("\n".join(lines)) from None
        self.app.display_info(f"kafka-specgen: {plural(len(files), 'file')} in {out}")
        if version != "editable":
            # Named explicitly, so a git-ignored output folder still ends up in the wheel.
            for path in files:
                if path.resolve().is_relative_to(root.resolve()):
                    relative = path.resolve().relative_to(root.resolve()).as_posix()
                    build_data["force_include"][str(path)] = relative
        if self.target_name == "wheel":
            build_data["dependencies"].append(runtime_requirement())

    def _build_native_engine(self, version: str, build_data: dict[str, Any]) -> None:
        """Compile the native decoder into the wheel (in place for an editable install), as
        ``SPECGEN_NATIVE_BUILD`` says: without a working C compiler (``auto``) or when asked
        (``skip``) the wheel is pure Python (``py3-none-any``) and reads with the pure backend."""
        from codegen.native import build

        try:
            mode = build.native_build_mode()
        except ValueError as exc:
            raise SpecgenBuildError(f"kafka-specgen: {exc}") from None
        if mode == "skip":
            self.app.display_info(
                f"kafka-specgen: {build.NATIVE_BUILD_VARIABLE}=skip: a pure-Python wheel "
                "(py3-none-any) without the native engine"
            )
            return
        built: dict[str, Path] = {}
        total = 0.0
        try:
            for module in build.MODULES:
                if version == "editable":
                    built[module], seconds = build.build(module=module)
                else:
                    out = Path(self.directory) / "native" / build.output_path(module).name
                    out.parent.mkdir(parents=True, exist_ok=True)
                    built[module], seconds = build.build(out=out, module=module)
                total += seconds
        except (build.CompilerNotFound, build.CompilerFailed) as exc:
            if mode == "required":
                raise SpecgenBuildError(
                    f"kafka-specgen: {exc}\nkafka-specgen: {build.NATIVE_BUILD_VARIABLE}=required, "
                    "so the build stops; fix the compiler (or CC), or unset "
                    f"{build.NATIVE_BUILD_VARIABLE} to build a pure-Python wheel"
                ) from None
            self._warn(
                f"kafka-specgen: {exc}\nkafka-specgen: building a pure-Python wheel instead: "
                "it reads messages with the pure-Python backend (same results, 3-6x slower); "
                f"set {build.NATIVE_BUILD_VARIABLE}=required to make this an error, or "
                f"{build.NATIVE_BUILD_VARIABLE}=skip to ask for the pure wheel"
            )
            return
        self.app.display_info(f"kafka-specgen: built the native decoder in {total:.1f} s")
        if version != "editable":
            for module, path in built.items():
                relative = build.output_path(module).relative_to(Path(self.root).resolve())
                build_data["force_include"][str(path)] = relative.as_posix()
            build_data["pure_python"] = False
            build_data["infer_tag"] = True

    def _warn(self, text: str) -> None:
        """A warning in the build log, and on the terminal pip runs in: pip shows a build's
        output only with -v (or when it fails), never a warning of one that succeeds."""
        self.app.display_warning(text)
        try:
            tty = os.open("/dev/tty", os.O_WRONLY | os.O_NOCTTY)
        except OSError:  # no terminal (CI, a service): the build log holds the warning
            return
        with os.fdopen(tty, "w", encoding="utf-8", errors="replace") as terminal:
            for line in text.splitlines():
                terminal.write(f"WARNING: {line}\n")


def _check_spec_paths(root: Path, specs: list[Path]) -> None:
    missing = [p for p in specs if not p.exists()]
    if missing:
        names = ", ".join(_shown(root, p) for p in missing)
        raise SpecgenBuildError(
            f"kafka-specgen: specs path {names} does not exist; set specs = "
            f'"<folder of your JSON specs>" under {CONFIG_TABLE} (relative to {root})'
        )
    if not any(p.is_file() or any(p.rglob("*.json")) for p in specs):
        names = ", ".join(_shown(root, p) for p in specs)
        raise SpecgenBuildError(
            f"kafka-specgen: no specs (*.json files) in {names}; put your Kafka-style JSON "
            f"specs there or point specs under {CONFIG_TABLE} at their folder"
        )


def _shown(root: Path, path: Path) -> str:
    try:
        return repr(path.relative_to(root).as_posix())
    except ValueError:
        return repr(str(path))


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
