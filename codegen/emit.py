"""Stage 3: IR to Python modules through the jinja2 templates, then ruff.

The emitter owns its output folder: ``generate`` writes every module and removes any
``.py`` file it did not write; ``check`` renders into a scratch folder and reports every
file that differs, is missing or is extra.
"""

from __future__ import annotations

import filecmp
import importlib.util
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from codegen.extras import MissingExtraError, missing_extra

try:
    import jinja2
except ModuleNotFoundError as exc:  # a runtime-only install: name the extra to add
    raise missing_extra("code generation", "generator", exc) from None

from codegen import __version__
from codegen.errors import ProblemLog
from codegen.ir import INTEGER_RANGES, EmptyArray, EmptyStruct, Message, Struct, build_messages
from codegen.layout import message_layouts
from codegen.spark_schema import SPARK_MODULE, render_spark_module
from codegen.spec import load_specs

INDEX_MODULE = "__init__.py"
TYPED_MARKER = "py.typed"
"""PEP 561: the package is typed, so mypy checks code that uses it against its annotations."""


def _pyrepr(value: object) -> str:
    return repr(value)


def _docstring(text: object) -> str:
    return " ".join(str(text).split()).replace("\\", "\\\\").replace('"', '\\"')


def template_environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("codegen", "templates"),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        autoescape=False,
        extensions=["jinja2.ext.do"],
    )
    env.filters["pyrepr"] = _pyrepr
    env.filters["docstring"] = _docstring
    env.tests["empty_array"] = lambda v: isinstance(v, EmptyArray)
    env.tests["empty_struct"] = lambda v: isinstance(v, EmptyStruct)
    env.globals["int_range"] = INTEGER_RANGES.get
    return env


def class_order(message: Message) -> list[Struct]:
    """Structs in an order where every class is defined before a class that uses it."""
    done: dict[str, Struct] = {}

    def visit(struct: Struct) -> None:
        if struct.name in done:
            return
        for f in struct.fields:
            if f.struct is not None:
                visit(f.struct)
        done[struct.name] = struct

    for struct in reversed(message.structs):
        visit(struct)
    return list(done.values())


def array_formats(layouts: Any) -> list[tuple[str, str, str]]:
    """(unpackers name, packers name, format) of every fixed-element array."""
    found: dict[str, tuple[str, str, str]] = {}
    for groups in layouts.by_struct.values():
        for layout in groups:
            for step in (*layout.steps, *(t.step for t in layout.tagged)):
                el = step.element
                if el is not None and el.fmt and el.type.kind != "uuid":
                    found[el.fmt] = (el.unpackers, el.packers, el.fmt)
    return sorted(found.values())


def struct_formats(layouts: Any) -> list[tuple[str, str]]:
    formats: dict[str, str] = {"_S_h": "h", "_S_i": "i"}  # lone length prefixes
    for groups in layouts.by_struct.values():
        for layout in groups:
            steps = [*layout.steps, *(t.step for t in layout.tagged)]
            for step in steps:
                if step.kind == "run":
                    formats[step.struct_key] = step.fmt
    return sorted(formats.items())


@dataclass(frozen=True, slots=True)
class RenderedModule:
    name: str
    text: str


def render_message(env: jinja2.Environment, message: Message, source_path: str) -> str:
    layouts = message_layouts(message)
    return env.get_template("module.py.j2").render(
        message=message,
        classes=class_order(message),
        layouts=layouts,
        struct_formats=struct_formats(layouts),
        array_formats=array_formats(layouts),
        source_path=source_path,
        generator_version=__version__,
    )


def source_label(path: Path, roots: list[Path]) -> str:
    """The spec's path as written in headers: relative to its root folder's parent."""
    for root in roots:
        base = root if root.is_dir() else root.parent
        try:
            return str(path.resolve().relative_to(base.resolve().parent))
        except ValueError:
            continue
    return path.name


def load_messages(spec_roots: list[Path]) -> list[Message]:
    """Read, check and build every spec below ``spec_roots``; raise SpecErrors on problems."""
    log = ProblemLog()
    specs = load_specs(spec_roots, log)
    messages = build_messages(specs, log)
    log.raise_if_any()
    return messages


