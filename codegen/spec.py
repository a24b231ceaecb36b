"""Stage 1: spec files to a typed raw model, checked against the shipped JSON Schema.

Only structure is checked here (types of values, unknown keys, required keys). The
meaning of the values (version rules, tags, defaults, ...) is checked when the IR is
built, in :mod:`codegen.ir_build`. Values keep Kafka's coercions: scalar defaults become
strings, a JSON-null default means "no default", a single listener becomes a list.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from codegen.extras import missing_extra

try:
    import jsonschema
except ModuleNotFoundError as exc:  # a runtime-only install: name the extra to add
    raise missing_extra("reading specs", "generator", exc) from None

from codegen.errors import NoSpecsError, ProblemLog, display_path
from codegen.specfile import SpecSyntaxError, SpecText, parse_spec_text


@dataclass(frozen=True, slots=True)
class FieldSpec:
    name: str
    type: str
    versions: str | None
    fields: tuple[FieldSpec, ...] | None
    nullable_versions: str | None
    default: str | None
    ignorable: bool
    entity_type: str | None
    about: str
    tagged_versions: str | None
    tag: int | None
    map_key: bool
    flexible_versions: str | None
    zero_copy: bool
    json_path: str
    line: int


@dataclass(frozen=True, slots=True)
class StructSpec:
    name: str
    versions: str
    fields: tuple[FieldSpec, ...]
    json_path: str
    line: int


@dataclass(frozen=True, slots=True)
class MessageSpec:
    name: str
    type: str
    api_key: int | None
    valid_versions: str
    flexible_versions: str | None
    deprecated_versions: str | None
    latest_version_unstable: bool
    listeners: tuple[str, ...]
    common_structs: tuple[StructSpec, ...]
    fields: tuple[FieldSpec, ...]
    has_fields: bool
    source: SpecText
    # JSON paths whose problems the schema already reported: set on a spec built despite
    # schema problems (``lenient=True``) so its semantic problems can be reported with them;
    # such a spec is checked, never generated.
    reported: tuple[str, ...] = ()

    @property
    def path(self) -> Path:
        return self.source.path


@cache
def message_spec_schema() -> dict[str, Any]:
    text = resources.files("codegen").joinpath("schema/message_spec.schema.json").read_text()
    schema: dict[str, Any] = json.loads(text)
    return schema


def _versions(value: object) -> str | None:
    return None if value is None else str(value)


def _flag(value: object) -> bool:
    # Jackson coerces the strings "true"/"false" into booleans.
    return value is True or value == "true"


def _tag(value: object) -> int | None:
    return None if value is None else int(str(value))


def _default(value: object) -> str | None:
    # Kafka reads defaults into a Java String: numbers and booleans are coerced,
    # a JSON null means no default at all (unlike the string "null").
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _field(raw: dict[str, Any], path: str, text: SpecText) -> FieldSpec:
    children = raw.get("fields")
    return FieldSpec(
        name=raw["name"],
        type=raw["type"],
        versions=_versions(raw.get("versions")),
        fields=None
        if children is None
        else tuple(_field(c, f"{path}.fields[{i}]", text) for i, c in enumerate(children)),
        nullable_versions=_versions(raw.get("nullableVersions")),
        default=_default(raw.get("default")),
        ignorable=_flag(raw.get("ignorable")),
        entity_type=raw.get("entityType"),
        about=raw.get("about", ""),
        tagged_versions=_versions(raw.get("taggedVersions")),
        tag=_tag(raw.get("tag")),
        map_key=_flag(raw.get("mapKey")),
        flexible_versions=_versions(raw.get("flexibleVersions")),
        zero_copy=_flag(raw.get("zeroCopy")),
        json_path=path,
        line=text.line_of(path),
    )


def _struct(raw: dict[str, Any], path: str, text: SpecText) -> StructSpec:
    return StructSpec(
        name=raw["name"],
        versions=str(raw["versions"]),
        fields=tuple(_field(c, f"{path}.fields[{i}]", text) for i, c in enumerate(raw["fields"])),
        json_path=path,
        line=text.line_of(path),
    )


def _json_path(error: jsonschema.ValidationError) -> str:
    path = "$"
    for part in error.absolute_path:
        path += f"[{part}]" if isinstance(part, int) else f".{part}"
    return path


def _schema_message(error: jsonschema.ValidationError) -> str:
    if error.validator == "additionalProperties":
        return f"unknown key: {error.message.split('(')[-1].rstrip(')')}"
    schema = error.schema if isinstance(error.schema, dict) else {}
    if error.validator == "pattern" and schema.get("description"):
        return f"{error.instance!r} is not {schema['description']}"
    return str(error.message)


def spec_from_text(text: SpecText, log: ProblemLog, lenient: bool = False) -> MessageSpec | None:
    """Check ``text`` against the schema; on success return the raw model.

    With ``lenient``, a spec with schema problems is still returned where it can be read (its
    ``reported`` paths set), so the semantic rules can report their problems in the same run.
    """
    validator = jsonschema.Draft202012Validator(message_spec_schema())
    errors = sorted(validator.iter_errors(text.value), key=lambda e: list(e.absolute_path))
    for error in errors:
        where = _json_path(error)
        log.add(text.path, text.line_of(where), where, _schema_message(error))
    if not errors:
        return _message_spec(text, text.value, ())
    if not lenient:
        return None
    readable = _without_invalid_values(text.value, errors)
    if readable is None:
        return None
    value, reported = readable
    try:
        return _message_spec(text, value, reported)
    except (KeyError, TypeError, ValueError, AttributeError):  # a required key is unreadable
        return None


# Schema problems whose value the model reads as it is (a string of the wrong form, an unknown
# key it ignores); any other bad value is left out of the model.
_KEPT = frozenset({"pattern", "additionalProperties"})


def _without_invalid_values(
    value: Any, errors: list[jsonschema.ValidationError]
) -> tuple[Any, tuple[str, ...]] | None:
    """``value`` without the values the schema rejected, and the JSON paths whose problems are
    already reported: each rejected value's path, and for a value left out also its object
    (its other problems may follow from the missing value). None when an array element would
    have to go (every later index would change) or the document itself is wrong."""
    readable = copy.deepcopy(value)
    reported: list[str] = []
    for error in errors:
        where = _json_path(error)
        reported.append(where)
        parts = list(error.absolute_path)
        if error.validator in _KEPT:
            continue
        if not parts or isinstance(parts[-1], int):
            return None
        parent: Any = readable
        try:
            for part in parts[:-1]:
                parent = parent[part]
        except (KeyError, IndexError, TypeError):  # inside a value already left out
            continue
        if not isinstance(parent, dict):
            return None
        parent.pop(parts[-1], None)
        reported.append(where[: -len(f".{parts[-1]}")])
    return readable, tuple(reported)


def _message_spec(text: SpecText, raw: dict[str, Any], reported: tuple[str, ...]) -> MessageSpec:
    listeners = raw.get("listeners", [])
    return MessageSpec(
        name=raw["name"],
        type=raw["type"],
        api_key=raw.get("apiKey"),
        valid_versions=str(raw["validVersions"]),
        flexible_versions=_versions(raw.get("flexibleVersions")),
        deprecated_versions=_versions(raw.get("deprecatedVersions")),
        latest_version_unstable=_flag(raw.get("latestVersionUnstable")),
        listeners=(listeners,) if isinstance(listeners, str) else tuple(listeners),
        common_structs=tuple(
            _struct(s, f"$.commonStructs[{i}]", text)
            for i, s in enumerate(raw.get("commonStructs", []))
        ),
        fields=tuple(
            _field(f, f"$.fields[{i}]", text) for i, f in enumerate(raw.get("fields", []))
        ),
        has_fields="fields" in raw,
        source=text,
        reported=reported,
    )


def spec_from_source(
    content: str, path: Path, log: ProblemLog, lenient: bool = False
) -> MessageSpec | None:
    """Parse and check the text of one spec; every problem goes to ``log``."""
    try:
        text = parse_spec_text(content, path)
    except SpecSyntaxError as exc:
        log.add(path, exc.line, exc.json_path, exc.problem)
        return None
    return spec_from_text(text, log, lenient)


def load_spec(path: Path, log: ProblemLog) -> MessageSpec | None:
    """One spec file; a spec with schema problems comes back ``reported`` where it can be
    read (see :func:`spec_from_text`), for the semantic rules to check too."""
    try:
        content = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        log.add(path, 1, "$", f"cannot read the file: {exc}")
        return None
    return spec_from_source(content, path, log, lenient=True)


def find_spec_files(root: Path) -> list[Path]:
    """Every ``*.json`` spec below ``root`` (or ``root`` itself), sorted for determinism."""
    if root.is_file():
        return [root]
    return sorted(p for p in root.rglob("*.json") if p.is_file())


def spec_files(roots: list[Path]) -> list[list[Path]]:
    """The spec files of each root; raise NoSpecsError for a root that has none."""
    found: list[list[Path]] = []
    for root in roots:
        if not root.exists():
            raise NoSpecsError(
                f"{display_path(root)}: no such file or folder; expected a spec file or a "
                "folder of Kafka JSON message specs (*.json)"
            )
        files = find_spec_files(root)
        if not files:
            raise NoSpecsError(
                f"{display_path(root)}: no spec files (*.json) in this folder; expected "
                "Kafka JSON message specs"
            )
        found.append(files)
    return found


def load_specs(roots: list[Path], log: ProblemLog) -> list[MessageSpec]:
    """Every spec below ``roots``; problems go to ``log``, a root without specs raises."""
    specs: list[MessageSpec] = []
    for files in spec_files(roots):
        for path in files:
            spec = load_spec(path, log)
            if spec is not None:
                specs.append(spec)
    return specs
