"""What the lint compares: checked IR messages with the spec location of every field.

The IR drops JSON paths, so each message is walked side by side with its raw spec to give
every field and struct the ``$.json.path`` and line a finding points at. Specs come from
files, directories or a git ref; a :class:`SpecSet` is one side of a comparison.
"""

from __future__ import annotations

import subprocess
import tarfile
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from codegen.errors import ProblemLog, SpecProblem, display_path
from codegen.ir import Field, Message
from codegen.ir_build import build_messages
from codegen.lint.memory import LOCK_NAME, LockError, Memory, parse_lock
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
    # ``(namespace, name)`` of data specs beside a single compared file: its record
    # partner (``XKey`` for ``XValue``), so that the file gets the role it has in its folder.
    neighbours: frozenset[tuple[str, str]] = frozenset()
    # The lock file beside the specs (None when there is none) and where it is.
    lock: Memory | None = None
    lock_path: str = ""

    def by_name(self) -> dict[str, SpecView]:
        return {view.name: view for view in self.specs}


def problem_text(problem: SpecProblem) -> str:
    """``path:line: $.json.path: message``; problems outside any spec give less."""
    if problem.line > 0:
        return str(problem)
    return f"{problem.path}: {problem.message}" if problem.path else problem.message


class InvalidSpecs(Exception):
    """Specs that do not load or build, or cannot be read; carries every problem."""

    def __init__(self, problems: list[SpecProblem]) -> None:
        self.problems = problems
        super().__init__("\n".join(problem_text(p) for p in problems))


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


def _partner_names(name: str, read: Callable[[str], str | None]) -> frozenset[tuple[str, str]]:
    """The record partner of data spec ``name`` when ``read(file name)`` finds it beside it."""
    if name.endswith("Key"):
        stem = name[: -len("Key")] + "Value"
    elif name.endswith("Value"):
        stem = name[: -len("Value")] + "Key"
    else:
        return frozenset()
    content = read(f"{stem}.json")
    if content is None:
        return frozenset()
    try:
        value = parse_spec_text(content, Path(f"{stem}.json")).value
    except SpecSyntaxError:
        return frozenset()
    if isinstance(value, dict) and value.get("type") == "data" and value.get("name") == stem:
        return frozenset({(".", stem)})
    return frozenset()


def _read_beside(file: Path) -> Callable[[str], str | None]:
    def read(name: str) -> str | None:
        try:
            return (file.parent / name).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            return None

    return read


def _build(
    label: str,
    specs: list[tuple[MessageSpec, str, str]],
    log: ProblemLog,
    single_file: bool,
    neighbours: frozenset[tuple[str, str]] = frozenset(),
    lock: tuple[Memory | None, str] = (None, ""),
) -> SpecSet:
    messages = build_messages([s for s, _, _ in specs], log)
    if log.problems:
        raise InvalidSpecs(sorted(log.problems))
    views: list[SpecView] = []
    index = {m.name: m for m in messages}
    for spec, path, rel in specs:
        if spec.name in index:  # a spec without versions has no message, as in Kafka's generator
            views.append(view_of(spec, index[spec.name], path, rel))
    ordered = tuple(sorted(views, key=lambda v: v.name))
    return SpecSet(label, ordered, single_file, neighbours, *lock)


def _lock(
    text: str | None, shown: str, log: ProblemLog, source: str = "the lock"
) -> tuple[Memory | None, str]:
    if text is None:
        return None, shown
    try:
        return parse_lock(text, shown, source), shown
    except LockError as exc:
        log.add(shown, 1, "$", str(exc).removeprefix(f"{shown}: "))
        return None, shown


def _read_lock(folder: Path, log: ProblemLog) -> tuple[Memory | None, str]:
    path = folder / LOCK_NAME
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None, display_path(path)
    except (OSError, UnicodeDecodeError) as exc:
        log.add(display_path(path), 1, "$", f"cannot read the lock file: {exc}")
        return None, display_path(path)
    return _lock(text, display_path(path), log)


