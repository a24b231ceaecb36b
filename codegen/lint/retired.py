"""The new specs against the memory of what specs have ever used (:mod:`codegen.lint.memory`).

Things the old specs still have are judged by the comparison of old and new
(:mod:`codegen.lint.sets`); here only *retired* things are checked: a tag, field name,
apiKey or record type id that the memory holds but the old specs no longer have. Coming back
with the same meaning is fine (the same tag, field name and type; the same spec name for an
apiKey or a record key); with another meaning it is a reuse, and breaking.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from codegen.lint.findings import Finding
from codegen.lint.memory import (
    ApiKeyUse,
    FieldUse,
    LayoutUse,
    Memory,
    RecordTypeUse,
    TagUse,
    Use,
    memory_of,
    type_meaning,
)
from codegen.lint.model import LStruct, SpecSet, SpecView
from codegen.lint.records import record_types

RECORD_SPEC_TYPES = frozenset({"coordinator-key", "coordinator-value"})


def set_memory(specs: SpecSet, source: str) -> Memory:
    """What one spec set uses."""
    records = [
        RecordTypeUse(ns, type_id, record.key.name)
        for (ns, type_id), record in record_types(specs).items()
    ]
    return memory_of((v.message for v in specs.specs), records, source)


def _structs(root: LStruct) -> Iterator[LStruct]:
    seen: set[str] = set()
    stack = [root]
    while stack:
        struct = stack.pop(0)
        if struct.name in seen:
            continue
        seen.add(struct.name)
        yield struct
        stack.extend(f.struct for f in struct.fields if f.struct is not None)


def _finding(rule_id: str, view: SpecView, message: str, json_path: str, line: int) -> Finding:
    return Finding(rule_id, message, view.path, line, json_path, view.name, rel=view.rel)


def _struct_path(spec: str, struct: str) -> str:
    return spec if struct == spec else f"{spec}.{struct}"


def _describe(use: Use) -> str:
    if isinstance(use, TagUse):
        return f"tag {use.tag} of {_struct_path(use.spec, use.struct)} ({use.field} {use.type})"
    if isinstance(use, FieldUse):
        return f"field {_struct_path(use.spec, use.struct)}.{use.field} ({use.type})"
    if isinstance(use, ApiKeyUse):
        return f"apiKey {use.api_key} of {use.spec_type} {use.spec}"
    if isinstance(use, LayoutUse):
        return f"the layout of {use.spec} version {use.version}"
    where = "" if use.namespace == "." else f" of {use.namespace}"
    return f"record type {use.type_id}{where} ({use.key})"


class _Index:
    """The memory's tags and field names by ``(spec, struct)``, looked up once per struct."""

    def __init__(self, memory: Memory) -> None:
        self.memory = memory
        self.tags: dict[tuple[str, str], list[TagUse]] = {}
        self.fields: dict[tuple[str, str], list[FieldUse]] = {}
        for use in memory.of_type(TagUse):
            self.tags.setdefault((use.spec, use.struct), []).append(use)
        for field_use in memory.of_type(FieldUse):
            self.fields.setdefault((field_use.spec, field_use.struct), []).append(field_use)


def _check_tags(
    view: SpecView, struct: LStruct, old_tags: set[tuple[str, int]], index: _Index
) -> list[Finding]:
    memory = index.memory
    remembered = index.tags.get((view.name, struct.name), [])
    tagged = [f for f in struct.fields if f.ir.tag is not None]
    used = {u.tag for u in remembered} | {f.ir.tag for f in tagged if f.ir.tag is not None}
    next_free = max(used, default=-1) + 1
    findings: list[Finding] = []
    for f in tagged:
        tag = f.ir.tag
        assert tag is not None
        if (struct.name, tag) in old_tags:
            continue
        meaning = type_meaning(f.ir.type.spec_text)
        for use in remembered:
            if use.tag != tag or (use.field, type_meaning(use.type)) == (f.name, meaning):
                continue
            findings.append(
                _finding(
                    "tag-reused",
                    view,
                    f"tag {tag} belonged to field {use.field} ({use.type}) in "
                    f"{memory.uses[use]} and now belongs to {f.name} ({f.ir.type.spec_text}); "
                    "the old specs no longer have it, but writers of that release still "
                    f"write it with the old meaning: never reuse a tag; put {use.field} back "
                    f"(writers need not set it) and give {f.name} tag {next_free}",
                    f"{f.json_path}.tag",
                    f.line,
                )
            )
            break
    return findings


def _check_field_names(
    view: SpecView, struct: LStruct, old_fields: set[tuple[str, str]], index: _Index
) -> list[Finding]:
    memory = index.memory
    remembered: dict[str, list[FieldUse]] = {}
    for use in index.fields.get((view.name, struct.name), []):
        remembered.setdefault(use.field, []).append(use)
    findings: list[Finding] = []
    for f in struct.fields:
        if (struct.name, f.name) in old_fields:
            continue
        meaning = type_meaning(f.ir.type.spec_text)
        other = next(
            (u for u in remembered.get(f.name, []) if type_meaning(u.type) != meaning), None
        )
        if other is None:
            continue
        findings.append(
            _finding(
                "field-name-reused",
                view,
                f"field {f.name} ({f.ir.type.spec_text}) takes the name of a retired field "
                f"{other.field} ({other.type}) of {struct.name} in {memory.uses[other]}; JSON "
                "readers and code written for the old field would take the new one for it: "
                f"give the new field another name, or bring {other.field} back as "
                f"{other.type}",
                f"{f.json_path}.name",
                f.line,
            )
        )
    return findings


