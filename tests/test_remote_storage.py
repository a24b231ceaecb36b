"""Remote segments read like local ones: Kafka's LocalTieredStorage layout
(``codegen.dumps.remote_storage``) on the files of a real tiered broker run
(``tests/data/tiered``, PROVENANCE.md there), ``dump`` over a log dir and its remote storage
(each partition's remote and local segments in offset order, without overlap: every offset of
the partition once, as many as the broker's own offsets say), the same from object storage, and
``--format dump-log`` of remote files against Kafka's DumpLogSegments on the same files under
local names."""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Any

import pytest
from oracle import KafkaOracle, missing_reason

from codegen.dumps.log_dirs import RowSource, input_files, tiered_order
from codegen.dumps.remote_storage import (
    is_remote_storage,
    readable_segments,
    remote_file_name,
    remote_partition,
    remote_partitions,
    remote_segments,
)
from codegen.dumps.run import dump_log_run
from codegen.dumps.segments import segment_file_info

ROOT = Path(__file__).resolve().parent.parent
TIERED = ROOT / "tests" / "data" / "tiered"
LOGS, REMOTE = TIERED / "logs", TIERED / "remote"
TRUTH = json.loads((TIERED / "truth.json").read_text())


def _partition(topic: str, partition: int) -> Any:
    return next(
        p for p in remote_partitions(REMOTE) if (p.topic, p.partition) == (topic, partition)
    )


def test_names() -> None:
    assert remote_file_name("00000000000000000031-4irn0QFrSjOa5aW6TK4FFA.log") == (
        31,
        "4irn0QFrSjOa5aW6TK4FFA",
        ".log",
    )
    assert remote_file_name("00000000000000000031-4irn0QFrSjOa5aW6TK4FFA.leader_epoch_checkpoint")
    assert remote_file_name("00000000000000000031.log") is None
    assert remote_file_name("31-short.log") is None
    # a topic name with dashes, an id with dashes and underscores
    part = remote_partition(Path("a-b-12-x_-yz0123456789ABCDEFG"))
    assert part is not None and (part.topic, part.partition, part.topic_id) == (
        "a-b",
        12,
        "x_-yz0123456789ABCDEFG",
    )
    assert remote_partition(Path("orders-3")) is None
    info = segment_file_info("00000000000000000031-4irn0QFrSjOa5aW6TK4FFA.log")
    assert (info.kind, info.base_offset, info.segment_id) == ("log", 31, "4irn0QFrSjOa5aW6TK4FFA")


def test_storage_roots() -> None:
    assert is_remote_storage(REMOTE) and is_remote_storage(REMOTE / "kafka-tiered-storage")
    assert not is_remote_storage(LOGS) and not is_remote_storage(LOGS / "tiered-0")
    found = {(p.topic, p.partition) for p in remote_partitions(REMOTE)}
    topic_ids = TRUTH["topicIds"]
    # the deleted topic's folder was left empty, which git does not keep
    assert {("tiered", 0), ("tiered", 1), ("tiered-kept", 0)} == found
    for p in remote_partitions(REMOTE):
        if p.topic in topic_ids:
            assert p.topic_id == topic_ids[p.topic]
    one = _partition("tiered", 1)
    assert remote_partitions(one.folder) == [one]


def test_the_killed_upload_is_left_out() -> None:
    """The copy the broker was killed in holds a segment and its offset index; the copy after
    the restart, of the same offsets, is complete and is the one read."""
    copies = remote_segments(_partition("tiered", 0))
    partial = [c for c in copies if not c.complete]
    assert len(partial) == 1
    assert set(partial[0].files) == {".log", ".index"}
    assert partial[0].missing == [".timeindex", ".leader_epoch_checkpoint", ".snapshot"]
    twins = [c for c in copies if c.base_offset == partial[0].base_offset]
    assert len(twins) == 2
    chosen = readable_segments(copies)
    assert partial[0] not in chosen and all(c.complete for c in chosen)
    assert [c.base_offset for c in chosen] == sorted({c.base_offset for c in copies})


def test_row_source_of_a_remote_file() -> None:
    copy = readable_segments(remote_segments(_partition("tiered", 1)))[0]
    assert copy.log is not None
    source = RowSource.of(copy.log, None)
    assert (source.topic, source.partition) == ("tiered", 1)