ARCHIVE_SUFFIXES = (".zip", ".jar", ".tar", ".tar.gz", ".tgz")
MAX_ARCHIVE_MEMBER = 16 * 1024 * 1024  # far above any spec; checked before reading


def is_archive(path: Path) -> bool:
    return path.is_file() and path.name.lower().endswith(ARCHIVE_SUFFIXES)


def _archive_members(archive: Path) -> list[tuple[str, bytes | None]]:
    """``(name, content)`` of the ``*.json`` members and the lock; None when too large."""
    wanted = [".json", LOCK_NAME]
    found: list[tuple[str, bytes | None]] = []
    try:
        if archive.name.lower().endswith((".zip", ".jar")):
            with zipfile.ZipFile(archive) as zipped:
                for info in zipped.infolist():
                    if info.is_dir() or not info.filename.endswith(tuple(wanted)):
                        continue
                    big = info.file_size > MAX_ARCHIVE_MEMBER
                    found.append((info.filename, None if big else zipped.read(info)))
        else:
            with tarfile.open(archive, "r:*") as tarred:
                for member in tarred.getmembers():
                    if not member.isfile() or not member.name.endswith(tuple(wanted)):
                        continue
                    handle = tarred.extractfile(member)
                    big = member.size > MAX_ARCHIVE_MEMBER or handle is None
                    found.append((member.name, None if big or handle is None else handle.read()))
    except (OSError, zipfile.BadZipFile, tarfile.TarError) as exc:
        where = display_path(archive)
        raise InvalidSpecs([SpecProblem(where, 0, "$", f"cannot read the archive: {exc}")]) from exc
    return sorted(found, key=lambda item: item[0])


def load_archive(archive: Path) -> SpecSet:
    """Every spec in a zip, jar or tar archive (Kafka ships its specs in its jars)."""
    log = ProblemLog()
    label = display_path(archive)
    specs: list[tuple[MessageSpec, str, str]] = []
    lock: tuple[Memory | None, str] = (None, f"{label}!/{LOCK_NAME}")
    for name, content in _archive_members(archive):
        shown = f"{label}!/{name}"
        if content is None:
            log.add(shown, 1, "$", f"larger than {MAX_ARCHIVE_MEMBER} bytes; no spec is")
            continue
        try:
            text = content.decode("utf-8")
        except UnicodeDecodeError as exc:
            log.add(shown, 1, "$", f"cannot read the file: {exc}")
            continue
        if name == LOCK_NAME:
            lock = _lock(text, shown, log)
            continue
        try:
            parsed = parse_spec_text(text, Path(shown))
        except SpecSyntaxError as exc:
            log.add(shown, exc.line, exc.json_path, exc.problem)
            continue
        spec = spec_from_text(parsed, log)
        if spec is not None:
            specs.append((spec, shown, name))
    return _build(label, specs, log, False, frozenset(), lock)


def load_set(root: Path) -> SpecSet:
    """Every spec below ``root`` (a directory, a single file or an archive)."""
    log = ProblemLog()
    if not root.exists():
        raise InvalidSpecs([SpecProblem(str(root), 0, "$", "no such file or directory")])
    if is_archive(root):
        return load_archive(root)
    specs: list[tuple[MessageSpec, str, str]] = []
    for file in find_spec_files(root):
        try:
            text = read_spec_file(file)
        except SpecSyntaxError as exc:
            log.add(file, exc.line, exc.json_path, exc.problem)
            continue
        except (OSError, UnicodeDecodeError) as exc:
            log.add(file, 1, "$", f"cannot read the file: {exc}")
            continue
        spec = spec_from_text(text, log)
        if spec is not None:
            rel = file.name if root.is_file() else file.relative_to(root).as_posix()
            specs.append((spec, display_path(file), rel))
    neighbours: frozenset[tuple[str, str]] = frozenset()
    if root.is_file() and len(specs) == 1:
        neighbours = _partner_names(specs[0][0].name, _read_beside(root))
    lock = _read_lock(root.parent if root.is_file() else root, log)
    return _build(display_path(root), specs, log, root.is_file(), neighbours, lock)


