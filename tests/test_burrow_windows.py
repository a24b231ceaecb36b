"""Burrow's rules over windows of commits by the engine (``window_rules``,
``codegen/native/burrow_windows.h``) against their numpy form (``burrow._numpy_rules``), and
the engine's checks of what it is given."""

from __future__ import annotations

from types import ModuleType
from typing import Any

import numpy as np
import pytest

from codegen.forensics import burrow

LO, HI = -(2**63), 2**63 - 1


@pytest.fixture
def engine(records_module: ModuleType) -> Any:
    """The engine's window_rules, as window_judgements finds it (the module compiled for the
    session: with the sanitizers under ``make sanitize``)."""
    found = burrow.effects.engine_function("window_rules")
    if found is None:
        pytest.skip("the native engine is not asked for")
    return found


def _statuses_both(
    monkeypatch: pytest.MonkeyPatch, *args: Any, min_commits: int = 2
) -> tuple[list[tuple[str | None, str]], list[tuple[str | None, str]]]:
    by_engine = _window_statuses(*args, min_commits=min_commits)
    _ranks_are_the_statuses(*args, min_commits=min_commits)
    with monkeypatch.context() as m:
        m.setattr(burrow.effects, "engine_function", lambda name: None)
        reference = _window_statuses(*args, min_commits=min_commits)
        _ranks_are_the_statuses(*args, min_commits=min_commits)
    return by_engine, reference


def _window_statuses(*args: Any, min_commits: int) -> list[tuple[str | None, str]]:
    """Each window's status and reason (window_judgements' first two lists, zipped)."""
    statuses, reasons, _ = burrow.window_judgements(*args, min_commits=min_commits)
    return list(zip(statuses, reasons, strict=True))


def _ranks_are_the_statuses(*args: Any, min_commits: int) -> None:
    """window_judgements' ranks are its statuses' (ERR over WARN over OK over none), the
    statuses made a window at a time (OK at the log end, incomplete, REWIND) too."""
    statuses, _, ranks = burrow.window_judgements(*args, min_commits=min_commits)
    rank = {None: 0, "OK": 1, "WARN": 2, "STOP": 3, "STALL": 3, "REWIND": 3}
    assert ranks.dtype == np.int8
    assert ranks.tolist() == [rank[s] for s in statuses]


