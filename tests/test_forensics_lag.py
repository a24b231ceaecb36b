"""lag: offsets over time, lag against the data topic's log end, Burrow-like status, report."""

from __future__ import annotations

import json
import shutil
import struct
import subprocess
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from codegen.dumps import SegmentWriter
from codegen.dumps.model import ControlType
from codegen.forensics.command import lag_command
from codegen.forensics.groups import AsOf, group_reports
from codegen.forensics.lag import Commit, LogEnds, burrow_status, lag_reports
from generated.offset_commit_key import OffsetCommitKey
from generated.offset_commit_value import OffsetCommitValue

ROOT = Path(__file__).resolve().parent.parent
REAL = ROOT / "tests" / "data" / "forensics" / "aibulb"
T0 = 1_700_000_000_000
S = 1000


def commit_record(group: str, topic: str, partition: int, offset: int | None, at: int) -> Any:
    key = struct.pack(">h", 1) + OffsetCommitKey(
        group=group, topic=topic, partition=partition
    ).encode(0)
    if offset is None:
        return (key, None)
    value = OffsetCommitValue(offset=offset, commit_timestamp=at)
    return (key, struct.pack(">h", 3) + value.encode(3))


# (group, data partition, [(seconds, committed offset)])
SCENARIOS = [
    ("g-ok", 0, [(70, 80), (80, 90), (90, 100)]),  # lag 0 in the window
    ("g-warn", 1, [(70, 50), (80, 55), (90, 60)]),  # offset moves, lag grows
    ("g-stall", 2, [(70, 40), (80, 40), (90, 40)]),  # offset stuck, lag grows
    ("g-stop", 3, [(10, 15), (20, 25), (30, 35)]),  # no commit for 70 s > 20 s window
    ("g-mixed", 0, [(70, 80), (80, 90), (90, 100)]),
    ("g-mixed", 1, [(70, 50), (80, 55), (90, 60)]),
]


def write_lag_scenarios(root: Path) -> Path:
    """The SCENARIOS under ``root``, returned: data topic t-0..t-3 (a 10-record batch every 10 s
    from 0 to 100 s, end 10 * (k + 1)) and their commits in ``__consumer_offsets-0``."""
    for partition in range(4):
        folder = root / f"t-{partition}"
        folder.mkdir()
        with SegmentWriter(folder / "00000000000000000000.log") as w:
            for k in range(11):
                w.write_batch([(None, b"x")] * 10, timestamp=T0 + k * 10 * S)
    offsets = root / "__consumer_offsets-0"
    offsets.mkdir()
    events = [
        (seconds, commit_record(g, "t", p, off, T0 + seconds * S))
        for g, p, commits in SCENARIOS
        for seconds, off in commits
    ]
    with SegmentWriter(offsets / "00000000000000000000.log") as w:
        for seconds, rec in sorted(events, key=lambda e: e[0]):
            w.write_batch([rec], timestamp=T0 + seconds * S)
        # no data segments for topic "gone"; an offset deleted; an aborted commit
        w.write_batch([commit_record("g-other", "gone", 0, 5, T0)], timestamp=T0 + 95 * S)
        w.write_batch([commit_record("g-other", "gone", 1, 5, T0)], timestamp=T0 + 95 * S)
        w.write_batch([commit_record("g-other", "gone", 1, None, T0)], timestamp=T0 + 96 * S)
        w.write_batch(
            [commit_record("g-other", "gone", 0, 999, T0 + 97 * S)],
            timestamp=T0 + 97 * S,
            producer_id=3,
            producer_epoch=0,
            transactional=True,
        )
        w.write_control(ControlType.ABORT, producer_id=3, producer_epoch=0)
    return root


@pytest.fixture
def log_folder(tmp_path: Path) -> Path:
    return write_lag_scenarios(tmp_path)


def statuses(reports: list[Any]) -> dict[tuple[str, int], str | None]:
    return {(p.group, p.partition): p.status for g in reports for p in g.partitions}