def _git_bytes(args: list[str], cwd: Path) -> bytes:
    try:
        done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, check=False)
    except OSError as exc:
        raise InvalidSpecs([SpecProblem("", 0, "$", f"cannot run git: {exc}")]) from exc
    if done.returncode != 0:
        stderr = done.stderr.decode(errors="replace").strip()
        raise InvalidSpecs([SpecProblem("", 0, "$", f"git {' '.join(args)}: {stderr}")])
    return done.stdout


def _git(args: list[str], cwd: Path) -> str:
    return _git_bytes(args, cwd).decode(errors="surrogateescape")


def load_git_set(ref: str, root: Path, cwd: Path | None = None) -> SpecSet:
    """The specs below ``root`` (relative to ``cwd``) as they are at git ``ref``."""
    where = Path.cwd() if cwd is None else cwd
    rel_root = PurePosixPath(root.as_posix()).as_posix()  # "./a/" -> "a"
    # -z: names as they are (without it git quotes names with non-ASCII characters).
    listing = _git(["ls-tree", "-r", "-z", "--name-only", ref, "--", rel_root], where)
    files = sorted(name for name in listing.split("\0") if name.endswith(".json"))
    log = ProblemLog()
    specs: list[tuple[MessageSpec, str, str]] = []
    for name in files:
        shown = f"{ref}:{name}"
        try:
            content = _git_bytes(["show", f"{ref}:./{name}"], where).decode("utf-8")
            text = parse_spec_text(content, Path(shown))
        except UnicodeDecodeError as exc:
            log.add(shown, 1, "$", f"cannot read the file: {exc}")
            continue
        except SpecSyntaxError as exc:
            log.add(shown, exc.line, exc.json_path, exc.problem)
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
    single = files == [rel_root]
    neighbours: frozenset[tuple[str, str]] = frozenset()
    if single and len(specs) == 1:
        folder = PurePosixPath(rel_root).parent

        def read(name: str) -> str | None:
            try:
                return _git(["show", f"{ref}:./{(folder / name).as_posix()}"], where)
            except InvalidSpecs:
                return None

        neighbours = _partner_names(specs[0][0].name, read)
    lock_folder = PurePosixPath(rel_root)
    if single or rel_root.endswith(".json"):
        lock_folder = lock_folder.parent
    lock_at = (lock_folder / LOCK_NAME).as_posix()
    lock_text: str | None = None
    if _git(["ls-tree", "--name-only", ref, "--", lock_at], where).strip():
        lock_text = _git_bytes(["show", f"{ref}:./{lock_at}"], where).decode(
            "utf-8", errors="replace"
        )
    lock = _lock(lock_text, f"{ref}:{lock_at}", log, f"the lock at {ref}")
    return _build(f"{ref}:{rel_root}", specs, log, single, neighbours, lock)


def git_location(path: Path) -> tuple[Path, str]:
    """The repository holding ``path`` and ``path`` inside it (``/``-separated).

    ``path`` need not exist in the working tree (a folder only at a ref): git runs in the
    nearest folder that does.
    """
    absolute = path.absolute()
    probe = absolute
    while not probe.is_dir() and probe != probe.parent:
        probe = probe.parent
    top = Path(_git(["rev-parse", "--show-toplevel"], probe).strip())
    try:
        inside = absolute.resolve().relative_to(top.resolve()).as_posix()
    except ValueError:
        inside = absolute.relative_to(top).as_posix()
    return top, inside if inside else "."


def set_from_texts(label: str, texts: dict[str, str]) -> SpecSet:
    """A set made from ``{relative path: spec text}``; used by tests and tools."""
    log = ProblemLog()
    specs: list[tuple[MessageSpec, str, str]] = []
    for rel, content in sorted(texts.items()):
        try:
            text = parse_spec_text(content, Path(rel))
        except SpecSyntaxError as exc:
            log.add(rel, exc.line, exc.json_path, exc.problem)
            continue
        spec = spec_from_text(text, log)
        if spec is not None:
            specs.append((spec, rel, rel))
    return _build(label, specs, log, single_file=False)
