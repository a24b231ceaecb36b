"""The tiered-storage report (``python -m codegen tiered``, :mod:`codegen.tiered.report`, the
view :mod:`codegen.dumps.views.tiered`): on a real tiered broker's run (``tests/data/tiered``) against
what the broker itself answered (ListOffsets earliest, earliest-local, latest-tiered, latest;
describeLogDirs) and its remote folder's listing; on that run with objects deleted from the
remote storage (a hole, with the offsets lost); at a moment during the broker's half-done
upload (``--as-of``); and each rule on small made-up facts."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from codegen.dumps.remote_storage import remote_partitions, remote_segments
from codegen.dumps.views.tiered import partition_view
from codegen.dumps.views.tiered_schemas import FACT_SCHEMA
from codegen.tiered.command import parse_duration
from codegen.tiered.report import tiered_report

ROOT = Path(__file__).resolve().parent.parent
TIERED = ROOT / "tests" / "data" / "tiered"
LOGS, REMOTE = TIERED / "logs", TIERED / "remote"
TRUTH = json.loads((TIERED / "truth.json").read_text())
DELETED = json.loads((TIERED / "deleted-topic.json").read_text())


def _by_label(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {f"{r['topic']}-{r['partition']}": r for r in rows}


@pytest.fixture(scope="module")
def run_report() -> Any:
    return tiered_report([LOGS, REMOTE])


def test_offsets_are_the_brokers_answers(run_report: Any) -> None:
    """Per partition the log start, local log start, remote end and log end the broker
    answered to ListOffsets earliest, earliest-local, latest-tiered and latest, and its local
    bytes (describeLogDirs)."""
    partitions = _by_label(run_report.sections.partitions.to_pylist())
    for label, answers in TRUTH["partitions"].items():
        p = partitions[label]
        assert p["logStartOffset"] == answers["earliest"], label
        assert p["localLogStartOffset"] == answers["earliestLocal"], label
        assert p["remoteEndOffset"] == answers["latestTiered"], label
        assert p["logEndOffset"] == answers["latest"], label
        assert p["localBytes"] == answers["localBytes"], label
        assert p["topicId"] == TRUTH["topicIds"][label.rsplit("-", 1)[0]]
        assert p["holes"] == [] and p["epochMismatches"] == 0


def test_remote_bytes_and_records_are_the_listings(run_report: Any) -> None:
    """What each partition keeps remotely is what its remote folder lists: every object's
    bytes, and the records of the served segments, which cover the remote offsets once."""
    partitions = _by_label(run_report.sections.partitions.to_pylist())
    for folder in remote_partitions(REMOTE):
        p = partitions[folder.label]
        listed = sum(f.stat().st_size for f in folder.folder.iterdir())
        assert p["remoteStoredBytes"] == listed
        answers = TRUTH["partitions"][folder.label]
        assert p["remoteRecords"] == answers["latestTiered"] + 1 - answers["earliest"]
    topics = {t["topic"]: t for t in run_report.sections.topics.to_pylist()}
    tiered = [partitions["tiered-0"], partitions["tiered-1"]]
    assert topics["tiered"]["remoteBytes"] == sum(p["remoteBytes"] for p in tiered)
    assert topics["local-only"]["remoteSegments"] == 0
    assert topics["local-only"]["localRecords"] == TRUTH["partitions"]["local-only-0"]["latest"]


def test_the_killed_upload_is_abandoned_with_its_objects(run_report: Any) -> None:
    segments = run_report.sections.segments.to_pylist()
    abandoned = [s for s in segments if s["status"] == "upload-abandoned"]
    assert len(abandoned) == 1
    s = abandoned[0]
    assert (s["topic"], s["partition"], s["state"]) == ("tiered", 0, "COPY_SEGMENT_STARTED")
    assert s["files"] == [".index", ".log"] and s["ageMs"] > 0
    partial = next(
        c
        for f in remote_partitions(REMOTE)
        if f.label == "tiered-0"
        for c in remote_segments(f)
        if not c.complete
    )
    assert s["segmentId"] == partial.segment_id
    again = [
        x
        for x in segments
        if (x["topic"], x["partition"], x["startOffset"]) == ("tiered", 0, s["startOffset"])
        and x is not s
    ]
    assert [x["status"] for x in again] == ["remote"]
    assert again[0]["copyStartedMs"] > s["copyStartedMs"]
    assert any("upload abandoned" in f for f in run_report.findings)


def test_the_deleted_topic(run_report: Any) -> None:
    segments = [s for s in run_report.sections.segments.to_pylist() if s["topic"] == "tiered-gone"]
    assert segments and all(s["status"] == "deleted" and not s["files"] for s in segments)
    assert {s["topicId"] for s in segments} == {DELETED["topicId"]}
    events = [e for e in run_report.sections.events.to_pylist() if e["topic"] == "tiered-gone"]
    states = {e["state"] for e in events}
    assert states == {
        "COPY_SEGMENT_STARTED",
        "COPY_SEGMENT_FINISHED",
        "DELETE_SEGMENT_STARTED",
        "DELETE_SEGMENT_FINISHED",
    }
    gone = _by_label(run_report.sections.partitions.to_pylist())["tiered-gone-0"]
    assert not gone["localLog"] and gone["remoteSegments"] == 0


def test_leader_epochs_of_the_new_leader(run_report: Any) -> None:
    """The restart made a new leader epoch: the segments copied after it carry it, and every
    epoch agrees with the partition's checkpoint."""
    epochs = run_report.sections.epochs.to_pylist()
    assert {e["status"] for e in epochs} == {"agrees"}
    assert {e["epoch"] for e in epochs} == {0, 2}


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "codegen", "tiered", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
        check=False,
    )


