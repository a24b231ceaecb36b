"""What the lint compares: checked IR messages with the spec location of every field.

The IR drops JSON paths, so each message is walked side by side with its raw spec to give
every field and struct the ``$.json.path`` and line a finding points at. Specs come from
files, directories or a git ref; a :class:`SpecSet` is one side of a comparison.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from codegen.errors import ProblemLog, display_path
from codegen.ir import Field, Message, build_messages
from codegen.spec import FieldSpec, MessageSpec, find_spec_files, spec_from_text
from codegen.specfile import SpecSyntaxError, parse_spec_text, read_spec_file
from codegen.versions import VersionRange


@dataclass(frozen=True, slots=True)
class LField:
    """An IR field with its place in the spec."""

    ir: Field
    json_path: str
    line: int
    index: int
    struct: LStruct | None

    @property
    def name(self) -> str:
        return self.ir.name


@dataclass(frozen=True, slots=True)
class LStruct:
    """A struct's fields; ``json_path`` is the object holding its ``fields`` list."""

    name: str
    versions: VersionRange
    fields: tuple[LField, ...]
    json_path: str
    line: int

    def fields_json_path(self) -> str:
        return "$.fields" if self.json_path == "$" else f"{self.json_path}.fields"


@dataclass(frozen=True, slots=True)
class SpecView:
    """One spec of a set: raw spec, IR, located struct tree and where it came from."""

    spec: MessageSpec
    message: Message
    root: LStruct
    path: str  # as printed in findings
    rel: str  # path inside the set, "/"-separated; its folder is the record namespace

    @property
    def name(self) -> str:
        return self.message.name

    @property
    def namespace(self) -> str:
        return str(PurePosixPath(self.rel).parent)

    @property
    def text(self) -> str:
        return self.spec.source.text

    def line_of(self, json_path: str) -> int:
        return self.spec.source.line_of(json_path)


@dataclass(frozen=True, slots=True)
class SpecSet:
    """One side of a comparison."""

    label: str
    specs: tuple[SpecView, ...]
    single_file: bool = False

    def by_name(self) -> dict[str, SpecView]:
        return {view.name: view for view in self.specs}


