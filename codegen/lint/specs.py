"""One old spec against its new counterpart: identity, versions, flexibility, coordinator
values, then the fields (:mod:`codegen.lint.fields`).

"Existing versions" are the versions both specs have, released on the old side: the bytes of
such a version are written by old code and read by new code (and the other way round), so
their layout must not change. New versions may change freely, except coordinator values,
which KIP-915 readers parse at their own highest version. The newest version of a request
marked ``latestVersionUnstable`` (and the same version of its response) is not released yet:
Kafka changes or removes it at will, so its changes are notes (``unstable-version-changed``).
"""

from __future__ import annotations

from codegen.lint.context import PairContext
from codegen.lint.fields import compare_structs, report_renames
from codegen.lint.findings import Finding
from codegen.lint.layout import describe, difference, message_layout, parse_layout, same_fields
from codegen.lint.memory import Memory
from codegen.lint.model import SpecSet, SpecView
from codegen.lint.records import Role
from codegen.versions import VersionRange, versions_phrase, versions_text

RECORD_TYPES = frozenset({"data", "coordinator-key", "coordinator-value"})


def unstable_versions(specs: SpecSet) -> dict[str, frozenset[int]]:
    """The versions of each spec that are not released yet: the newest version of a request
    marked ``latestVersionUnstable``, and that version of the response with its apiKey."""
    unstable_requests = {
        v.message.api_key: v.message.valid_versions.highest
        for v in specs.specs
        if v.message.spec_type == "request" and v.message.latest_version_unstable
    }
    found: dict[str, frozenset[int]] = {}
    for view in specs.specs:
        message = view.message
        if message.spec_type in ("request", "response") and message.api_key in unstable_requests:
            newest = unstable_requests[message.api_key]
            if newest in message.valid_versions:
                found[view.name] = frozenset({newest})
    return found


def _api_key_text(api_key: int | None) -> str:
    return "no apiKey" if api_key is None else str(api_key)


def _not_released(ctx: PairContext, what: str) -> str:
    request = "" if ctx.old.message.spec_type == "request" else " (its request is)"
    return (
        f"{what} of {ctx.old.name} was not released: marked latestVersionUnstable{request}, "
        "so Kafka may change or remove it"
    )


# --------------------------------------------------------------------------- identity


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


# --------------------------------------------------------------------------- versions


def _check_valid_versions(ctx: PairContext, unstable: frozenset[int], memory: Memory) -> None:
    old, new = ctx.old.message.valid_versions, ctx.new.message.valid_versions
    where = "$.validVersions"
    lost = [v for v in old.versions() if v > new.highest]
    if lost and set(lost) <= unstable:
        ctx.add(
            "unstable-version-changed",
            f"{_not_released(ctx, versions_phrase(lost))}; it is gone "
            f"(validVersions {old} -> {new})",
            where,
        )
    elif lost:
        ctx.add(
            "highest-version-lowered",
            f"the highest version was lowered from {old.highest} to {new.highest} "
            f"(validVersions {old} -> {new}); writers may already use version "
            f"{old.highest}, keep it",
            where,
        )
    gone = [v for v in old.versions() if v < new.lowest and v <= new.highest]
    if gone and set(gone) <= unstable:
        ctx.add(
            "unstable-version-changed",
            f"{_not_released(ctx, versions_phrase(gone))}; it is gone "
            f"(validVersions {old} -> {new})",
            where,
        )
    elif new.lowest > old.lowest:
        removed = VersionRange(old.lowest, min(new.lowest - 1, old.highest))
        ctx.add(
            "versions-removed",
            f"versions {removed} were removed (validVersions {old} -> {new}); old writers and "
            "stored data may use them: keep them until nothing does",
            where,
        )
    if new.lowest < old.lowest:
        _check_brought_back(ctx, VersionRange(new.lowest, old.lowest - 1), memory)


