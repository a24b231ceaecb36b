"""The fields of one struct in two specs: what changed, version by existing version.

Fields are paired as :mod:`codegen.lint.pairing` says. Findings about the bytes of existing
versions name the versions they are about (see :mod:`codegen.lint.context`); renames are one
finding per struct, saying which versions keep their bytes under which new names.
"""

from __future__ import annotations

import json

from codegen.ir import Field, FieldType
from codegen.lint.context import PairContext, Rename
from codegen.lint.memory import type_meaning
from codegen.lint.model import LField, LStruct
from codegen.lint.pairing import (
    Domain,
    FieldPair,
    PairedBy,
    VersionPairs,
    correspond,
    effective_range,
    pair_fields,
)
from codegen.lint.records import Role
from codegen.versions import VersionRange, versions_phrase, versions_text


def _within(judged: frozenset[int], versions: VersionRange) -> set[int]:
    return {v for v in judged if v in versions}


def _type_changed(old: FieldType, new: FieldType) -> bool:
    if old.kind != new.kind:
        return True
    if old.element is not None and new.element is not None:
        return _type_changed(old.element, new.element)
    return False


def _struct_name(t: FieldType) -> str | None:
    return t.element.struct_name if t.element is not None else t.struct_name


# --------------------------------------------------------------------------- one side only


