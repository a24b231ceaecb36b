"""Dump decoding with a codec package other than the shipped one.

A package generated from a newer coordinator spec set (``tests/data/newer_coordinator``) decodes
a record type and a value version the shipped ``generated`` package does not know: through the
Python API, ``python -m codegen dump --package`` and ``--specs``.
"""

from __future__ import annotations

import json
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import newer_specs
import pytest
from click.testing import CliRunner

from codegen.dumps.command import dump_command
from codegen.dumps.coordinator import (
    TRANSACTION_STATE,
    coordinator_decoder,
    decode_records,
    record_types,
)
from codegen.dumps.decoded import RECORD, UNKNOWN
from codegen.dumps.metadata import metadata_decoder
from codegen.dumps.packages import PackageError
from generated.topic_record import TopicRecord


@pytest.fixture(scope="module")
def newer(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ModuleType]:
    parent = newer_specs.generate(tmp_path_factory.mktemp("newer"))
    yield newer_specs.import_package(parent)
    sys.path.remove(str(parent))
    for name in [m for m in sys.modules if m.split(".")[0] == newer_specs.PACKAGE]:
        del sys.modules[name]


@pytest.fixture
def dump(newer: ModuleType, tmp_path: Path) -> Path:
    return newer_specs.write_dump(tmp_path, newer)


def test_shipped_package_reports_the_new_type_unknown_and_reads_the_new_version_as_newer(
    dump: Path,
) -> None:
    log, audit = decode_records(dump, TRANSACTION_STATE)
    assert (log.kind, log.value_version, log.newer_than_spec) == (RECORD, 2, True)
    assert not hasattr(log.value, "coordinator_epoch")
    assert (audit.kind, audit.record_type, audit.value) == (UNKNOWN, 1, None)


@pytest.mark.parametrize("by", ["name", "module"])
def test_newer_package_decodes_the_new_type_and_version(
    dump: Path, newer: ModuleType, by: str
) -> None:
    package = newer_specs.PACKAGE if by == "name" else newer
    log, audit = decode_records(dump, TRANSACTION_STATE, package=package)
    assert (log.kind, log.value_version, log.newer_than_spec) == (RECORD, 2, False)
    assert type(log.value) is newer.MESSAGES["TransactionLogValue"]
    assert log.value.coordinator_epoch == newer_specs.COORDINATOR_EPOCH
    assert (audit.kind, audit.record_type, audit.name) == (RECORD, 1, "TransactionAudit")
    assert getattr(audit.key, "transactional_id", None) == newer_specs.TRANSACTIONAL_ID
    assert (audit.value.action, audit.value.operator) == ("fenced", "ops")


def test_record_types_and_decoders_are_per_package(newer: ModuleType) -> None:
    assert set(record_types(TRANSACTION_STATE)) == {0}
    assert set(record_types(TRANSACTION_STATE, newer_specs.PACKAGE)) == {0, 1}
    shipped = coordinator_decoder(TRANSACTION_STATE)
    assert coordinator_decoder(TRANSACTION_STATE, newer) is not shipped
    assert coordinator_decoder(TRANSACTION_STATE, "generated") is shipped


def test_metadata_decoder_uses_the_package_classes(newer: ModuleType) -> None:
    """The newer package has no metadata specs: its decoder knows no metadata record."""
    frame = b"\x01\x02\x00" + TopicRecord(name="t").encode(0)  # frame 1, apiKey 2, version 0
    assert metadata_decoder().decode(frame).kind == RECORD
    assert metadata_decoder(newer).decode(frame).kind == UNKNOWN


def test_a_package_that_cannot_be_imported_is_named() -> None:
    with pytest.raises(PackageError, match="cannot import the codec package 'no_such_codecs'"):
        record_types(TRANSACTION_STATE, "no_such_codecs")


def _dump_lines(args: list[str]) -> list[dict[str, object]]:
    res = CliRunner().invoke(dump_command, args)
    assert res.exit_code == 0, res.output
    return [json.loads(line) for line in res.stdout.splitlines()]


def test_cli_dump_with_the_shipped_package(dump: Path) -> None:
    log, audit = _dump_lines([str(dump)])
    assert log["isNewerVersion"] is True and "coordinatorEpoch" not in json.dumps(log["value"])
    assert audit["kind"] == UNKNOWN


def _check_newer(lines: list[dict[str, object]]) -> None:
    log, audit = lines
    assert log["kind"] == RECORD and "isNewerVersion" not in log
    assert log["value"] == {"version": "2", "data": NEWER_LOG_VALUE}
    assert (audit["kind"], audit["recordName"]) == (RECORD, "TransactionAudit")
    assert audit["value"] == {"version": "0", "data": AUDIT_VALUE}


NEWER_LOG_VALUE = {
    "producerId": 42,
    "producerEpoch": 3,
    "transactionTimeoutMs": 60000,
    "transactionStatus": 0,
    "transactionPartitions": [],
    "transactionLastUpdateTimestampMs": 0,
    "transactionStartTimestampMs": 0,
    "coordinatorEpoch": newer_specs.COORDINATOR_EPOCH,
}
AUDIT_VALUE = {"producerId": 42, "action": "fenced", "operator": "ops"}


def test_cli_dump_package(dump: Path, newer: ModuleType) -> None:
    _check_newer(_dump_lines([str(dump), "--package", newer_specs.PACKAGE]))


def test_cli_dump_specs_generates_into_a_folder_it_removes(
    dump: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    path_before, modules_before = list(sys.path), set(sys.modules)
    _check_newer(_dump_lines([str(dump), "--specs", str(newer_specs.SPECS)]))
    assert list(scratch.iterdir()) == []
    assert sys.path == path_before
    assert not {m for m in set(sys.modules) - modules_before if "kafka_specgen_dump" in m}


def test_cli_dump_log_format_uses_the_package(dump: Path, newer: ModuleType) -> None:
    args = [str(dump), "--format", "dump-log", "--package", newer_specs.PACKAGE]
    res = CliRunner().invoke(dump_command, args)
    assert res.exit_code == 0, res.output
    value = json.dumps({"version": "2", "data": NEWER_LOG_VALUE}, separators=(",", ":"))
    assert f"payload: {value}" in res.stdout
    audit = json.dumps({"version": "0", "data": AUDIT_VALUE}, separators=(",", ":"))
    assert f"payload: {audit}" in res.stdout


def test_cli_dump_package_that_cannot_be_imported_is_a_usage_error(dump: Path) -> None:
    res = CliRunner().invoke(dump_command, [str(dump), "--package", "no_such_codecs"])
    assert res.exit_code == 2
    assert "--package" in res.stderr and "cannot import the codec package" in res.stderr


def test_cli_dump_package_and_specs_together_is_a_usage_error(dump: Path) -> None:
    args = [str(dump), "--package", "generated", "--specs", str(newer_specs.SPECS)]
    res = CliRunner().invoke(dump_command, args)
    assert res.exit_code == 2 and "not both" in res.stderr