def test_command_line_formats() -> None:
    table = _cli(str(LOGS), str(REMOTE))
    assert table.returncode == 1, table.stderr  # the abandoned upload is a finding
    assert "upload abandoned" in table.stdout and "topics: remote versus local" in table.stdout
    lines = [
        json.loads(x) for x in _cli(str(LOGS), str(REMOTE), "--format", "jsonl").stdout.splitlines()
    ]
    kinds = {x["kind"] for x in lines}
    assert kinds == {"report", "topic", "partition", "segment", "event", "epoch", "finding"}
    page = _cli(str(LOGS), str(REMOTE), "--format", "html").stdout
    assert page.startswith("<!DOCTYPE html>") and "<svg" in page and "upload abandoned" in page


def test_bad_input_is_exit_2(tmp_path: Path) -> None:
    nothing = _cli(str(tmp_path))
    assert nothing.returncode == 2 and "expected broker log dirs" in nothing.stderr
    offset = _cli(str(LOGS), "--as-of", "17")
    assert offset.returncode == 2 and "not a log offset" in offset.stderr
    assert _cli(str(LOGS), "--stuck-after", "soon").returncode == 2
    assert parse_duration("90s") == 90_000 and parse_duration("2h") == 7_200_000


def test_objects_deleted_from_the_remote_storage_are_a_hole(tmp_path: Path) -> None:
    """A bucket rule deleted a served segment's objects: its offsets are lost, and said."""
    copy = tmp_path / "run"
    shutil.copytree(TIERED, copy)
    folder = next(f for f in remote_partitions(copy / "remote") if f.label == "tiered-1")
    victim = next(c for c in remote_segments(folder) if c.base_offset > 0)
    for f in victim.files.values():
        f.unlink()
    report = tiered_report([copy / "logs", copy / "remote"])
    p = _by_label(report.sections.partitions.to_pylist())["tiered-1"]
    seg = next(
        s for s in report.sections.segments.to_pylist() if s["segmentId"] == victim.segment_id
    )
    assert seg["status"] == "objects-missing"
    assert p["holes"] == [
        {
            "firstOffset": victim.base_offset,
            "lastOffset": seg["endOffset"],
            "reason": f"objects of {victim.segment_id} missing",
        }
    ]
    assert p["offsetsLost"] == seg["endOffset"] - victim.base_offset + 1
    assert any("are lost" in f for f in report.findings)


def test_the_html_page_renders_in_headless_chromium(tmp_path: Path) -> None:
    """The page as a browser draws it: each partition's bar shows its remote segments, its
    local log, the abandoned upload above them and the hole of objects deleted from the
    bucket, each in its legend's colour (a test of the page, not of its text)."""
    from matplotlib.image import imread

    from codegen.tiered.command import _COLOURS, render_html

    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:  # a failure under CI=true (tests/skips.py): make setup installs it
        pytest.skip("headless Chromium not installed (sudo apt-get install -y chromium)")
    copy = tmp_path / "run"
    shutil.copytree(TIERED, copy)
    folder = next(f for f in remote_partitions(copy / "remote") if f.label == "tiered-1")
    victim = next(c for c in remote_segments(folder) if c.base_offset > 0)
    for f in victim.files.values():
        f.unlink()
    page = tmp_path / "tiered.html"
    page.write_text(render_html(tiered_report([copy / "logs", copy / "remote"]), "tiered"))
    shot = tmp_path / "shot.png"
    subprocess.run(
        [browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
         "--window-size=1200,2400", f"--screenshot={shot}", page.as_uri()],
        check=True, capture_output=True, timeout=120,
    )  # fmt: skip
    pixels = imread(str(shot))[:, :, :3]
    for name, colour in _COLOURS.items():
        target = [int(colour[i : i + 2], 16) / 255 for i in (1, 3, 5)]
        close = (abs(pixels - target) < 0.02).all(axis=2)
        assert close.sum() > 300, f"{name} ({colour}) is not drawn"  # its legend square: 49


