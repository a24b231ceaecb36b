"""The lint on Kafka's own specs, from two real releases: clean against itself, right on the
evolution from 3.9.0 to 4.4.0 and on edits of real coordinator specs.

Both corpora are every spec inside the releases' jars, fetched by ``make setup``
(``tests/corpus.py``), so these tests carry the ``oracle`` marker.
"""

from __future__ import annotations

import shutil
from collections import Counter
from pathlib import Path

import pytest
from corpus import kafka_specs, previous_kafka_specs

from codegen.lint import Category, LintConfig, LintResult, SpecSet, lint, load_set
from codegen.lint.records import RecordDowngrade
from tests.lint.helpers import found

pytestmark = pytest.mark.oracle

GROUP = Path("kafka-group-coordinator") / "common" / "message"

# ZooKeeper-era inter-broker requests (gone with ZooKeeper in 4.0), ListClientMetricsResources
# (renamed ListConfigResources on its apiKey 74: a spec is its name, the finding says so) and
# the share group's partition metadata record (type 9, dropped while share groups were in
# preview, KIP-932).
REMOVED_SPECS = {
    "ControlledShutdownRequest",
    "ControlledShutdownResponse",
    "LeaderAndIsrRequest",
    "LeaderAndIsrResponse",
    "StopReplicaRequest",
    "StopReplicaResponse",
    "UpdateMetadataRequest",
    "UpdateMetadataResponse",
    "ListClientMetricsResourcesRequest",
    "ListClientMetricsResourcesResponse",
    "ShareGroupPartitionMetadataKey",
    "ShareGroupPartitionMetadataValue",
}


@pytest.fixture(scope="module")
def previous() -> SpecSet:
    return load_set(previous_kafka_specs())


@pytest.fixture(scope="module")
def pinned() -> SpecSet:
    return load_set(kafka_specs())


def test_previous_release_against_itself_is_clean(previous: SpecSet) -> None:
    # 3.9.0: 186 kafka-clients specs, 22 group, 2 transaction coordinator, 25 metadata,
    # 1 raft and 4 storage specs.
    assert len(previous.specs) == 240
    assert lint(previous, previous).findings == ()


def test_pinned_release_against_itself_is_clean(pinned: SpecSet) -> None:
    # 4.4.0: 286 spec files, 8 of them stubs of removed requests ("validVersions": "none").
    assert len(pinned.specs) == 278
    assert lint(pinned, pinned).findings == ()


def test_previous_to_pinned_finds_the_known_breaks(previous: SpecSet, pinned: SpecSet) -> None:
    result = lint(previous, pinned)
    assert result.exit_code == 1
    breaking = [f for f in result.active() if f.counts]
    assert Counter(f.rule for f in breaking) == {
        # KIP-896 (4.0) removed the old versions of 41 requests, responses and RequestHeader.
        "versions-removed": 41,
        "spec-removed": 12,
        # A share group record changed version 0 while in preview (KIP-932).
        "field-added-to-existing-version": 1,
        "record-type-removed": 1,
    }
    # VoteRequest's Candidate* fields became Replica* (KIP-996), TxnOffsetCommitRequest's
    # GenerationId became GenerationIdOrMemberEpoch: the same bytes under new JSON keys (json,
    # which does not fail by default).
    renamed = {f.spec for f in result.active() if f.rule == "field-renamed"}
    assert renamed == {"VoteRequest", "TxnOffsetCommitRequest"}
    assert {f.category.value for f in result.active() if f.rule == "field-renamed"} == {"json"}
    (heir,) = [f for f in breaking if f.spec == "ListClientMetricsResourcesRequest"]
    assert "ListConfigResourcesRequest now has its apiKey 74" in heir.message
    # The share group RPCs' version 0 was not released (latestVersionUnstable) when 4.1
    # removed it, and ReadShareGroupStateSummaryResponse's changed: notes, not breaks.
    unstable = {f.spec for f in result.active() if f.rule == "unstable-version-changed"}
    assert {"ShareFetchRequest", "ShareFetchResponse", "ReadShareGroupStateSummaryResponse"} <= (
        unstable
    )
    assert {f.spec for f in breaking if f.rule == "spec-removed"} == REMOVED_SPECS
    removed_versions = {f.spec for f in breaking if f.rule == "versions-removed"}
    assert {"ProduceRequest", "FetchResponse", "RequestHeader"} <= removed_versions
    assert all(s.endswith(("Request", "Response", "Header")) for s in removed_versions)
    assert {(f.spec, f.rule) for f in breaking} >= {
        ("ShareGroupMetadataValue", "field-added-to-existing-version"),
        ("ShareGroupPartitionMetadataKey", "record-type-removed"),
    }
    # Every group and transaction coordinator record of 3.9.0 that 4.4.0 still has moved from
    # "type": "data" to coordinator-key/-value, and every key layout stayed the same.
    coordinator = {
        v.name for v in previous.specs if v.rel.startswith(("kafka-group", "kafka-transaction"))
    }
    assert len(coordinator) == 24
    moved = {f.spec for f in result.findings if f.rule == "coordinator-model-changed"}
    assert moved == coordinator - REMOVED_SPECS
    assert not [f for f in result.findings if f.rule == "coordinator-key-changed"]


