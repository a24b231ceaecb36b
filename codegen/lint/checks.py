"""The checks: one old spec against its new counterpart, then the record types.

"Existing versions" are the versions both specs have: the bytes of such a version are
written by old code and read by new code (and the other way round), so their layout must
not change. New versions may change freely, except coordinator values, which KIP-915
readers parse at their own highest version.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from codegen.ir import Field, FieldType
from codegen.lint.findings import Finding
from codegen.lint.layout import mandatory_names, message_layout, same_fields
from codegen.lint.model import LField, LStruct, SpecSet, SpecView
from codegen.lint.pairing import Domain, FieldPair, PairedBy, effective_range, pair_fields
from codegen.lint.records import (
    RecordType,
    Role,
    follow_moves,
    key_layout_changed,
    record_types,
    roles,
)
from codegen.versions import VersionRange

_RECORD_TYPES = frozenset({"data", "coordinator-key", "coordinator-value"})


def versions_text(versions: list[int]) -> str:
    """``[0, 1, 2, 5]`` -> ``0-2, 5``."""
    parts: list[str] = []
    for v in sorted(versions):
        if parts and parts[-1].split("-")[-1] == str(v - 1):
            parts[-1] = f"{parts[-1].split('-')[0]}-{v}"
        else:
            parts.append(str(v))
    return ", ".join(parts)


def _members(r: VersionRange) -> set[int]:
    return set(r.versions())


@dataclass(slots=True)
class PairContext:
    old: SpecView
    new: SpecView
    role: Role
    cross_model: bool
    findings: list[Finding] = field(default_factory=list)

    @property
    def shared(self) -> VersionRange:
        return self.old.message.valid_versions.intersect(self.new.message.valid_versions)

    def add(self, rule_id: str, message: str, json_path: str, line: int | None = None) -> None:
        where = self.new.line_of(json_path) if line is None else line
        self.findings.append(
            Finding(
                rule_id, message, self.new.path, where, json_path, self.new.name, rel=self.new.rel
            )
        )


# --------------------------------------------------------------------------- message level


def _check_identity(ctx: PairContext) -> None:
    old, new = ctx.old.message, ctx.new.message
    if old.spec_type != new.spec_type:
        if ctx.cross_model:
            ctx.add(
                "coordinator-model-changed",
                f"{new.name} moved from type {old.spec_type} to {new.spec_type}; the wire "
                "layout is compared record type by record type",
                "$.type",
            )
        else:
            ctx.add(
                "spec-type-changed",
                f"type changed from {old.spec_type} to {new.spec_type}; keep "
                f"{old.spec_type} and add a new spec for the new kind of message",
                "$.type",
            )
    elif old.api_key != new.api_key:
        what = "record type id" if ctx.role is not Role.NONE else "apiKey"
        ctx.add(
            "api-key-changed",
            f"apiKey changed from {_api_key_text(old.api_key)} to {_api_key_text(new.api_key)}; "
            f"the {what} is on the wire, keep {_api_key_text(old.api_key)}",
            "$.apiKey",
        )


def _api_key_text(api_key: int | None) -> str:
    return "no apiKey" if api_key is None else str(api_key)


def _check_valid_versions(ctx: PairContext) -> None:
    old, new = ctx.old.message.valid_versions, ctx.new.message.valid_versions
    where = "$.validVersions"
    if new.highest < old.highest:
        ctx.add(
            "highest-version-lowered",
            f"the highest version was lowered from {old.highest} to {new.highest} "
            f"(validVersions {old} -> {new}); writers may already use version "
            f"{old.highest}, keep it",
            where,
        )
    if new.lowest < old.lowest:
        ctx.add(
            "lowest-version-lowered",
            f"the lowest version was lowered from {old.lowest} to {new.lowest} "
            f"(validVersions {old} -> {new}); retired version numbers may have had another "
            "layout, do not bring them back",
            where,
        )
    if new.lowest > old.lowest:
        gone = VersionRange(old.lowest, min(new.lowest - 1, old.highest))
        ctx.add(
            "versions-removed",
            f"versions {gone} were removed (validVersions {old} -> {new}); old writers and "
            "stored data may use them: keep them until nothing does",
            where,
        )


def _check_flexible(ctx: PairContext) -> None:
    old, new = ctx.old.message.flexible_versions, ctx.new.message.flexible_versions
    if ctx.role is Role.KEY:
        if old.empty and not new.empty:
            ctx.add(
                "coordinator-key-flexible",
                f"the record key {ctx.new.name} became flexible (flexibleVersions none -> "
                f"{new}); key bytes identify the record for compaction, keep none",
                "$.flexibleVersions",
            )
        return
    changed = [v for v in ctx.shared.versions() if (v in old) != (v in new)]
    if changed:
        ctx.add(
            "flexible-versions-changed",
            f"flexibleVersions changed from {old} to {new}, so existing versions "
            f"{versions_text(changed)} change their wire format; keep {old} for existing "
            "versions",
            "$.flexibleVersions",
        )


def _check_coordinator_value(ctx: PairContext) -> None:
    old, new = ctx.old, ctx.new
    highest = old.message.valid_versions.highest
    added = [v for v in new.message.valid_versions.versions() if v > highest]
    if not added:
        return
    old_flexible = highest in old.message.flexible_versions
    if not old_flexible and any(v in new.message.flexible_versions for v in added):
        first = min(v for v in added if v in new.message.flexible_versions)
        ctx.add(
            "coordinator-value-made-flexible",
            f"version {first} of {new.name} is its first flexible version; readers older "
            f"than KIP-915 (Kafka 3.5) cannot read it, so keep writing version {highest} "
            "until a tagged field is needed and a downgrade below this release is ruled out",
            "$.flexibleVersions",
        )
    old_names = mandatory_names(old, highest)
    old_layout = message_layout(old, highest)
    for version in added:
        layout = message_layout(new, version)
        if same_fields(layout, old_layout) and (old_flexible or not layout.tagged):
            continue
        names = mandatory_names(new, version)
        change = _name_change(old_names, names)
        if not old_flexible:
            ctx.add(
                "coordinator-value-not-flexible",
                f"version {version} of {new.name} changes its fields{change}, but version "
                f"{highest} is not flexible; first release a flexible version with the same "
                "fields, then add tagged fields",
                "$.validVersions",
            )
        else:
            ctx.add(
                "coordinator-value-untagged-change",
                f"version {version} of {new.name} changes the non-tagged fields of version "
                f"{highest}{change}; KIP-915 readers parse newer versions as version "
                f"{highest} and would misread it: add tagged fields instead",
                "$.validVersions",
            )
        return


def _name_change(old_names: list[str], new_names: list[str]) -> str:
    added = [n for n in new_names if n not in old_names]
    removed = [n for n in old_names if n not in new_names]
    parts = []
    if added:
        parts.append("adds " + ", ".join(added))
    if removed:
        parts.append("removes " + ", ".join(removed))
    return f" ({'; '.join(parts)})" if parts else ""


# --------------------------------------------------------------------------- fields


def _type_changed(old: FieldType, new: FieldType) -> bool:
    if old.kind != new.kind:
        return True
    if old.element is not None and new.element is not None:
        return _type_changed(old.element, new.element)
    return False


def _struct_name(t: FieldType) -> str | None:
    return t.element.struct_name if t.element is not None else t.struct_name


def _check_removed(
    ctx: PairContext,
    old_f: LField,
    new_struct: LStruct,
    old_scope: VersionRange,
    shared: VersionRange,
) -> None:
    where = new_struct.fields_json_path()
    line = ctx.new.line_of(where) if new_struct.json_path == "$" else new_struct.line
    mandatory = effective_range(old_f.ir.mandatory_versions, old_scope).intersect(shared)
    if not mandatory.empty:
        if ctx.role is Role.KEY:
            ctx.add(
                "coordinator-key-changed",
                f"field {old_f.name} was removed from the record key {ctx.new.name}; the key "
                "bytes change, so old and new records no longer compact together: add a new "
                "record type instead",
                where,
                line,
            )
        else:
            ctx.add(
                "field-removed-from-existing-version",
                f"field {old_f.name} ({old_f.ir.type.spec_text}, versions "
                f"{old_f.ir.versions}) was removed, but versions {mandatory} still exist; "
                f"keep it and end its versions before a new version instead",
                where,
                line,
            )
    tagged = effective_range(old_f.ir.tagged_versions, old_scope)
    if not tagged.empty:
        ctx.add(
            "tagged-field-removed",
            f"tagged field {old_f.name} (tag {old_f.ir.tag}) was removed; old writers still "
            f"write tag {old_f.ir.tag}, so never use it again: keep the field and stop setting "
            "it (tags stay contiguous; the lock and the git history remember the tag)",
            where,
            line,
        )


def _check_added(
    ctx: PairContext, new_f: LField, new_scope: VersionRange, shared: VersionRange
) -> None:
    mandatory = effective_range(new_f.ir.mandatory_versions, new_scope).intersect(shared)
    if mandatory.empty:
        return
    if ctx.role is Role.KEY:
        ctx.add(
            "coordinator-key-changed",
            f"field {new_f.name} was added to the record key {ctx.new.name}; the key bytes "
            "change, so old and new records no longer compact together: add a new record "
            "type instead",
            new_f.json_path,
            new_f.line,
        )
    else:
        ctx.add(
            "field-added-to-existing-version",
            f"non-tagged field {new_f.name} was added to existing versions {mandatory}; "
            "add it in a new version, or as a tagged field in a flexible version",
            new_f.json_path,
            new_f.line,
        )


def _check_rename(ctx: PairContext, pair: FieldPair) -> None:
    old_f, new_f = pair.old, pair.new
    assert old_f is not None and new_f is not None
    how = f"tag {new_f.ir.tag}" if pair.paired_by is PairedBy.TAG else f"position {new_f.index}"
    ctx.add(
        "field-renamed",
        f"field {old_f.name} was renamed to {new_f.name} (paired by {how}); the wire "
        f"format is the same, but the JSON key changes from {old_f.ir.json_key} to "
        f"{new_f.ir.json_key} and the attribute from {old_f.ir.attr} to {new_f.ir.attr}: "
        f"keep the name {old_f.name}",
        f"{new_f.json_path}.name",
        new_f.line,
    )


def _check_field_versions(
    ctx: PairContext,
    old_f: LField,
    new_f: LField,
    scopes: tuple[VersionRange, VersionRange, VersionRange],
) -> None:
    old_scope, new_scope, shared = scopes
    old_m = _members(effective_range(old_f.ir.mandatory_versions, old_scope).intersect(shared))
    new_m = _members(effective_range(new_f.ir.mandatory_versions, new_scope).intersect(shared))
    old_t = _members(effective_range(old_f.ir.tagged_versions, old_scope).intersect(shared))
    new_t = _members(effective_range(new_f.ir.tagged_versions, new_scope).intersect(shared))
    if old_m == new_m:
        return
    switched = (old_m & new_t) | (new_m & old_t)
    if switched:
        ctx.add(
            "field-tagging-changed",
            f"field {new_f.name} changed between tagged and non-tagged in existing versions "
            f"{versions_text(list(switched))}; make it tagged only from a new version on",
            f"{new_f.json_path}.taggedVersions"
            if new_f.ir.is_tagged
            else f"{new_f.json_path}.versions",
            new_f.line,
        )
    elif ctx.role is Role.KEY:
        ctx.add(
            "coordinator-key-changed",
            f"field {new_f.name} of the record key {ctx.new.name} changed versions from "
            f"{old_f.ir.versions} to {new_f.ir.versions}; key bytes change: add a new record "
            "type instead",
            f"{new_f.json_path}.versions",
            new_f.line,
        )
    else:
        ctx.add(
            "field-versions-changed",
            f"field {new_f.name} versions changed from {old_f.ir.versions} to "
            f"{new_f.ir.versions}, which changes existing versions "
            f"{versions_text(list(old_m ^ new_m))}; only extend a field into new versions "
            "or end it before a new version",
            f"{new_f.json_path}.versions",
            new_f.line,
        )


def _check_nullability(ctx: PairContext, old_f: LField, new_f: LField, both: VersionRange) -> None:
    old_n = _members(old_f.ir.nullable_versions.intersect(both))
    new_n = _members(new_f.ir.nullable_versions.intersect(both))
    where = f"{new_f.json_path}.nullableVersions"
    if old_n - new_n:
        ctx.add(
            "nullability-narrowed",
            f"field {new_f.name} is no longer nullable in versions "
            f"{versions_text(list(old_n - new_n))} (nullableVersions "
            f"{old_f.ir.nullable_versions} -> {new_f.ir.nullable_versions}); old writers may "
            "send null and new readers reject it: keep it nullable in existing versions",
            where,
            new_f.line,
        )
    if new_n - old_n:
        ctx.add(
            "nullability-widened",
            f"field {new_f.name} became nullable in existing versions "
            f"{versions_text(list(new_n - old_n))} (nullableVersions "
            f"{old_f.ir.nullable_versions} -> {new_f.ir.nullable_versions}); old readers "
            "reject a null: make it nullable only from a new version on",
            where,
            new_f.line,
        )


def _check_default(ctx: PairContext, old_f: LField, new_f: LField) -> None:
    if old_f.ir.default == new_f.ir.default:
        return
    old_d, new_d = default_text(old_f.ir), default_text(new_f.ir)
    where = f"{new_f.json_path}.default"
    if new_f.ir.is_tagged or old_f.ir.is_tagged:
        ctx.add(
            "tagged-default-changed",
            f"tagged field {new_f.name} default changed from {old_d} to {new_d}; a tagged "
            "field equal to its default is not written, so omitted values now read "
            f"differently: keep {old_d}",
            where,
            new_f.line,
        )
    else:
        ctx.add(
            "default-changed",
            f"field {new_f.name} default changed from {old_d} to {new_d}; readers fill in the "
            f"default for versions without the field: keep {old_d}",
            where,
            new_f.line,
        )


_IMPLICIT_DEFAULTS = {
    "bool": "false",
    "float64": "0.0",
    "string": '""',
    "uuid": '"AAAAAAAAAAAAAAAAAAAAAA"',
    "bytes": "empty",
    "array": "empty",
    "struct": "empty",
    "records": "null",
}


def default_text(ir_field: Field) -> str:
    """The default as spec text: ``"-1"``, or the implicit default when none is given."""
    if ir_field.default_text is not None:
        return json.dumps(ir_field.default_text)
    implicit = _IMPLICIT_DEFAULTS.get(ir_field.type.kind, "0")
    return f"no default (so {implicit})"


def _check_flags(ctx: PairContext, old_f: LField, new_f: LField) -> None:
    o, n = old_f.ir, new_f.ir
    if o.ignorable != n.ignorable:
        effect = (
            "writers now reject non-default values in versions without the field"
            if o.ignorable
            else "writers now silently drop values in versions without it"
        )
        ctx.add(
            "ignorable-changed",
            f"field {n.name} ignorable changed from {str(o.ignorable).lower()} to "
            f"{str(n.ignorable).lower()}; {effect}",
            f"{new_f.json_path}.ignorable",
            new_f.line,
        )
    if o.map_key != n.map_key:
        ctx.add(
            "map-key-changed",
            f"field {n.name} mapKey changed from {str(o.map_key).lower()} to "
            f"{str(n.map_key).lower()}; the generated collection API and equality change",
            f"{new_f.json_path}.mapKey",
            new_f.line,
        )
    if (o.entity_type or "unknown") != (n.entity_type or "unknown"):
        ctx.add(
            "entity-type-changed",
            f"field {n.name} entityType changed from {o.entity_type or 'unknown'} to "
            f"{n.entity_type or 'unknown'}; keep it, tools rely on it",
            f"{new_f.json_path}.entityType",
            new_f.line,
        )


def _check_field_flexible(
    ctx: PairContext, old_f: LField, new_f: LField, both: VersionRange
) -> None:
    old_flex = old_f.ir.flexible_versions.intersect(both)
    new_flex = new_f.ir.flexible_versions.intersect(both)
    message_old = ctx.old.message.flexible_versions.intersect(both)
    message_new = ctx.new.message.flexible_versions.intersect(both)
    if old_flex != new_flex and message_old == message_new:
        ctx.add(
            "field-flexible-versions-changed",
            f"field {new_f.name} flexibleVersions changed from {old_f.ir.flexible_versions} "
            f"to {new_f.ir.flexible_versions} in existing versions; its encoding changes: "
            "keep the override",
            f"{new_f.json_path}.flexibleVersions",
            new_f.line,
        )


def _check_both(
    ctx: PairContext, pair: FieldPair, old_scope: VersionRange, new_scope: VersionRange
) -> None:
    old_f, new_f = pair.old, pair.new
    assert old_f is not None and new_f is not None
    shared = old_scope.intersect(new_scope)
    old_eff = effective_range(old_f.ir.versions, old_scope)
    new_eff = effective_range(new_f.ir.versions, new_scope)
    both = old_eff.intersect(new_eff).intersect(shared)
    tagged = old_f.ir.is_tagged or new_f.ir.is_tagged
    if pair.renamed:
        _check_rename(ctx, pair)
    type_changed = _type_changed(old_f.ir.type, new_f.ir.type)
    if type_changed and (tagged or not both.empty):
        rule_id = "tagged-field-type-changed" if tagged else "field-type-changed"
        tail = (
            "never change a tag's type, use a new tag"
            if tagged
            else "keep the type and add a new field in a new version instead"
        )
        ctx.add(
            rule_id,
            f"field {new_f.name} type changed from {old_f.ir.type.spec_text} to "
            f"{new_f.ir.type.spec_text}; {tail}",
            f"{new_f.json_path}.type",
            new_f.line,
        )
    elif _struct_name(old_f.ir.type) != _struct_name(new_f.ir.type):
        ctx.add(
            "struct-renamed",
            f"struct {_struct_name(old_f.ir.type)} of field {new_f.name} was renamed to "
            f"{_struct_name(new_f.ir.type)}; the generated class name changes: keep "
            f"{_struct_name(old_f.ir.type)}",
            f"{new_f.json_path}.type",
            new_f.line,
        )
    _check_field_versions(ctx, old_f, new_f, (old_scope, new_scope, shared))
    _check_nullability(ctx, old_f, new_f, both)
    if not type_changed:
        _check_default(ctx, old_f, new_f)
    _check_field_flexible(ctx, old_f, new_f, both)
    _check_flags(ctx, old_f, new_f)
    if old_f.struct is not None and new_f.struct is not None and not type_changed:
        compare_structs(ctx, old_f.struct, new_f.struct, old_eff, new_eff)


def _check_order(ctx: PairContext, pairs: list[FieldPair], shared: VersionRange) -> None:
    kept = [
        p
        for p in pairs
        if p.domain is Domain.BOTH
        and p.old is not None
        and p.new is not None
        and p.old.ir.mandatory_versions.overlaps(shared)
        and p.new.ir.mandatory_versions.overlaps(shared)
    ]
    kept.sort(key=lambda p: p.old.index if p.old is not None else 0)
    for i, first in enumerate(kept):
        for later in kept[i + 1 :]:
            assert first.new is not None and later.new is not None
            if later.new.index < first.new.index:
                ctx.add(
                    "fields-reordered",
                    f"field {later.new.name} now comes before {first.new.name}; the order of "
                    "non-tagged fields is the wire order of existing versions "
                    f"{shared}: keep the old order",
                    later.new.json_path,
                    later.new.line,
                )
                return


def _check_tags(ctx: PairContext, pairs: list[FieldPair], old: LStruct, new: LStruct) -> None:
    old_tags = {f.ir.tag: f for f in old.fields if f.ir.is_tagged}
    used = {*old_tags, *(f.ir.tag for f in new.fields if f.ir.is_tagged)}
    next_free = max((t for t in used if t is not None), default=-1) + 1
    for pair in pairs:
        new_f = pair.new
        if new_f is None or not new_f.ir.is_tagged:
            continue
        previous = old_tags.get(new_f.ir.tag)
        old_f = pair.old
        if old_f is not None and old_f.ir.is_tagged and old_f.ir.tag != new_f.ir.tag:
            # One finding per field: a changed tag that was another field's says so too.
            was = (
                ""
                if previous is None
                else f", which was the tag of field {previous.name} ({previous.ir.type.spec_text})"
            )
            ctx.add(
                "tag-changed",
                f"field {new_f.name} tag changed from {old_f.ir.tag} to {new_f.ir.tag}{was}; "
                f"the tag is on the wire, keep {old_f.ir.tag}",
                f"{new_f.json_path}.tag",
                new_f.line,
            )
        elif previous is not None and old_f is not previous:
            ctx.add(
                "tag-reused",
                f"tag {new_f.ir.tag} belonged to field {previous.name} "
                f"({previous.ir.type.spec_text}) and now belongs to {new_f.name} "
                f"({new_f.ir.type.spec_text}); old writers still write it with the old "
                f"meaning: never reuse a tag, use tag {next_free}",
                f"{new_f.json_path}.tag",
                new_f.line,
            )


def compare_structs(
    ctx: PairContext, old: LStruct, new: LStruct, old_scope: VersionRange, new_scope: VersionRange
) -> None:
    """Compare two structs' fields; the scopes are the versions each struct exists in."""
    shared = old_scope.intersect(new_scope)
    pairs = pair_fields(old, new)
    for pair in pairs:
        if pair.domain is Domain.BOTH:
            _check_both(ctx, pair, old_scope, new_scope)
        elif pair.old is not None:
            _check_removed(ctx, pair.old, new, old_scope, shared)
        elif pair.new is not None:
            _check_added(ctx, pair.new, new_scope, shared)
    _check_order(ctx, pairs, shared)
    _check_tags(ctx, pairs, old, new)