def test_local_and_remote_in_offset_order() -> None:
    files = input_files((LOGS / "tiered-kept-0", LOGS / "tiered-0", REMOTE), None)
    ordered, bounds = tiered_order(files)
    kept = [f for f in ordered if "tiered-kept" in str(f)]
    # tiered-kept holds every segment locally too: no remote copy is read
    assert all(f.parent == LOGS / "tiered-kept-0" for f in kept)
    zero = [f for f in ordered if RowSource.of(f, None).label == "tiered-0"]
    bases = [segment_file_info(f.name).base_offset for f in zero]
    assert bases == sorted(bases) and zero[-1].parent == LOGS / "tiered-0"
    remote_zero = [f for f in zero if f.parent != LOGS / "tiered-0"]
    assert all(bounds[f] > (segment_file_info(f.name).base_offset or 0) for f in remote_zero)


def _cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    return subprocess.run(
        [sys.executable, "-m", "codegen", *args],
        capture_output=True,
        text=True,
        env={**base, **(env or {})},
        timeout=300,
        cwd=ROOT,
        check=False,
    )


def _offsets(jsonl: str) -> dict[str, list[int]]:
    by_partition: dict[str, list[int]] = {}
    for line in jsonl.splitlines():
        row = json.loads(line)
        if row.get("kind") == "record":
            by_partition.setdefault(f"{row['topic']}-{row['partition']}", []).append(row["offset"])
    return by_partition


def test_dump_reads_every_offset_once() -> None:
    """Each data partition's records from the log start to the log end the broker answered,
    once each, in offset order: the remote segments below the local log start, the local ones
    from it."""
    done = _cli("dump", str(LOGS), str(REMOTE))
    assert done.returncode == 0, done.stderr
    offsets = _offsets(done.stdout)
    for label, answers in TRUTH["partitions"].items():
        assert offsets[label] == list(range(answers["earliest"], answers["latest"])), label


def test_remote_storage_alone() -> None:
    done = _cli("dump", str(REMOTE), "--format", "jsonl")
    assert done.returncode == 0, done.stderr
    offsets = _offsets(done.stdout)
    for label in ("tiered-0", "tiered-1", "tiered-kept-0"):
        got = offsets[label]
        assert got == sorted(set(got)) and got[0] == 0
        assert got[-1] == TRUTH["partitions"][label]["latestTiered"]


def test_a_remote_storage_has_no_internal_topic() -> None:
    done = _cli("dump", str(REMOTE), "--topic", "offsets")
    assert done.returncode == 2 and "remote storage" in done.stderr


# ------------------------------------------------------------------------ object storage


@pytest.mark.xdist_group("s3")
def test_from_object_storage_as_from_disk(s3_server: Any, tmp_path: Path) -> None:
    import s3server

    run = tmp_path / "run"
    shutil.copytree(TIERED, run)
    url = s3server.upload(s3_server, run, "backups/tiered")
    on_disk = _cli("dump", str(run / "logs"), str(run / "remote"), "--format", "jsonl")
    on_s3 = _cli(
        "dump", f"{url}/logs", f"{url}/remote", "--format", "jsonl", env=s3_server.environment()
    )
    assert on_s3.returncode == on_disk.returncode == 0, on_s3.stderr
    assert _offsets(on_s3.stdout) == _offsets(on_disk.stdout)


# ----------------------------------------------------------------------- Kafka's own tool

_MISSING = missing_reason()


@pytest.fixture(scope="module")
def oracle() -> Iterator[KafkaOracle]:
    if _MISSING is not None:
        pytest.skip(f"Kafka oracle: {_MISSING}")
    with KafkaOracle() as o:
        yield o


REMOTE_FILES = sorted(
    f for f in REMOTE.rglob("*") if f.is_file() and remote_file_name(f.name) is not None
)


@pytest.mark.oracle
@pytest.mark.parametrize("path", REMOTE_FILES, ids=lambda p: p.name)
def test_dump_log_of_a_remote_file_is_kafkas_of_the_local_name(
    oracle: KafkaOracle, path: Path, tmp_path: Path
) -> None:
    """Kafka's tool cannot take a base offset from a remote name (NumberFormatException); the
    same files under a local segment's names print what we print for the remote ones."""
    parsed = remote_file_name(path.name)
    assert parsed is not None
    stem = path.name.split(".")[0]
    local_stem = f"{parsed[0]:020d}"
    for sibling in path.parent.glob(f"{stem}.*"):
        shutil.copy(sibling, tmp_path / (local_stem + sibling.name[len(stem) :]))
    local = tmp_path / (local_stem + parsed[2])
    theirs = oracle.dump_log_result(["--files", str(local), "--deep-iteration", "--print-data-log"])
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        dump_log_run([path], [None])
    as_local = out.getvalue().replace(str(path.parent), str(tmp_path)).replace(stem, local_stem)
    assert as_local == theirs["stdout"]
    if theirs["ok"]:
        assert (
            err.getvalue().replace(str(path.parent), str(tmp_path)).replace(stem, local_stem)
            == theirs["stderr"]
        )