def test_as_of_during_the_killed_upload() -> None:
    """At a moment the half-done copy was running: it is still copying (or stuck, past
    --stuck-after); the copy made after the restart does not exist yet."""
    base = tiered_report([LOGS, REMOTE])
    killed = next(
        s for s in base.sections.segments.to_pylist() if s["status"] == "upload-abandoned"
    )
    moment = killed["copyStartedMs"] + 1000
    report = tiered_report([LOGS, REMOTE], as_of_ms=moment)
    statuses = {s["segmentId"]: s["status"] for s in report.sections.segments.to_pylist()}
    assert statuses[killed["segmentId"]] == "copying"
    assert "orphan-objects" not in statuses.values()
    assert len(statuses) < base.sections.segments.num_rows
    stuck = tiered_report([LOGS, REMOTE], as_of_ms=moment, stuck_after_ms=500)
    assert "upload-stuck" in {s["status"] for s in stuck.sections.segments.to_pylist()}
    zero = _by_label(report.sections.partitions.to_pylist())["tiered-0"]
    assert zero["localLogStartOffset"] is None and zero["holes"] == []
    assert any("unknown" in n for n in zero["notes"])


def test_dump_compacted_gives_each_segments_state() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "codegen", "dump", str(LOGS), "--topic", "remote-log-metadata",
         "--compacted"],
        capture_output=True, text=True, cwd=ROOT, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    rows = [json.loads(x) for x in done.stdout.splitlines()]
    assert rows and {r["kind"] for r in rows} == {"remote-segment"}
    report = tiered_report([LOGS])
    assert len(rows) == report.sections.segments.num_rows
    assert {r["status"] for r in rows} == {"remote", "upload-abandoned", "deleted"}


# ---------------------------------------------------------------------------- the rules


def _facts(*rows: dict[str, Any]) -> pa.Table:
    key = {"topic": "t", "topicId": "AAAAAAAAAAAAAAAAAAAAAQ", "partition": 0}
    full = [{name: {**key, **r}.get(name) for name in FACT_SCHEMA.names} for r in rows]
    return pa.Table.from_pylist(full, schema=FACT_SCHEMA)


def _event(
    seg: str, state: int, ms: int, offset: int, start: int = 0, end: int = 9, rtype: int = 0
) -> dict[str, Any]:
    return {
        "fact": "event", "segmentId": seg, "recordType": rtype, "state": state, "timeMs": ms,
        "startOffset": start if rtype in (0, 3) else None, "endOffset": end if rtype in (0, 3) else None,
        "metadataPartition": 0, "metadataOffset": offset, "recordTimeMs": ms, "sizeBytes": 100,
        "leaderEpochs": [{"epoch": 1, "offset": start}] if rtype in (0, 3) else None,
    }  # fmt: skip


def _copied(seg: str, start: int, end: int, at: int) -> list[dict[str, Any]]:
    return [_event(seg, 0, at, at * 2, start, end), _event(seg, 1, at + 1, at * 2 + 1, rtype=1)]


def _local(start: int, end: int) -> dict[str, Any]:
    return {
        "fact": "local-segment",
        "startOffset": start,
        "endOffset": end,
        "records": end - start + 1,
        "sizeBytes": 10,
    }


def _view(
    facts: pa.Table, now: int = 100, stuck: int = 50, **kw: Any
) -> dict[str, list[dict[str, Any]]]:
    sections = partition_view(
        facts, now, stuck, has_metadata=True, has_listing=kw.get("listing", False)
    )
    return {name: table.to_pylist() for name, table in sections.items()}


def test_a_gap_between_segments_and_before_the_local_log_is_a_hole() -> None:
    facts = _facts(
        *_copied("a", 0, 9, 1), *_copied("b", 20, 29, 3), _local(35, 40),
        {"fact": "epoch", "epoch": 1, "startOffset": 0},
    )  # fmt: skip
    p = _view(facts)["partitions"][0]
    assert [(h["firstOffset"], h["lastOffset"]) for h in p["holes"]] == [(10, 19), (30, 34)]
    assert p["offsetsLost"] == 15
    assert (p["logStartOffset"], p["remoteEndOffset"], p["logEndOffset"]) == (0, 29, 41)