@pytest.mark.parametrize("seed", range(12))
def test_window_rules_by_the_engine_are_the_reference(
    seed: int, monkeypatch: pytest.MonkeyPatch, engine: Any
) -> None:
    """Random windows: empty ones (at the first row, between, after the last), overlapping
    ones, ones that cover every row (the reference reads the columns as they are) and ones that
    leave rows out (it gathers theirs); unknown lags, lags of 0, offsets that go back or stay,
    times equal, falling, and at the int64 ends, with now at them too."""
    rnd = np.random.default_rng(seed)
    n = int(rnd.integers(0, 60))
    times = np.sort(rnd.integers(0, 50, n)).astype(np.int64)
    if seed % 4 == 1:  # times out of order
        times = rnd.integers(-20, 50, n).astype(np.int64)
    if seed % 4 == 2 and n:  # times at the int64 ends: the differences leave int64
        times[rnd.integers(0, n, max(n // 3, 1))] = rnd.choice(
            np.array([LO, LO + 1, HI, HI - 1, 0], np.int64), max(n // 3, 1)
        )
    offsets = rnd.integers(0, 6, n).astype(np.int64)
    lags = rnd.integers(0, 4, n).astype(np.int64)
    known = rnd.random(n) > (0.05 if seed % 3 else 0.0)
    if seed % 3 == 1:
        lags += 1  # no lag of 0: the later rules decide
    if seed % 6 == 0:  # windows one after another over every row
        cuts = np.sort(rnd.integers(0, n + 1, int(rnd.integers(0, 12))))
        bounds = np.concatenate([[0], cuts, [n]]).astype(np.int64)
        starts, stops = bounds[:-1], bounds[1:]
    else:  # anywhere, some empty, some overlapping
        windows = int(rnd.integers(0, 20))
        a, b = rnd.integers(0, n + 1, windows), rnd.integers(0, n + 1, windows)
        starts, stops = np.minimum(a, b).astype(np.int64), np.maximum(a, b).astype(np.int64)
        stops = np.minimum(stops, starts + rnd.integers(0, 12, windows))
    ends = [None if rnd.random() < 0.3 else int(rnd.integers(0, 8)) for _ in starts]
    for now in (int(rnd.integers(0, 120)), HI, LO, 60):
        for min_commits in (1, 2, 5):
            got, want = _statuses_both(
                monkeypatch,
                times,
                offsets,
                lags,
                known,
                starts,
                stops,
                now,
                ends,
                min_commits=min_commits,
            )
            assert got == want


def test_window_rules_edges(monkeypatch: pytest.MonkeyPatch, engine: Any) -> None:
    """Each rule by the engine as by the reference, on windows made for it."""
    i64 = lambda *v: np.asarray(v, np.int64)  # noqa: E731
    # rows: 0-1 unknown | 2 alone | 3-4 a lag of 0 | 5-6 idle | 7-9 rewound twice (the last
    # step back given) | 10-12 stalled | 13-15 warned | 16-18 shrinking; at 90, the windows
    # after the idle one idle exactly as long as they span
    times = i64(0, 1, 2, 3, 4, 5, 6, 10, 40, 50, 20, 40, 55, 30, 50, 60, 40, 60, 65)
    offsets = i64(1, 2, 3, 4, 5, 6, 7, 9, 5, 4, 8, 8, 8, 1, 2, 3, 1, 2, 3)
    lags = i64(1, 1, 1, 0, 2, 3, 3, 1, 2, 3, 1, 1, 2, 1, 1, 2, 3, 2, 1)
    known = np.ones(len(times), np.bool_)
    known[1] = False
    starts = i64(0, 2, 3, 5, 7, 10, 13, 16, 19, 0)
    stops = i64(2, 3, 5, 7, 10, 13, 16, 19, 19, 0)
    got, want = _statuses_both(
        monkeypatch, times, offsets, lags, known, starts, stops, 90, [None] * len(starts)
    )
    assert got == want
    assert [s for s, _ in got] == [
        None,
        "OK",
        "OK",
        "STOP",
        "REWIND",
        "STALL",
        "WARN",
        "OK",
        None,
        None,
    ]
    assert got[4][1] == "the committed offset went back from 5 to 4"
    # idle exactly as long as the window spans is not idle; one longer is
    for now, status in ((12, "OK"), (13, "STOP")):
        got, want = _statuses_both(
            monkeypatch,
            i64(0, 6),
            i64(1, 2),
            i64(2, 1),
            np.ones(2, np.bool_),
            i64(0),
            i64(2),
            now,
            [None],
        )
        assert got == want and got[0][0] == status


def test_window_rules_check_their_buffers(engine: Any) -> None:
    i64 = lambda *v: np.asarray(v, np.int64)  # noqa: E731
    ok = np.ones(3, np.bool_)
    fine = (i64(1, 2, 3), i64(5, 5, 6), i64(1, 1, 1), ok, i64(0, 1), i64(3, 1))
    rules, back = engine(*fine, 4, 2)
    assert np.frombuffer(rules, np.uint8).tolist() == [burrow._WARN, burrow._NONE]
    assert np.frombuffer(back, np.int64).tolist() == [0, 0]
    for at, bad in [
        (1, i64(5, 5)),  # fewer offsets than times
        (2, i64(1, 1, 1, 1)),  # more lags
        (3, np.ones(2, np.bool_)),  # fewer known
        (5, i64(3)),  # fewer stops than starts
        (4, i64(-1, 1)),  # a window before the first row
        (5, i64(4, 1)),  # past the last
        (5, i64(3, 0)),  # a stop before its start
    ]:
        with pytest.raises(ValueError):
            engine(*fine[:at], bad, *fine[at + 1 :], 10, 2)
    with pytest.raises(ValueError):
        engine(b"\x00" * 7, *fine[1:], 10, 2)
    with pytest.raises(OverflowError):
        engine(*fine, 2**63, 2)
    rules, back = engine(i64(), i64(), i64(), np.ones(0, np.bool_), i64(), i64(), 0, 1)
    assert rules == b"" and back == b""