def _check_removed(
    ctx: PairContext,
    old_f: LField,
    new_struct: LStruct,
    old_scope: VersionRange,
    versions: list[VersionPairs],
) -> None:
    where = new_struct.fields_json_path()
    line = ctx.new.line_of(where) if new_struct.json_path == "$" else new_struct.line
    gone = {
        vp.version
        for vp in versions
        if vp.version in old_f.ir.mandatory_versions and vp.partner_of_old(old_f) is None
    }
    if gone:
        if ctx.role is Role.KEY:
            ctx.add(
                "coordinator-key-changed",
                f"field {old_f.name} was removed from the record key {ctx.new.name}; the key "
                "bytes change, so old and new records no longer compact together: add a new "
                "record type instead",
                where,
                line,
                gone,
            )
        else:
            ctx.add(
                "field-removed-from-existing-version",
                f"field {old_f.name} ({old_f.ir.type.spec_text}, versions "
                f"{old_f.ir.versions}) was removed, but {versions_phrase(gone)} still "
                f"{'exists' if len(gone) == 1 else 'exist'}; keep it and end its versions before "
                "a new version instead",
                where,
                line,
                gone,
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


def _check_added(ctx: PairContext, new_f: LField, versions: list[VersionPairs]) -> None:
    added = {
        vp.version
        for vp in versions
        if vp.version in new_f.ir.mandatory_versions and vp.partner_of_new(new_f) is None
    }
    if not added:
        return
    if ctx.role is Role.KEY:
        ctx.add(
            "coordinator-key-changed",
            f"field {new_f.name} was added to the record key {ctx.new.name}; the key bytes "
            "change, so old and new records no longer compact together: add a new record "
            "type instead",
            new_f.json_path,
            new_f.line,
            added,
        )
    else:
        ctx.add(
            "field-added-to-existing-version",
            f"non-tagged field {new_f.name} was added to existing {versions_phrase(added)}; add "
            "it in a new version, or as a tagged field in a flexible version",
            new_f.json_path,
            new_f.line,
            added,
        )


# --------------------------------------------------------------------------- both sides


def _check_field_versions(
    ctx: PairContext,
    old_f: LField,
    new_f: LField,
    scopes: tuple[VersionRange, VersionRange],
    judged: frozenset[int],
) -> None:
    old_scope, new_scope = scopes
    old_m = _within(judged, old_f.ir.mandatory_versions.intersect(old_scope))
    new_m = _within(judged, new_f.ir.mandatory_versions.intersect(new_scope))
    old_t = _within(judged, old_f.ir.tagged_versions.intersect(old_scope))
    new_t = _within(judged, new_f.ir.tagged_versions.intersect(new_scope))
    if old_m == new_m:
        return
    switched = (old_m & new_t) | (new_m & old_t)
    if switched:
        ctx.add(
            "field-tagging-changed",
            f"field {new_f.name} changed between tagged and non-tagged in existing versions "
            f"{versions_text(switched)}; make it tagged only from a new version on",
            f"{new_f.json_path}.taggedVersions"
            if new_f.ir.is_tagged
            else f"{new_f.json_path}.versions",
            new_f.line,
            switched,
        )
    elif ctx.role is Role.KEY:
        ctx.add(
            "coordinator-key-changed",
            f"field {new_f.name} of the record key {ctx.new.name} changed versions from "
            f"{old_f.ir.versions} to {new_f.ir.versions}; key bytes change: add a new record "
            "type instead",
            f"{new_f.json_path}.versions",
            new_f.line,
            old_m ^ new_m,
        )
    else:
        ctx.add(
            "field-versions-changed",
            f"field {new_f.name} versions changed from {old_f.ir.versions} to "
            f"{new_f.ir.versions}, which changes existing versions "
            f"{versions_text(old_m ^ new_m)}; only extend a field into new versions "
            "or end it before a new version",
            f"{new_f.json_path}.versions",
            new_f.line,
            old_m ^ new_m,
        )


def _check_nullability(ctx: PairContext, old_f: LField, new_f: LField, both: set[int]) -> None:
    old_n = {v for v in both if v in old_f.ir.nullable_versions}
    new_n = {v for v in both if v in new_f.ir.nullable_versions}
    where = f"{new_f.json_path}.nullableVersions"
    if old_n - new_n:
        ctx.add(
            "nullability-narrowed",
            f"field {new_f.name} is no longer nullable in versions "
            f"{versions_text(old_n - new_n)} (nullableVersions "
            f"{old_f.ir.nullable_versions} -> {new_f.ir.nullable_versions}); old writers may "
            "send null and new readers reject it: keep it nullable in existing versions",
            where,
            new_f.line,
            old_n - new_n,
        )
    if new_n - old_n:
        ctx.add(
            "nullability-widened",
            f"field {new_f.name} became nullable in existing versions "
            f"{versions_text(new_n - old_n)} (nullableVersions "
            f"{old_f.ir.nullable_versions} -> {new_f.ir.nullable_versions}); old readers "
            "reject a null: make it nullable only from a new version on",
            where,
            new_f.line,
            new_n - old_n,
        )


def _check_default(ctx: PairContext, old_f: LField, new_f: LField, both: set[int]) -> None:
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
            {v for v in both if v in old_f.ir.tagged_versions and v in new_f.ir.tagged_versions},
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


def _check_field_flexible(ctx: PairContext, old_f: LField, new_f: LField, both: set[int]) -> None:
    old_flex = {v for v in both if v in old_f.ir.flexible_versions}
    new_flex = {v for v in both if v in new_f.ir.flexible_versions}
    message_old = {v for v in both if v in ctx.old.message.flexible_versions}
    message_new = {v for v in both if v in ctx.new.message.flexible_versions}
    if old_flex != new_flex and message_old == message_new:
        ctx.add(
            "field-flexible-versions-changed",
            f"field {new_f.name} flexibleVersions changed from {old_f.ir.flexible_versions} "
            f"to {new_f.ir.flexible_versions} in existing versions; its encoding changes: "
            "keep the override",
            f"{new_f.json_path}.flexibleVersions",
            new_f.line,
            old_flex ^ new_flex,
        )


def _check_both(
    ctx: PairContext,
    pair: FieldPair,
    scopes: tuple[VersionRange, VersionRange],
    judged: frozenset[int],
) -> None:
    old_f, new_f = pair.old, pair.new
    assert old_f is not None and new_f is not None
    old_scope, new_scope = scopes
    both = _within(judged, old_f.ir.versions.intersect(old_scope)) & _within(
        judged, new_f.ir.versions.intersect(new_scope)
    )
    type_changed = _type_changed(old_f.ir.type, new_f.ir.type)
    if type_changed and both:
        tagged = old_f.ir.is_tagged or new_f.ir.is_tagged
        ctx.add(
            "tagged-field-type-changed" if tagged else "field-type-changed",
            f"field {new_f.name} type changed from {old_f.ir.type.spec_text} to "
            f"{new_f.ir.type.spec_text}; "
            + (
                "never change a tag's type, use a new tag"
                if tagged
                else "keep the type and add a new field in a new version instead"
            ),
            f"{new_f.json_path}.type",
            new_f.line,
            both,
        )
    elif type_changed and type_meaning(old_f.ir.type.spec_text) != type_meaning(
        new_f.ir.type.spec_text
    ):
        ctx.retyped.setdefault(new_f.json_path, (old_f, new_f))
    elif not type_changed and _struct_name(old_f.ir.type) != _struct_name(new_f.ir.type):
        ctx.add(
            "struct-renamed",
            f"struct {_struct_name(old_f.ir.type)} of field {new_f.name} was renamed to "
            f"{_struct_name(new_f.ir.type)}; the generated class name changes: keep "
            f"{_struct_name(old_f.ir.type)}",
            f"{new_f.json_path}.type",
            new_f.line,
        )
    _check_field_versions(ctx, old_f, new_f, scopes, judged)
    _check_nullability(ctx, old_f, new_f, both)
    if not type_changed:
        _check_default(ctx, old_f, new_f, both)
    _check_field_flexible(ctx, old_f, new_f, both)
    _check_flags(ctx, old_f, new_f)


def _check_order(ctx: PairContext, pairs: list[FieldPair], judged: frozenset[int]) -> None:
    kept = [
        p
        for p in pairs
        if p.paired_by is PairedBy.NAME
        and p.old is not None
        and p.new is not None
        and _within(judged, p.old.ir.mandatory_versions)
        and _within(judged, p.new.ir.mandatory_versions)
    ]
    kept.sort(key=lambda p: p.old.index if p.old is not None else 0)
    for i, first in enumerate(kept):
        for later in kept[i + 1 :]:
            assert first.new is not None and later.new is not None
            assert first.old is not None and later.old is not None
            if later.new.index < first.new.index:
                versions = {
                    v
                    for v in judged
                    if all(
                        v in f.ir.mandatory_versions
                        for f in (first.old, first.new, later.old, later.new)
                    )
                }
                ctx.add(
                    "fields-reordered",
                    f"field {later.new.name} now comes before {first.new.name}; the order of "
                    "non-tagged fields is the wire order of existing versions "
                    f"{versions_text(versions)}: keep the old order",
                    later.new.json_path,
                    later.new.line,
                    versions,
                )
                return


def _check_tags(
    ctx: PairContext, pairs: list[FieldPair], old: LStruct, new: LStruct, judged: frozenset[int]
) -> None:
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
                _within(judged, old_f.ir.tagged_versions)
                | _within(judged, new_f.ir.tagged_versions),
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
                _within(judged, previous.ir.tagged_versions)
                & _within(judged, new_f.ir.tagged_versions),
            )