def test_the_checkpoints_log_start_wins_when_later() -> None:
    facts = _facts(*_copied("a", 0, 9, 1), _local(10, 12), {"fact": "log-start", "startOffset": 4})
    assert _view(facts)["partitions"][0]["logStartOffset"] == 4


def test_uploads_copying_stuck_and_deletions_hanging() -> None:
    facts = _facts(
        _event("young", 0, 90, 1, 10, 19), _event("old", 0, 10, 2, 0, 9),
        *_copied("gone", 20, 29, 3), _event("gone", 2, 20, 9, rtype=1),
    )  # fmt: skip
    statuses = {s["segmentId"]: (s["status"], s["ageMs"]) for s in _view(facts)["segments"]}
    assert statuses == {
        "young": ("copying", 10),
        "old": ("upload-stuck", 90),
        "gone": ("delete-hanging", 80),
    }
    p = _view(facts)["partitions"][0]
    assert (p["unfinishedUploads"], p["hangingDeletions"]) == (2, 1)


def test_a_partition_deletion_that_hangs() -> None:
    facts = _facts(_event(None, 0, 10, 1, rtype=2))  # type: ignore[arg-type]
    p = _view(facts)["partitions"][0]
    assert p["partitionDeleteState"] == "DELETE_PARTITION_MARKED" and p["hangingDeletions"] == 1


def test_objects_missing_and_orphans_with_a_listing() -> None:
    files = [
        {"fact": "remote-file", "segmentId": "a", "fileType": s, "sizeBytes": 5, "startOffset": 0}
        for s in (".log", ".index", ".timeindex", ".snapshot", ".leader_epoch_checkpoint")
    ]
    orphan = {
        "fact": "remote-file",
        "segmentId": "z",
        "fileType": ".log",
        "sizeBytes": 7,
        "startOffset": 50,
    }
    facts = _facts(*_copied("a", 0, 9, 1), *_copied("b", 10, 19, 3), *files[:-1], orphan)
    statuses = {s["segmentId"]: s for s in _view(facts, listing=True)["segments"]}
    assert statuses["a"]["status"] == "objects-missing"
    assert statuses["a"]["missingFiles"] == [".leader_epoch_checkpoint"]
    assert statuses["b"]["status"] == "objects-missing" and statuses["b"]["files"] == []
    assert statuses["z"]["status"] == "orphan-objects"
    p = _view(facts, listing=True)["partitions"][0]
    assert p["abandonedObjectsBytes"] == 7 and p["offsetsLost"] == 20


def test_leader_epochs_against_the_checkpoint() -> None:
    facts = _facts(
        *_copied("a", 0, 9, 1), *_copied("b", 10, 19, 3),
        {"fact": "epoch", "epoch": 1, "startOffset": 5},
        {"fact": "epoch", "epoch": 3, "startOffset": 10},
    )  # fmt: skip
    epochs = {e["segmentId"]: e for e in _view(facts)["epochs"]}
    assert epochs["a"]["status"] == "before-checkpoint"
    assert (epochs["b"]["status"], epochs["b"]["checkpointEpoch"]) == ("differs", 3)
    assert _view(facts)["partitions"][0]["epochMismatches"] == 1


@pytest.mark.xdist_group("s3")
def test_from_object_storage_as_from_disk(s3_server: Any, tmp_path: Path) -> None:
    import os

    import s3server

    run = tmp_path / "run"
    shutil.copytree(TIERED, run)
    url = s3server.upload(s3_server, run, "backups/tiered-report")
    base = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}

    def jsonl(*paths: str, env: dict[str, str]) -> list[dict[str, Any]]:
        done = subprocess.run(
            [sys.executable, "-m", "codegen", "tiered", *paths, "--format", "jsonl"],
            capture_output=True, text=True, cwd=ROOT, timeout=300, check=False,
            env={**base, **env},
        )  # fmt: skip
        assert done.returncode == 1, done.stderr
        return [
            {k: v for k, v in json.loads(x).items() if k not in ("remoteStorage", "file")}
            for x in done.stdout.splitlines()
        ]

    on_disk = jsonl(str(run / "logs"), str(run / "remote"), env={})
    on_s3 = jsonl(f"{url}/logs", f"{url}/remote", env=s3_server.environment())
    assert on_s3 == on_disk