def test_status_per_partition_and_group(log_folder: Path) -> None:
    reports = lag_reports(log_folder, window=3)
    assert statuses(reports) == {
        ("g-ok", 0): "OK",
        ("g-warn", 1): "WARN",
        ("g-stall", 2): "STALL",
        ("g-stop", 3): "STOP",
        ("g-mixed", 0): "OK",
        ("g-mixed", 1): "WARN",
        ("g-other", 0): None,
        ("g-other", 1): None,
    }
    by_group = {g.group: g.status for g in reports}
    assert by_group == {
        "g-ok": "OK",
        "g-warn": "WARN",
        "g-stall": "ERR",
        "g-stop": "ERR",
        "g-mixed": "WARN",
        "g-other": None,
    }
    assert reports[0].now == T0 + 100 * S  # the newest data batch


def test_history_and_lag_over_time(log_folder: Path) -> None:
    (warn,) = [g for g in lag_reports(log_folder, group="g-warn")]
    (p,) = warn.partitions
    assert [(c.commit_timestamp, c.offset, c.log_end_offset, c.lag) for c in p.commits] == [
        (T0 + 70 * S, 50, 80, 30),
        (T0 + 80 * S, 55, 90, 35),
        (T0 + 90 * S, 60, 100, 40),
    ]
    assert (p.log_end_offset, p.lag) == (110, 50)  # at now (100 s)
    (other,) = lag_reports(log_folder, group="g-other")
    deleted = {p.partition: p for p in other.partitions}
    assert [c.offset for c in deleted[0].commits] == [5]  # the aborted 999 never took effect
    assert deleted[1].live is False and len(deleted[1].deleted_at) == 1
    assert deleted[0].lag is None and "no log end offsets" in deleted[0].reason


def test_group_with_only_offsets_is_an_empty_classic_group(log_folder: Path) -> None:
    reports = {r.group: r for r in group_reports(log_folder)}
    assert set(reports) == {"g-ok", "g-warn", "g-stall", "g-stop", "g-mixed", "g-other"}
    assert (reports["g-ok"].type, reports["g-ok"].state, reports["g-ok"].events) == (
        "classic",
        "Empty",
        [],
    )
    other = reports["g-other"]
    assert (other.type, other.state, other.committed_offsets) == ("classic", "Empty", 1)
    assert [e.kind for e in other.events] == ["offset-deleted"]


def test_as_of_time_is_the_status_now(log_folder: Path) -> None:
    # At 35 s, g-stop's last commit (30 s) is recent: no longer STOP.
    (stop,) = lag_reports(log_folder, group="g-stop", as_of=AsOf(timestamp_ms=T0 + 35 * S))
    assert stop.now == T0 + 35 * S
    assert stop.partitions[0].status == "WARN"  # lags 5, 5, 5: the offset moves, lag does not


def c(at: int, offset: int, lag: int | None) -> Commit:
    return Commit(0, at, offset, -1, None if lag is None else offset + lag, lag)


@pytest.mark.parametrize(
    ("window", "now", "end_now", "expected"),
    [
        ([c(0, 1, 3), c(10, 2, 0), c(20, 3, 4)], 100, 10, "OK"),  # rule 1: a zero lag, even late
        ([c(0, 1, 3), c(10, 2, 3), c(20, 3, 4)], 100, 10, "STOP"),  # rule 2
        ([c(0, 1, 3), c(10, 2, 3), c(20, 3, 4)], 100, 3, "OK"),  # rule 2's exception
        ([c(0, 5, 3), c(10, 5, 3), c(20, 5, 4)], 25, 10, "STALL"),  # rule 3
        ([c(0, 5, 4), c(10, 5, 3), c(20, 5, 3)], 25, 10, "OK"),  # stuck but lag shrank
        ([c(0, 1, 3), c(10, 2, 3), c(20, 3, 4)], 25, 10, "WARN"),  # rule 4
        ([c(0, 1, 5), c(10, 2, 3), c(20, 3, 4)], 25, 10, "OK"),  # rule 5
        ([c(0, 1, None)], 25, None, None),
    ],
)
def test_burrow_rules(window: list[Commit], now: int, end_now: int | None, expected: str) -> None:
    assert burrow_status(window, now, end_now)[0] == expected