# --------------------------------------------------------------------------- entry points


def compare_specs(old: SpecView, new: SpecView, role: Role) -> list[Finding]:
    cross = (
        old.message.spec_type != new.message.spec_type
        and role is not Role.NONE
        and {old.message.spec_type, new.message.spec_type} <= _RECORD_TYPES
    )
    ctx = PairContext(old, new, role, cross)
    if old.name != new.name:
        ctx.add(
            "spec-renamed",
            f"spec {old.name} was renamed to {new.name}; the generated class and module "
            f"names change: keep {old.name}",
            "$.name",
        )
    _check_identity(ctx)
    if cross and role is Role.KEY:
        return ctx.findings  # the key layout is compared per record type
    if role is not Role.KEY:
        _check_valid_versions(ctx)
    _check_flexible(ctx)
    if role is Role.VALUE:
        _check_coordinator_value(ctx)
    compare_structs(ctx, old.root, new.root, old.message.valid_versions, new.message.valid_versions)
    return ctx.findings


def _spec_finding(rule_id: str, view: SpecView, message: str, json_path: str = "$") -> Finding:
    return Finding(
        rule_id, message, view.path, view.line_of(json_path), json_path, view.name, rel=view.rel
    )


def _type_location(view: SpecView) -> str:
    return "$.apiKey" if view.message.spec_type == "coordinator-key" else "$.validVersions"