def _copy(names: list[str], specs: Path, target: Path) -> Path:
    """Copy group coordinator specs of one release (the root of its corpus) into ``target``."""
    target.mkdir(parents=True)
    for name in names:
        shutil.copy(specs / GROUP / f"{name}.json", target / f"{name}.json")
    return target


def _offset_commit_0_to_3(tmp_path: Path) -> Path:
    old = _copy(["OffsetCommitKey", "OffsetCommitValue"], previous_kafka_specs(), tmp_path / "old")
    value = old / "OffsetCommitValue.json"
    text = value.read_text()
    text = text.replace('"validVersions": "0-4"', '"validVersions": "0-3"')
    text = text.replace('"flexibleVersions": "4+"', '"flexibleVersions": "none"')
    value.write_text(text)
    return old


def _downgrade(result: LintResult, type_id: int) -> RecordDowngrade:
    return next(r for r in result.downgrade if r.type_id == type_id)


def test_offset_commit_value_becomes_flexible(tmp_path: Path) -> None:
    old = _offset_commit_0_to_3(tmp_path)
    new = _copy(["OffsetCommitKey", "OffsetCommitValue"], previous_kafka_specs(), tmp_path / "new")
    result = lint(load_set(old), load_set(new))
    assert result.exit_code == 0
    assert found(result) == [
        (
            "coordinator-value-made-flexible",
            "$.flexibleVersions",
            "version 4 of OffsetCommitValue is its first flexible version; readers older than "
            "KIP-915 (Kafka 3.5) cannot read it, so keep writing version 3 until a tagged field "
            "is needed and a downgrade below this release is ruled out",
        ),
    ]
    report = _downgrade(result, 1)
    assert [(str(v.versions), v.readable) for v in report.verdicts] == [("0-3", True), ("4", False)]


def test_offset_commit_value_breaking_variants(tmp_path: Path) -> None:
    old = _copy(["OffsetCommitKey", "OffsetCommitValue"], previous_kafka_specs(), tmp_path / "old")
    variants = {
        "field-type-changed": (
            '"name": "offset", "type": "int64"',
            '"name": "offset", "type": "int32"',
        ),
        "field-removed-from-existing-version": (
            '{ "name": "commitTimestamp", "type": "int64", "versions": "0+" },',
            "",
        ),
        "coordinator-value-untagged-change": ('"validVersions": "0-4"', '"validVersions": "0-5"'),
        "fields-reordered": (
            '"name": "offset", "type": "int64"',
            '"name": "METADATA", "type": "string"',
        ),
    }
    base = (previous_kafka_specs() / GROUP / "OffsetCommitValue.json").read_text()
    for rule, (before, after) in variants.items():
        new = _copy(["OffsetCommitKey"], previous_kafka_specs(), tmp_path / rule)
        text = base.replace(before, after)
        if rule == "coordinator-value-untagged-change":
            text = text.replace(
                '"versions": "0+" },',
                '"versions": "0+" },\n    { "name": "extra", "type": "int32", "versions": "5+" },',
                1,
            )
        if rule == "fields-reordered":  # the two fields change places, with their types
            text = text.replace(
                '{ "name": "metadata", "type": "string"', '{ "name": "offset", "type": "int64"'
            ).replace("METADATA", "metadata")
        (new / "OffsetCommitValue.json").write_text(text)
        result = lint(load_set(old), load_set(new))
        assert result.exit_code == 1, rule
        assert rule in {f.rule for f in result.active()}, (rule, found(result))