def render_package(messages: list[Message], spec_roots: list[Path]) -> list[RenderedModule]:
    env = template_environment()
    modules = [
        RenderedModule(
            f"{m.module}.py", render_message(env, m, source_label(m.source_path, spec_roots))
        )
        for m in messages
    ]
    index = env.get_template("index.py.j2").render(
        messages=messages, spec_count=len(messages), generator_version=__version__
    )
    modules.append(RenderedModule(INDEX_MODULE, index))
    modules.append(RenderedModule(SPARK_MODULE, render_spark_module(env, messages)))
    return modules


def _ruff(*args: str) -> None:
    if importlib.util.find_spec("ruff") is None:
        raise MissingExtraError("code generation", "generator", "ruff")
    result = subprocess.run(
        [sys.executable, "-m", "ruff", *args], capture_output=True, text=True, check=False
    )
    if result.returncode != 0:
        raise RuntimeError(f"ruff {' '.join(args[:2])} failed:\n{result.stdout}{result.stderr}")


def format_folder(folder: Path) -> None:
    """Drop unused imports, sort imports and format, with fixed settings (deterministic)."""
    common = ["--isolated", "--line-length", "100", "--target-version", "py311", "--no-cache"]
    common += ["--config", "format.skip-magic-trailing-comma=true"]
    _ruff("check", *common, "--select", "F401,I", "--fix", "--quiet", "--exit-zero", str(folder))
    _ruff("format", *common, "--quiet", str(folder))


def write_package(spec_roots: list[Path], out: Path) -> list[Path]:
    """Render every module into a scratch folder, format it, then mirror it into ``out``.

    Returns the files of the package: its modules and the ``py.typed`` marker.
    """
    messages = load_messages(spec_roots)
    with tempfile.TemporaryDirectory(prefix="kafka-specgen-") as tmp:
        scratch = Path(tmp)
        for module in render_package(messages, spec_roots):
            (scratch / module.name).write_text(module.text, encoding="utf-8")
        try:
            format_folder(scratch)
        except RuntimeError as exc:
            # A template emitted invalid Python: keep the rendered files to look at.
            kept = Path(tempfile.mkdtemp(prefix="kafka-specgen-unformatted-"))
            shutil.copytree(scratch, kept, dirs_exist_ok=True)
            raise RuntimeError(f"{exc}\nthe rendered modules are kept in {kept}") from None
        (scratch / TYPED_MARKER).write_text("", encoding="utf-8")
        out.mkdir(parents=True, exist_ok=True)
        written = _package_files(scratch)
        keep = {p.name for p in written}
        for stale in out.glob("*.py"):
            if stale.name not in keep:
                stale.unlink()
        for path in written:
            target = out / path.name
            if not target.exists() or not filecmp.cmp(path, target, shallow=False):
                shutil.copyfile(path, target)
        return [out / p.name for p in written]


def _package_files(folder: Path) -> list[Path]:
    """The files of a generated package: its modules and the ``py.typed`` marker."""
    return sorted([*folder.glob("*.py"), *folder.glob(TYPED_MARKER)])


@dataclass(frozen=True, slots=True)
class Drift:
    changed: list[str]
    missing: list[str]
    extra: list[str]

    @property
    def clean(self) -> bool:
        return not (self.changed or self.missing or self.extra)

    def lines(self) -> Iterable[str]:
        for name in self.changed:
            yield f"changed: {name}"
        for name in self.missing:
            yield f"missing: {name}"
        for name in self.extra:
            yield f"extra (not written by the generator): {name}"


def check_package(spec_roots: list[Path], out: Path) -> Drift:
    """Compare ``out`` with what ``write_package`` would write."""
    with tempfile.TemporaryDirectory(prefix="kafka-specgen-check-") as tmp:
        fresh = Path(tmp) / "fresh"
        write_package(spec_roots, fresh)
        want = {p.name for p in _package_files(fresh)}
        have = {p.name for p in _package_files(out)} if out.is_dir() else set()
        changed = sorted(
            n for n in want & have if not filecmp.cmp(fresh / n, out / n, shallow=False)
        )
        return Drift(changed, sorted(want - have), sorted(have - want))