def test_log_ends_follow_batch_times(log_folder: Path) -> None:
    ends = LogEnds(log_folder)
    assert ends.at("t", 0, T0 - 1) == 0
    assert ends.at("t", 0, T0) == 10
    assert ends.at("t", 0, T0 + 15 * S) == 20
    assert ends.at("t", 0, T0 + 10_000 * S) == 110
    assert ends.at("nope", 0, T0) is None


def test_real_consumer_caught_up() -> None:
    (app,) = lag_reports(REAL, group="my-app")
    (p,) = app.partitions
    assert (p.topic, p.partition, p.log_end_offset, p.lag, p.status) == ("my-topic", 0, 16, 0, "OK")
    assert [c.offset for c in p.commits][-1] == 16 and len(p.commits) == 13


def run(*args: str) -> Any:
    return CliRunner().invoke(lag_command, list(args))


def test_cli(log_folder: Path) -> None:
    table = run(str(log_folder), "--window", "3")
    assert table.exit_code == 0, table.output
    assert "g-stall  ERR" in table.output and "t-2  STALL" in table.output
    jsonl = run(str(log_folder / "__consumer_offsets-0"), "--group", "g-warn", "--format", "jsonl")
    (doc,) = [json.loads(line) for line in jsonl.output.splitlines()]
    assert doc["partitions"][0]["commits"][0]["lag"] == 30  # data found next to the partition
    assert run(str(log_folder), "--window", "0").exit_code == 2
    assert run(str(log_folder), "--group", "nope").exit_code == 2


def _html(folder: Path) -> str:
    from codegen.forensics.report import render_html

    return render_html(group_reports(folder), lag_reports(folder, window=3), "test report")


def test_html_report_is_self_contained(log_folder: Path) -> None:
    text = _html(log_folder)
    assert text.startswith("<!DOCTYPE html>")
    # A plot per partition (8) and a timeline for g-other, the one group with events (an
    # offset deletion): the others have no group record.
    assert text.count("<svg") == 9
    for needle in ("<script", " src=", "<link", "@import"):
        assert needle not in text
    assert ">STALL</span>" in text and ">STOP</span>" in text
    assert _html(log_folder) == text  # deterministic


def test_html_report_renders_in_headless_chromium(tmp_path: Path) -> None:
    from matplotlib.image import imread

    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:  # a failure under CI=true (tests/skips.py): make setup checks for it
        pytest.skip("headless Chromium not installed (sudo apt-get install -y chromium)")
    page = tmp_path / "report.html"
    page.write_text(_html(REAL))
    shot = tmp_path / "shot.png"
    subprocess.run(
        [
            browser,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            "--window-size=1000,3000",
            f"--screenshot={shot}",
            page.as_uri(),
        ],
        check=True,
        capture_output=True,
        timeout=120,
    )
    pixels = imread(str(shot))[:, :, :3]
    # The OK badge's green (#2e7d32) and the plots' default blue line (#1f77b4) are drawn.
    for rgb in ((0x2E, 0x7D, 0x32), (0x1F, 0x77, 0xB4)):
        target = [v / 255 for v in rgb]
        close = (abs(pixels - target) < 0.02).all(axis=2)
        assert close.sum() > 20, f"colour {rgb} not on the screenshot"


def test_cli_html_from_groups_and_lag(log_folder: Path) -> None:
    from codegen.forensics.command import groups_command

    by_lag = run(str(log_folder), "--window", "3", "--format", "html")
    assert by_lag.exit_code == 0, by_lag.output
    assert by_lag.output == _html(log_folder).replace(
        "test report", "Consumer groups of " + log_folder.name
    )
    one = CliRunner().invoke(
        groups_command, [str(log_folder), "--group", "g-stop", "--format", "html"]
    )
    assert one.exit_code == 0, one.output
    assert 'id="group-g-stop"' in one.output and 'id="group-g-ok"' not in one.output
    missing = CliRunner().invoke(
        groups_command, [str(log_folder), "--group", "x", "--format", "html"]
    )
    assert missing.exit_code == 2 and "not in the dump" in missing.output
