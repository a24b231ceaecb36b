"""Two spec sets: which old spec is which new spec, then each pair and the record types.

Specs pair by name (a spec's name is its identity: a renamed spec is one removed and one
added, whatever its apiKey); what is left is removed or added. Coordinator record types are
compared by their type id (:mod:`codegen.lint.records`).
"""

from __future__ import annotations

from codegen.lint.findings import Finding
from codegen.lint.memory import Memory
from codegen.lint.model import SpecSet, SpecView
from codegen.lint.records import RecordType, Role, follow_moves, key_layout_changed, record_types
from codegen.lint.records import roles as record_roles
from codegen.lint.specs import compare_specs, unstable_versions


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


def _spec_pairs(
    old_set: SpecSet,
    new_set: SpecSet,
    unstable: dict[str, frozenset[int]],
    findings: list[Finding],
) -> list[tuple[SpecView, SpecView]]:
    old_by, new_by = old_set.by_name(), new_set.by_name()
    pairs = [(old_by[n], new_by[n]) for n in sorted(old_by.keys() & new_by.keys())]
    added = {(v.message.spec_type, v.message.api_key): v for v in new_set.specs}
    for name in sorted(old_by.keys() - new_by.keys()):
        view = old_by[name]
        versions = set(view.message.valid_versions.versions())
        if versions <= unstable.get(name, frozenset()):
            findings.append(
                _spec_finding(
                    "unstable-version-changed",
                    view,
                    f"spec {name} ({view.message.spec_type}) is gone; its only version "
                    f"{view.message.valid_versions} was not released (latestVersionUnstable), "
                    "so Kafka may change or remove it",
                )
            )
            continue
        key = (view.message.spec_type, view.message.api_key)
        heir = added.get(key) if view.message.api_key is not None else None
        renamed = (
            ""
            if heir is None or heir.name in old_by
            else f"; {heir.name} now has its apiKey {view.message.api_key} (if it is this spec "
            "renamed, allow spec-removed with that reason)"
        )
        findings.append(
            _spec_finding(
                "spec-removed",
                view,
                f"spec {name} ({view.message.spec_type}) is missing from the new specs{renamed}; "
                "keep it and retire its versions over releases instead",
            )
        )
    for name in sorted(new_by.keys() - old_by.keys()):
        view = new_by[name]
        findings.append(
            _spec_finding("spec-added", view, f"new spec {name} ({view.message.spec_type})")
        )
    return pairs


def compare_sets(old_set: SpecSet, new_set: SpecSet, memory: Memory | None = None) -> list[Finding]:
    """Every finding of ``old_set`` against ``new_set`` (before suppressions); ``memory`` is
    what earlier commits had (versions brought back are compared with it)."""
    findings: list[Finding] = []
    old_roles, new_roles = record_roles(old_set), record_roles(new_set)
    unstable = unstable_versions(old_set)
    if old_set.single_file and new_set.single_file and old_set.specs and new_set.specs:
        pairs = [(old_set.specs[0], new_set.specs[0])]
        unrelated = different_messages(*pairs[0])
        if unrelated is not None:
            return [unrelated]
    else:
        pairs = _spec_pairs(old_set, new_set, unstable, findings)
    for old, new in pairs:
        if old.text == new.text and old.name == new.name:
            continue  # nothing to compare: every check compares two equal things
        role = new_roles.get(new.name, Role.NONE)
        if role is Role.NONE:
            role = old_roles.get(old.name, Role.NONE)
        findings.extend(compare_specs(old, new, role, unstable.get(old.name, frozenset()), memory))
    findings.extend(compare_records(old_set, new_set))
    unique = {(f.rule, f.path, f.line, f.json_path, f.message): f for f in findings}
    return sorted(unique.values(), key=Finding.sort_key)
