"""Differential test: our kafka-dump-log text against Kafka's DumpLogSegments (4.3.1)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from oracle import KafkaOracle, missing_reason
from test_dumps_records import DATA, METADATA_FILES, OFFSETS_FILES, _synth_segment

from codegen.dumps.coordinator import CONSUMER_OFFSETS
from codegen.dumps.dumplog_json import DECODER_OPTIONS, dump_log_lines
from codegen.dumps.metadata import CLUSTER_METADATA

_MISSING = missing_reason()
pytestmark = [
    pytest.mark.oracle,
    pytest.mark.skipif(_MISSING is not None, reason=f"Kafka oracle: {_MISSING}"),
]


@pytest.fixture(scope="module")
def oracle() -> Iterator[KafkaOracle]:
    with KafkaOracle() as o:
        yield o


def _compare(oracle: KafkaOracle, path: Path, topic: str) -> None:
    theirs = oracle.dump_log(["--files", str(path), DECODER_OPTIONS[topic]]).splitlines()
    ours = list(dump_log_lines(str(path), topic))
    diffs = [(a, b) for a, b in zip(ours, theirs, strict=False) if a != b]
    assert len(ours) == len(theirs)
    assert not diffs, diffs[:3]


@pytest.mark.parametrize("path", [p for p, _, _ in OFFSETS_FILES])
def test_offsets_files(oracle: KafkaOracle, path: str) -> None:
    _compare(oracle, DATA / path, CONSUMER_OFFSETS)


@pytest.mark.parametrize("path", [p for p, _ in METADATA_FILES])
def test_metadata_files(oracle: KafkaOracle, path: str) -> None:
    _compare(oracle, DATA / path, CLUSTER_METADATA)


def test_synthesized_segment(oracle: KafkaOracle, tmp_path: Path) -> None:
    path = tmp_path / "00000000000000000000.log"
    _synth_segment(path)
    _compare(oracle, path, CONSUMER_OFFSETS)