def test_offset_commit_value_names_swapped_with_the_same_bytes(tmp_path: Path) -> None:
    # offset (int64) and metadata (string) trade names, not places: the stored bytes read
    # as they were written, but under the other names; a JSON (and code) break, not a wire one
    old = _copy(["OffsetCommitKey", "OffsetCommitValue"], previous_kafka_specs(), tmp_path / "old")
    new = _copy(["OffsetCommitKey"], previous_kafka_specs(), tmp_path / "new")
    text = (old / "OffsetCommitValue.json").read_text()
    text = text.replace('"name": "offset", "type": "int64"', '"name": "METADATA", "type": "int64"')
    text = text.replace(
        '"name": "metadata", "type": "string"', '"name": "offset", "type": "string"'
    )
    (new / "OffsetCommitValue.json").write_text(text.replace("METADATA", "metadata"))
    result = lint(load_set(old), load_set(new))
    assert result.exit_code == 0
    assert found(result) == [
        (
            "field-renamed",
            "$.fields[0].name",
            "versions 0-4 keep their bytes; fields renamed for v0-4: offset -> metadata, "
            "metadata -> offset; the JSON keys and attributes of these versions change with the "
            "names: keep them, or allow field-renamed where no one reads the JSON or the API",
        )
    ]
    strict = LintConfig(fail_categories=frozenset({Category.WIRE, Category.JSON}))
    assert lint(load_set(old), load_set(new), config=strict).exit_code == 1


def test_tagged_field_added_to_flexible_coordinator_value(tmp_path: Path) -> None:
    # 3.9.0 -> 4.4.0: AssignmentEpochs, a tagged field added to version 0 of a flexible value
    # (KIP-1251), together with the move to the coordinator-key/-value model.
    names = ["ConsumerGroupCurrentMemberAssignmentKey", "ConsumerGroupCurrentMemberAssignmentValue"]
    old = _copy(names, previous_kafka_specs(), tmp_path / "old")
    new = _copy(names, kafka_specs(), tmp_path / "new")
    result = lint(load_set(old), load_set(new))
    assert result.exit_code == 0
    assert {f.rule for f in result.findings} == {"coordinator-model-changed"}
    report = _downgrade(result, 8)
    assert [(str(v.versions), v.readable, v.reason) for v in report.verdicts] == [
        ("0", True, "same layout in both specs")
    ]


def test_tagged_field_added_in_the_same_model(tmp_path: Path) -> None:
    names = ["ConsumerGroupCurrentMemberAssignmentKey", "ConsumerGroupCurrentMemberAssignmentValue"]
    old = _copy(names, previous_kafka_specs(), tmp_path / "old")
    new = _copy(names, previous_kafka_specs(), tmp_path / "new")
    value = new / "ConsumerGroupCurrentMemberAssignmentValue.json"
    value.write_text(
        value.read_text().replace(
            '"about": "The partition Ids." }',
            '"about": "The partition Ids." },\n      { "name": "AssignmentEpochs", "type": "[]int32",'
            ' "versions": "0+", "nullableVersions": "0+", "taggedVersions": "0+", "tag": 0,'
            ' "default": "null", "about": "Epochs." }',
        )
    )
    result = lint(load_set(old), load_set(new))
    assert result.findings == ()


def test_new_value_version_with_tagged_field_is_readable_after_downgrade(tmp_path: Path) -> None:
    names = ["ConsumerGroupMetadataKey", "ConsumerGroupMetadataValue"]
    old = _copy(names, previous_kafka_specs(), tmp_path / "old")
    new = _copy(names, previous_kafka_specs(), tmp_path / "new")
    value = new / "ConsumerGroupMetadataValue.json"
    text = value.read_text().replace('"validVersions": "0"', '"validVersions": "0-1"')
    text = text.replace(
        '"fields": [',
        '"fields": [\n    { "name": "Note", "type": "string", '
        '"versions": "1+", "taggedVersions": "1+", "tag": 0 },',
        1,
    )
    value.write_text(text)
    result = lint(load_set(old), load_set(new))
    assert result.exit_code == 0
    report = _downgrade(result, 3)
    assert [(str(v.versions), v.readable, v.reason) for v in report.verdicts] == [
        ("0", True, "same layout in both specs"),
        (
            "1",
            True,
            "KIP-915: old readers parse it as version 0; new tagged fields are kept as "
            "unknown tags",
        ),
    ]
