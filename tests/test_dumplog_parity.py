"""Real-data parity: ``--format dump-log`` against Kafka's DumpLogSegments (4.3.1), file by file.

Every file of ``tests/data/kafka-data`` (broker folders: internal and ordinary topics, snapshots,
producer-state snapshots, the partition's small text files) and of ``tests/data/dumplog``
(files made by ``tests/data/dumplog/build.py``: a corrupt batch, legacy messages, records Kafka's
decoders reject, index files) is dumped by both tools, with the decoder ``--topic auto`` picks;
stdout must be the same text, and so must the non-consecutive-offsets block on stderr.
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from typing import cast

import pytest
from oracle import KafkaOracle, missing_reason

from codegen.dumps.dumplog_json import DECODER_OPTIONS
from codegen.dumps.log_dirs import guess_topic
from codegen.dumps.run import dump_log_run

ROOT = Path(__file__).resolve().parent
DATA_DIRS = (ROOT / "data" / "kafka-data", ROOT / "data" / "dumplog")
ALL_FILES = sorted(
    p for d in DATA_DIRS for p in d.rglob("*") if p.is_file() and p.suffix not in (".py", ".md")
)

_MISSING = missing_reason()
pytestmark = [
    pytest.mark.oracle,
    pytest.mark.skipif(_MISSING is not None, reason=f"Kafka oracle: {_MISSING}"),
]


@pytest.fixture(scope="module")
def oracle() -> Iterator[KafkaOracle]:
    with KafkaOracle() as o:
        yield o


def _rel(path: Path) -> str:
    return str(path.relative_to(ROOT.parent))


def _ours(path: Path, topic: str | None, options: dict[str, object]) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        dump_log_run([path], [topic], **options)  # type: ignore[arg-type]
    return out.getvalue(), err.getvalue()


def _kafka_args(path: Path, topic: str | None) -> list[str]:
    decoder = DECODER_OPTIONS.get(topic or "")
    return ["--files", str(path), "--deep-iteration", "--print-data-log"] + (
        [decoder] if decoder else []
    )


def _compare(oracle: KafkaOracle, path: Path, options: dict[str, object], extra: list[str]) -> None:
    topic = guess_topic(path)
    theirs = oracle.dump_log_result(_kafka_args(path, topic) + extra)
    ours, our_err = _ours(path, topic, options)
    assert ours == theirs["stdout"]
    if theirs["ok"]:
        assert our_err == theirs["stderr"]
    else:  # the tool threw: the harness reports the exception instead of its stderr text
        error = str(cast(dict[str, object], theirs)["error"])
        assert error.split(": ", 1)[1] + "\n" == our_err


@pytest.mark.parametrize("path", ALL_FILES, ids=_rel)
def test_file(oracle: KafkaOracle, path: Path) -> None:
    _compare(oracle, path, {}, [])


OPTIONS: list[tuple[str, dict[str, object], list[str]]] = [
    ("skip-record-metadata", {"skip_record_metadata": True}, ["--skip-record-metadata"]),
    ("max-bytes", {"max_bytes": 200}, ["--max-bytes", "200"]),
    ("verify-index-only", {"verify_index_only": True}, ["--verify-index-only"]),
    ("index-sanity-check", {"index_sanity_check": True}, ["--index-sanity-check"]),
]
OPTION_FILES = [
    p
    for p in ALL_FILES
    if p.suffix in (".log", ".index", ".timeindex", ".checkpoint") and p.stat().st_size < 20000
]


@pytest.mark.parametrize("path", OPTION_FILES, ids=_rel)
@pytest.mark.parametrize(("name", "options", "extra"), OPTIONS, ids=[o[0] for o in OPTIONS])
def test_options(
    oracle: KafkaOracle, path: Path, name: str, options: dict[str, object], extra: list[str]
) -> None:
    _compare(oracle, path, options, extra)