def _field_sets(view: SpecView | None) -> tuple[set[tuple[str, int]], set[tuple[str, str]]]:
    if view is None:
        return set(), set()
    tags: set[tuple[str, int]] = set()
    names: set[tuple[str, str]] = set()
    for struct in _structs(view.root):
        for f in struct.fields:
            names.add((struct.name, f.name))
            if f.ir.tag is not None:
                tags.add((struct.name, f.ir.tag))
    return tags, names


def _check_api_keys(old: SpecSet, new: SpecSet, memory: Memory) -> list[Finding]:
    old_keys = {(v.message.spec_type, v.message.api_key) for v in old.specs}
    findings: list[Finding] = []
    for view in new.specs:
        spec_type, api_key = view.message.spec_type, view.message.api_key
        if api_key is None or spec_type in RECORD_SPEC_TYPES or (spec_type, api_key) in old_keys:
            continue
        for use in memory.of_type(ApiKeyUse):
            if (use.spec_type, use.api_key) != (spec_type, api_key) or use.spec == view.name:
                continue
            findings.append(
                _finding(
                    "api-key-reused",
                    view,
                    f"apiKey {api_key} was {spec_type} {use.spec} in {memory.uses[use]} and now "
                    f"is {view.name}; old clients and brokers still send and expect "
                    f"{use.spec} under it: never reuse an apiKey, take an unused one",
                    "$.apiKey",
                    view.line_of("$.apiKey"),
                )
            )
            break
    return findings


def _check_record_types(old: SpecSet, new: SpecSet, memory: Memory) -> list[Finding]:
    new_folder = {v.name: v.namespace for v in new.specs}
    old_ids = {
        (new_folder.get(record.key.name, ns), type_id)
        for (ns, type_id), record in record_types(old).items()
    }
    findings: list[Finding] = []
    for (ns, type_id), record in sorted(record_types(new).items()):
        if (ns, type_id) in old_ids:
            continue
        for use in memory.of_type(RecordTypeUse):
            # a remembered key that the new specs still have counts in its folder there
            at = (new_folder.get(use.key, use.namespace), use.type_id)
            if at != (ns, type_id) or use.key == record.key.name:
                continue
            where = (
                "$.apiKey"
                if record.key.message.spec_type == "coordinator-key"
                else ("$.validVersions")
            )
            findings.append(
                _finding(
                    "record-type-reused",
                    record.key,
                    f"{record.label} was the type of {use.key} records in {memory.uses[use]}; "
                    "stored records of that type (compacted topics keep them) would be read "
                    f"as {record.key.name}: never reuse a record type id, take an unused one",
                    where,
                    record.key.line_of(where),
                )
            )
            break
    return findings


def retired_findings(old: SpecSet, new: SpecSet, memory: Memory) -> list[Finding]:
    """Every reuse, in ``new``, of something ``memory`` holds and ``old`` no longer has."""
    findings: list[Finding] = []
    old_by = old.by_name()
    index = _Index(memory)
    for view in new.specs:
        old_tags, old_fields = _field_sets(old_by.get(view.name))
        for struct in _structs(view.root):
            findings.extend(_check_tags(view, struct, old_tags, index))
            findings.extend(_check_field_names(view, struct, old_fields, index))
    findings.extend(_check_api_keys(old, new, memory))
    findings.extend(_check_record_types(old, new, memory))
    return findings


def _example(uses: Sequence[Use]) -> str:
    shown = ", ".join(_describe(u) for u in uses[:3])
    more = f" and {len(uses) - 3} more" if len(uses) > 3 else ""
    return f"{shown}{more}"


def lock_findings(old: SpecSet, new: SpecSet) -> list[Finding]:
    """``lock-outdated``: the new lock misses what the new specs or the old lock hold."""
    if new.lock is None:
        return []
    findings: list[Finding] = []
    # Layouts need not be up to date: the lock keeps those of the versions it was written
    # with, for versions brought back later; a lock only grows, so none may be lost.
    missing = [
        u for u in set_memory(new, new.label).missing_from(new.lock) if not isinstance(u, LayoutUse)
    ]
    lost = [] if old.lock is None else old.lock.missing_from(new.lock)
    command = "kafka-specgen lint --write-lock PATH"
    if missing:
        findings.append(
            Finding(
                "lock-outdated",
                f"the lock does not hold {len(missing)} uses of the specs ({_example(missing)}); "
                f"run `{command}` for this spec folder and commit the lock with the specs",
                new.lock_path,
                1,
                "$",
                "",
                rel=new.lock_path.rsplit("/", 1)[-1],
            )
        )
    if lost:
        findings.append(
            Finding(
                "lock-outdated",
                f"the lock lost {len(lost)} uses that the old lock holds ({_example(lost)}); "
                f"a lock only grows: put them back (`{command}` merges the git history back "
                "in)",
                new.lock_path,
                1,
                "$",
                "",
                rel=new.lock_path.rsplit("/", 1)[-1],
            )
        )
    return findings