def compare_records(old_set: SpecSet, new_set: SpecSet) -> list[Finding]:
    old_types = follow_moves(record_types(old_set), new_set)
    new_types = record_types(new_set)
    findings: list[Finding] = []
    new_names = new_set.by_name()
    for ident, old in sorted(old_types.items()):
        if ident in new_types:
            continue
        holder = new_names.get(old.key.name, old.key)
        findings.append(
            _spec_finding(
                "record-type-removed",
                holder,
                f"{old.label} is gone; stored records of this type can no "
                "longer be read: keep its key and value specs",
                _type_location(holder),
            )
        )
    for ident, new in sorted(new_types.items()):
        previous: RecordType | None = old_types.get(ident)
        if previous is None:
            findings.append(
                _spec_finding(
                    "record-type-added",
                    new.key,
                    f"new {new.label}: readers older than KIP-915 (Kafka 3.5) fail on it and newer "
                    "readers skip it, so a downgrade loses these records; write them only once a "
                    "downgrade below this release is ruled out",
                    _type_location(new.key),
                )
            )
            continue
        same_spec = (
            previous.key.name == new.key.name
            and previous.key.message.spec_type == new.key.message.spec_type
        )
        if not same_spec and key_layout_changed(previous, new):
            findings.append(
                _spec_finding(
                    "coordinator-key-changed",
                    new.key,
                    f"the key of {new.label} no longer has the layout of {previous.key.name} "
                    f"version {previous.key_version}; key bytes identify the record, so old and "
                    "new records no longer compact together: keep the key fields",
                    "$.fields",
                )
            )
    return findings