class InvalidSpecs(Exception):
    """Specs that do not load or build; carries the problems as printable lines."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        super().__init__("\n".join(problems))


# --------------------------------------------------------------------------- located tree


def _located_struct(
    message: Message,
    spec: MessageSpec,
    name: str,
    versions: VersionRange,
    ir_fields: tuple[Field, ...],
    raw_fields: tuple[FieldSpec, ...],
    json_path: str,
    line: int,
    cache: dict[str, LStruct],
) -> LStruct:
    located: list[LField] = []
    for index, (ir_field, raw) in enumerate(zip(ir_fields, raw_fields, strict=True)):
        child: LStruct | None = None
        if ir_field.struct is not None:
            child = _child_struct(message, spec, ir_field, raw, cache)
        located.append(LField(ir_field, raw.json_path, raw.line, index, child))
    return LStruct(name, versions, tuple(located), json_path, line)


def _child_struct(
    message: Message,
    spec: MessageSpec,
    ir_field: Field,
    raw: FieldSpec,
    cache: dict[str, LStruct],
) -> LStruct:
    struct = ir_field.struct
    assert struct is not None
    if raw.fields is not None:
        return _located_struct(
            message,
            spec,
            struct.name,
            struct.versions,
            struct.fields,
            raw.fields,
            raw.json_path,
            raw.line,
            cache,
        )
    if struct.name in cache:
        return cache[struct.name]
    common = next(s for s in spec.common_structs if s.name == struct.name)
    built = message.struct_named(struct.name)
    located = _located_struct(
        message,
        spec,
        built.name,
        built.versions,
        built.fields,
        common.fields,
        common.json_path,
        common.line,
        cache,
    )
    cache[struct.name] = located
    return located


def view_of(spec: MessageSpec, message: Message, path: str, rel: str) -> SpecView:
    root = _located_struct(
        message,
        spec,
        message.name,
        message.valid_versions,
        message.root.fields,
        spec.fields,
        "$",
        1,
        {},
    )
    return SpecView(spec, message, root, path, rel)


# --------------------------------------------------------------------------- loading


def _build(
    label: str, specs: list[tuple[MessageSpec, str, str]], log: ProblemLog, single_file: bool
) -> SpecSet:
    messages = build_messages([s for s, _, _ in specs], log)
    if log.problems:
        raise InvalidSpecs([str(p) for p in log.problems])
    views: list[SpecView] = []
    index = {m.name: m for m in messages}
    for spec, path, rel in specs:
        if spec.name in index:  # a spec without versions has no message, as in Kafka's generator
            views.append(view_of(spec, index[spec.name], path, rel))
    return SpecSet(label, tuple(sorted(views, key=lambda v: v.name)), single_file)


def load_set(root: Path) -> SpecSet:
    """Every spec below ``root`` (a directory or a single file)."""
    log = ProblemLog()
    if not root.exists():
        raise InvalidSpecs([f"{root}: no such file or directory"])
    specs: list[tuple[MessageSpec, str, str]] = []
    for file in find_spec_files(root):
        try:
            text = read_spec_file(file)
        except SpecSyntaxError as exc:
            log.add(file, exc.line, "$", f"invalid JSON: {exc.message}")
            continue
        except (OSError, UnicodeDecodeError) as exc:
            log.add(file, 1, "$", f"cannot read the file: {exc}")
            continue
        spec = spec_from_text(text, log)
        if spec is not None:
            rel = file.name if root.is_file() else file.relative_to(root).as_posix()
            specs.append((spec, display_path(file), rel))
    return _build(display_path(root), specs, log, single_file=root.is_file())


def _git(args: list[str], cwd: Path) -> str:
    try:
        done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=False)
    except OSError as exc:
        raise InvalidSpecs([f"cannot run git: {exc}"]) from exc
    if done.returncode != 0:
        raise InvalidSpecs([f"git {' '.join(args)}: {done.stderr.strip()}"])
    return done.stdout


def load_git_set(ref: str, root: Path, cwd: Path | None = None) -> SpecSet:
    """The specs below ``root`` (relative to ``cwd``) as they are at git ``ref``."""
    where = Path.cwd() if cwd is None else cwd
    rel_root = root.as_posix().rstrip("/") or "."
    listing = _git(["ls-tree", "-r", "--name-only", ref, "--", rel_root], where)
    files = sorted(line for line in listing.splitlines() if line.endswith(".json"))
    log = ProblemLog()
    specs: list[tuple[MessageSpec, str, str]] = []
    for name in files:
        content = _git(["show", f"{ref}:./{name}"], where)
        shown = f"{ref}:{name}"
        try:
            text = parse_spec_text(content, Path(shown))
        except SpecSyntaxError as exc:
            log.add(shown, exc.line, "$", f"invalid JSON: {exc.message}")
            continue
        spec = spec_from_text(text, log)
        if spec is not None:
            path = PurePosixPath(name)
            try:
                rel = path.relative_to(rel_root).as_posix() if rel_root != "." else name
            except ValueError:
                rel = path.name
            if files == [name] and rel in (".", ""):
                rel = path.name
            specs.append((spec, shown, rel))
    return _build(f"{ref}:{rel_root}", specs, log, single_file=False)


def set_from_texts(label: str, texts: dict[str, str]) -> SpecSet:
    """A set made from ``{relative path: spec text}``; used by tests and tools."""
    log = ProblemLog()
    specs: list[tuple[MessageSpec, str, str]] = []
    for rel, content in sorted(texts.items()):
        try:
            text = parse_spec_text(content, Path(rel))
        except SpecSyntaxError as exc:
            log.add(rel, exc.line, "$", f"invalid JSON: {exc.message}")
            continue
        spec = spec_from_text(text, log)
        if spec is not None:
            specs.append((spec, rel, rel))
    return _build(label, specs, log, single_file=False)