# --------------------------------------------------------------------------- renames


def _collect_renames(
    ctx: PairContext,
    old: LStruct,
    pairs: list[FieldPair],
    versions: list[VersionPairs],
) -> None:
    """Note the fields of existing versions that have other names now.

    Only names that change the JSON key or the attribute count: a rename that changes only
    the case of the first letter changes neither.
    """
    found = False
    for vp in versions:
        for o, n in vp.pairs:
            if o.ir.json_key == n.ir.json_key and o.ir.attr == n.ir.attr:
                continue
            key = (old.name, o.name, n.name)
            if key not in ctx.renames:
                ctx.renames[key] = Rename(old.name, o, n, set(), True)
            ctx.renames[key].versions.add(vp.version)
            ctx.renames[key].by_place &= vp.by_place
            found = True
    if not found:
        return
    judged = {vp.version for vp in versions}
    renamed_old = {r.old.name for r in ctx.renames.values() if r.struct == old.name}
    for pair in pairs:
        f = pair.new
        if f is None or _within(frozenset(judged), f.ir.versions):
            continue
        if pair.old is None or (pair.paired_by is PairedBy.NAME and pair.old.name in renamed_old):
            ctx.grown.setdefault(f.json_path, f)


def _report_retyped(ctx: PairContext) -> None:
    for old_f, new_f in ctx.retyped.values():
        ctx.add(
            "field-name-reused",
            f"field {new_f.name} ({new_f.ir.type.spec_text}, versions {new_f.ir.versions}) "
            f"takes the name of field {old_f.name} ({old_f.ir.type.spec_text}, versions "
            f"{old_f.ir.versions}), with no version in common; JSON readers and code written "
            "for the old field would take the new one for it: give the new field another "
            f"name, or keep {old_f.ir.type.spec_text}",
            f"{new_f.json_path}.name",
            new_f.line,
        )


def _grown_text(ctx: PairContext, f: LField) -> str:
    if f.json_path not in ctx.retyped:
        return f.name
    was = ctx.retyped[f.json_path][0]
    return f"{f.name} ({f.ir.type.spec_text}, was {was.ir.type.spec_text})"