def _check_brought_back(ctx: PairContext, back: VersionRange, memory: Memory) -> None:
    """Versions below the old lowest: compared with the layout they had, when remembered."""
    old, new = ctx.old.message.valid_versions, ctx.new.message.valid_versions
    where = "$.validVersions"
    unrecorded: list[int] = []
    differing: dict[tuple[str, str], list[int]] = {}  # (where remembered, why) -> versions
    for version in back.versions():
        remembered = memory.layouts(ctx.new.name, version) or memory.layouts(ctx.old.name, version)
        if not remembered:
            unrecorded.append(version)
            continue
        layout = message_layout(ctx.new.message, version)
        found = [(use, difference(parse_layout(use.layout), layout)) for use in remembered]
        if any(reason is None for _, reason in found):
            continue
        use, first = found[0]
        assert first is not None
        key = (memory.uses[use], describe(first, ctx.new.message, version))
        differing.setdefault(key, []).append(version)
    for (source, why), versions in differing.items():
        ctx.add(
            "version-layout-changed",
            f"{versions_phrase(versions)} of {ctx.new.name} "
            f"{'comes' if len(versions) == 1 else 'come'} back (validVersions {old} -> {new}) "
            f"with another layout than in {source}: {why}; readers of that release read "
            "these bytes differently: give them the layout they had",
            where,
        )
    if unrecorded:
        one = len(unrecorded) == 1
        ctx.add(
            "lowest-version-lowered",
            f"{versions_phrase(unrecorded)} {'comes' if one else 'come'} back "
            f"(validVersions {old} -> {new}), and nothing records the layout "
            f"{'it' if one else 'they'} had (no git history or lock holds "
            f"{'it' if one else 'them'}); retired version numbers may have had another layout: "
            "check it, or lint with the git history or a lock",
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
                versions=[v for v in ctx.judged if v in new],
            )
        return
    changed = [v for v in sorted(ctx.judged) if (v in old) != (v in new)]
    if changed:
        ctx.add(
            "flexible-versions-changed",
            f"flexibleVersions changed from {old} to {new}, so existing versions "
            f"{versions_text(changed)} change their wire format; keep {old} for existing "
            "versions",
            "$.flexibleVersions",
            versions=changed,
        )


# --------------------------------------------------------------------------- coordinator values


def _mandatory_names(view: SpecView, version: int) -> list[str]:
    return [f.name for f in view.root.fields if version in f.ir.mandatory_versions]


def _name_change(old_names: list[str], new_names: list[str]) -> str:
    added = [n for n in new_names if n not in old_names]
    removed = [n for n in old_names if n not in new_names]
    parts = []
    if added:
        parts.append("adds " + ", ".join(added))
    if removed:
        parts.append("removes " + ", ".join(removed))
    return f" ({'; '.join(parts)})" if parts else ""


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
    old_names = _mandatory_names(old, highest)
    old_layout = message_layout(old.message, highest)
    for version in added:
        layout = message_layout(new.message, version)
        if same_fields(layout, old_layout) and (old_flexible or not layout.tagged):
            continue
        change = _name_change(old_names, _mandatory_names(new, version))
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


# --------------------------------------------------------------------------- what is left


def _explain_the_rest(ctx: PairContext) -> None:
    """``version-layout-changed`` for changed versions that no finding explains."""
    by_reason: dict[str, list[int]] = {}
    for version in sorted(ctx.changed - ctx.covered):
        found = difference(
            message_layout(ctx.old.message, version), message_layout(ctx.new.message, version)
        )
        assert found is not None
        by_reason.setdefault(describe(found, ctx.new.message, version), []).append(version)
    for reason, versions in by_reason.items():
        ctx.add(
            "version-layout-changed",
            f"the bytes of existing versions {versions_text(versions)} change: {reason}; "
            "keep the layout of existing versions and change it in a new version",
            "$",
        )


def _check_unstable(ctx: PairContext, unstable: frozenset[int]) -> None:
    for version in sorted(unstable & set(ctx.new.message.valid_versions.versions())):
        reason = difference(
            message_layout(ctx.old.message, version), message_layout(ctx.new.message, version)
        )
        if reason is not None:
            ctx.add(
                "unstable-version-changed",
                f"{_not_released(ctx, f'version {version}')}; its bytes change: "
                f"{describe(reason, ctx.new.message, version)}",
                "$.validVersions",
            )


# --------------------------------------------------------------------------- entry point


def compare_specs(
    old: SpecView,
    new: SpecView,
    role: Role,
    unstable: frozenset[int] = frozenset(),
    memory: Memory | None = None,
) -> list[Finding]:
    """Every finding of one old spec against its new counterpart.

    ``unstable`` are the old spec's versions not yet released; ``memory`` what earlier
    commits had (for versions brought back).
    """
    cross = (
        old.message.spec_type != new.message.spec_type
        and role is not Role.NONE
        and {old.message.spec_type, new.message.spec_type} <= RECORD_TYPES
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
    old_valid, new_valid = old.message.valid_versions, new.message.valid_versions
    ctx.judged = frozenset(old_valid.intersect(new_valid).versions()) - unstable
    ctx.changed = frozenset(
        v
        for v in ctx.judged
        if difference(message_layout(old.message, v), message_layout(new.message, v)) is not None
    )
    if role is not Role.KEY:
        _check_valid_versions(ctx, unstable, memory or Memory())
    _check_flexible(ctx)
    if role is Role.VALUE:
        _check_coordinator_value(ctx)
    if ctx.judged:
        compare_structs(ctx, old.root, new.root, (old_valid, new_valid), ctx.judged)
        report_renames(ctx)
    _explain_the_rest(ctx)
    _check_unstable(ctx, unstable)
    return ctx.findings
