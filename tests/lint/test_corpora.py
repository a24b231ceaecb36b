"""The lint on Kafka's own specs: clean against itself, right on real evolutions."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from codegen.lint import LintResult, SpecSet, lint, load_set
from codegen.lint.records import RecordDowngrade
from tests.lint.helpers import found

SHARED = Path(__file__).resolve().parents[3] / "shared"
CORPUS = SHARED / "kafka-specs"
LATEST = SHARED / "kafka-specs-latest"
GROUP = "group-coordinator/src/main/resources/common/message"

pytestmark = pytest.mark.skipif(not CORPUS.is_dir(), reason="the shared Kafka specs are absent")


@pytest.fixture(scope="module")
def corpus() -> SpecSet:
    return load_set(CORPUS)


@pytest.fixture(scope="module")
def latest() -> SpecSet:
    return load_set(LATEST)


def test_corpus_against_itself_is_clean(corpus: SpecSet) -> None:
    assert len(corpus.specs) == 258
    result = lint(corpus, corpus)
    assert result.findings == ()


def test_latest_against_itself_is_clean(latest: SpecSet) -> None:
    assert len(latest.specs) == 56
    assert lint(latest, latest).findings == ()


def test_corpus_to_latest_finds_the_known_breaks(corpus: SpecSet, latest: SpecSet) -> None:
    result = lint(corpus, latest)
    breaking = {(f.spec, f.rule) for f in result.active() if f.counts}
    # KIP-932 share records changed incompatibly while in preview (kafka-reference C.6),
    # and GroupMetadataValue dropped rebalanceTimeout's default of -1.
    assert ("ShareUpdateValue", "field-type-changed") in breaking
    assert ("GroupMetadataValue", "default-changed") in breaking
    # The move to coordinator-key/-value keeps every key layout: no key findings.
    assert not [f for f in result.findings if f.rule == "coordinator-key-changed"]
    assert "coordinator-model-changed" in {f.rule for f in result.findings}


def _copy(names: list[str], source: Path, target: Path) -> Path:
    target.mkdir(parents=True)
    for name in names:
        shutil.copy(source / GROUP / f"{name}.json", target / f"{name}.json")
    return target


def _offset_commit_0_to_3(tmp_path: Path) -> Path:
    old = _copy(["OffsetCommitKey", "OffsetCommitValue"], CORPUS, tmp_path / "old")
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
    new = _copy(["OffsetCommitKey", "OffsetCommitValue"], CORPUS, tmp_path / "new")
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
    old = _copy(["OffsetCommitKey", "OffsetCommitValue"], CORPUS, tmp_path / "old")
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
            '"name": "metadata", "type": "int64"',
        ),
    }
    base = (CORPUS / GROUP / "OffsetCommitValue.json").read_text()
    for rule, (before, after) in variants.items():
        new = _copy(["OffsetCommitKey"], CORPUS, tmp_path / rule)
        text = base.replace(before, after)
        if rule == "coordinator-value-untagged-change":
            text = text.replace(
                '"versions": "0+" },',
                '"versions": "0+" },\n    { "name": "extra", "type": "int32", "versions": "5+" },',
                1,
            )
        if rule == "fields-reordered":
            text = text.replace(
                '{ "name": "metadata", "type": "string"', '{ "name": "offset", "type": "string"'
            )
        (new / "OffsetCommitValue.json").write_text(text)
        result = lint(load_set(old), load_set(new))
        assert result.exit_code == 1, rule
        assert rule in {f.rule for f in result.active()}, (rule, found(result))


def test_tagged_field_added_to_flexible_coordinator_value(tmp_path: Path) -> None:
    # AssignmentEpochs: a tagged field added to version 0 of a flexible value (KIP-1251),
    # together with the move to the coordinator-key/-value model.
    names = ["ConsumerGroupCurrentMemberAssignmentKey", "ConsumerGroupCurrentMemberAssignmentValue"]
    old = _copy(names, CORPUS, tmp_path / "old")
    new = _copy(names, LATEST, tmp_path / "new")
    result = lint(load_set(old), load_set(new))
    assert result.exit_code == 0
    assert {f.rule for f in result.findings} == {"coordinator-model-changed"}
    report = _downgrade(result, 8)
    assert [(str(v.versions), v.readable, v.reason) for v in report.verdicts] == [
        ("0", True, "same layout in both specs")
    ]


def test_tagged_field_added_in_the_same_model(tmp_path: Path) -> None:
    names = ["ConsumerGroupCurrentMemberAssignmentKey", "ConsumerGroupCurrentMemberAssignmentValue"]
    old = _copy(names, CORPUS, tmp_path / "old")
    new = _copy(names, CORPUS, tmp_path / "new")
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
    old = _copy(names, CORPUS, tmp_path / "old")
    new = _copy(names, CORPUS, tmp_path / "new")
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