def report_renames(ctx: PairContext) -> None:
    """One field-renamed finding for every field of the spec's existing versions with another
    name: a restructure that keeps the old versions' bytes reads as what it is. A name taken
    by a field of another type is part of it, or a field-name-reused finding of its own."""
    if not ctx.renames:
        _report_retyped(ctx)
        return
    renames = list(ctx.renames.values())
    root = ctx.old.name

    def shown(r: Rename) -> str:
        return r.old.name if r.struct == root else f"{r.struct}.{r.old.name}"

    first = renames[0].new
    where = f"{first.json_path}.name"
    everywhere = set().union(*(r.versions for r in renames))
    if len(renames) == 1 and not ctx.grown:
        r = renames[0]
        how = (
            "the same bytes: paired by its place in the layout"
            if r.by_place
            else "paired by layout"
        )
        ctx.add(
            "field-renamed",
            f"field {shown(r)} was renamed to {r.new.name} in "
            f"{versions_phrase(r.versions)} ({how}); the JSON key "
            f"changes from {r.old.ir.json_key} to {r.new.ir.json_key} and the attribute from "
            f"{r.old.ir.attr} to {r.new.ir.attr}: keep the name {r.old.name}",
            where,
            first.line,
        )
        _report_retyped(ctx)
        return
    groups: dict[str, list[str]] = {}
    for r in renames:
        groups.setdefault(versions_text(r.versions), []).append(f"{shown(r)} -> {r.new.name}")
    parts = [
        f"{'fields' if len(names) > 1 else 'field'} renamed for v{span}: {', '.join(names)}"
        for span, names in groups.items()
    ]
    by_first: dict[int, list[str]] = {}
    for f in ctx.grown.values():
        by_first.setdefault(f.ir.versions.lowest, []).append(_grown_text(ctx, f))
    for path in ctx.grown:
        ctx.retyped.pop(path, None)
    parts += [
        f"{'new fields' if len(names) > 1 else 'new field'} from v{v}: {', '.join(names)}"
        for v, names in sorted(by_first.items())
    ]
    kept = ""
    if not everywhere & ctx.changed:
        phrase = versions_phrase(everywhere)
        kept = f"{phrase} {'keeps its' if len(everywhere) == 1 else 'keep their'} bytes; "
    ctx.add(
        "field-renamed",
        f"{kept}{'; '.join(parts)}; the JSON keys and attributes of these versions change "
        "with the names: keep them, or allow field-renamed where no one reads the JSON or "
        "the API",
        where,
        first.line,
    )
    _report_retyped(ctx)


# --------------------------------------------------------------------------- a struct


def compare_structs(
    ctx: PairContext,
    old: LStruct,
    new: LStruct,
    scopes: tuple[VersionRange, VersionRange],
    judged: frozenset[int],
) -> None:
    """Compare two structs' fields in the ``judged`` existing versions; the scopes are the
    versions each struct exists in."""
    old_flexible, new_flexible = (
        ctx.old.message.flexible_versions,
        ctx.new.message.flexible_versions,
    )
    versions = [
        correspond(old, new, v, v in old_flexible, v in new_flexible) for v in sorted(judged)
    ]
    pairs = pair_fields(old, new, versions)
    for pair in pairs:
        if pair.domain is Domain.BOTH:
            _check_both(ctx, pair, scopes, judged)
        elif pair.old is not None:
            _check_removed(ctx, pair.old, new, scopes[0], versions)
        elif pair.new is not None:
            _check_added(ctx, pair.new, versions)
    _check_order(ctx, pairs, judged)
    _check_tags(ctx, pairs, old, new, judged)
    _collect_renames(ctx, old, pairs, versions)
    _compare_nested(ctx, scopes, versions)


def _compare_nested(
    ctx: PairContext, scopes: tuple[VersionRange, VersionRange], versions: list[VersionPairs]
) -> None:
    """Compare the structs of fields paired in existing versions, in those versions."""
    nested: dict[tuple[int, int], tuple[LStruct, LStruct, tuple[VersionRange, ...], set[int]]]
    nested = {}
    for vp in versions:
        for o, n in vp.pairs:
            if o.struct is None or n.struct is None or _type_changed(o.ir.type, n.ir.type):
                continue
            scopes_of = (o.ir.versions.intersect(scopes[0]), n.ir.versions.intersect(scopes[1]))
            entry = nested.setdefault((o.index, n.index), (o.struct, n.struct, scopes_of, set()))
            entry[3].add(vp.version)
    for old_struct, new_struct, (old_scope, new_scope), at in nested.values():
        compare_structs(ctx, old_struct, new_struct, (old_scope, new_scope), frozenset(at))