def _identity(view: SpecView) -> str:
    key = "" if view.message.api_key is None else f", apiKey {view.message.api_key}"
    return f"{view.name} ({view.message.spec_type}{key})"


def different_messages(old: SpecView, new: SpecView) -> Finding | None:
    """A ``different-messages`` finding when two compared files are unrelated specs.

    A renamed spec keeps its apiKey, type or fields; specs that differ in name and in
    apiKey or type, or share no top-level field name, are two different messages, and a
    field-by-field comparison of them would only be noise.
    """
    if old.name == new.name:
        return None
    o, n = old.message, new.message
    shared_fields = {f.name for f in old.root.fields} & {f.name for f in new.root.fields}
    if o.api_key == n.api_key and o.spec_type == n.spec_type and shared_fields:
        return None
    return _spec_finding(
        "different-messages",
        new,
        f"these are different messages: {old.path} is {_identity(old)} and {new.path} is "
        f"{_identity(new)}; compare two versions of the same spec, or two folders (specs are "
        "paired by name)",
    )


def compare_sets(old_set: SpecSet, new_set: SpecSet) -> list[Finding]:
    """Every finding of ``old_set`` against ``new_set`` (before suppressions)."""
    findings: list[Finding] = []
    old_roles, new_roles = roles(old_set), roles(new_set)
    if old_set.single_file and new_set.single_file and old_set.specs and new_set.specs:
        pairs = [(old_set.specs[0], new_set.specs[0])]
        unrelated = different_messages(*pairs[0])
        if unrelated is not None:
            return [unrelated]
    else:
        old_by, new_by = old_set.by_name(), new_set.by_name()
        pairs = [(old_by[n], new_by[n]) for n in sorted(old_by.keys() & new_by.keys())]
        for name in sorted(old_by.keys() - new_by.keys()):
            view = old_by[name]
            findings.append(
                _spec_finding(
                    "spec-removed",
                    view,
                    f"spec {name} ({view.message.spec_type}) is missing from the new specs; keep "
                    "it and retire its versions over releases instead",
                )
            )
        for name in sorted(new_by.keys() - old_by.keys()):
            view = new_by[name]
            findings.append(
                _spec_finding("spec-added", view, f"new spec {name} ({view.message.spec_type})")
            )
    for old, new in pairs:
        role = new_roles.get(new.name, Role.NONE)
        if role is Role.NONE:
            role = old_roles.get(old.name, Role.NONE)
        findings.extend(compare_specs(old, new, role))
    findings.extend(compare_records(old_set, new_set))
    unique = {(f.rule, f.path, f.line, f.json_path, f.message): f for f in findings}
    return sorted(unique.values(), key=Finding.sort_key)
