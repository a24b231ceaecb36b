"""Burrow's status of a partition's committed offsets, and of a group.

After Burrow's consumer lag evaluation rules, per partition over a sliding window of
the last ``window`` commits (default 10), evaluated at *now*: the ``--as-of`` time, else the
newest timestamp in the dump: of the ``__consumer_offsets`` batches (up to ``--as-of``) and of
every data partition's batches. The first rule that holds:

1. no status when a lag in the window is unknown (no log end history for the partition);
2. ``OK`` (incomplete) when the window holds fewer than ``min_commits`` commits (default 2,
   at most the window): Burrow's ``minimum-complete``, so a single commit is not judged;
3. ``OK`` when any lag in the window is 0;
4. ``STOP`` when the time from the newest commit to now is longer than the window spans (newest
   minus oldest commit time), unless the committed offset has reached the log end at now;
5. ``REWIND`` when a committed offset is below the one before it in the window;
6. ``STALL`` when the committed offset did not move over the window and the lag did not shrink
   (it stayed the same or grew) between any two commits;
7. ``WARN`` when the offset moved but the lag never shrank between two consecutive commits;
8. ``OK`` otherwise.

A group's status is ``ERR`` when any of its partitions is ``STOP``, ``STALL`` or ``REWIND``,
else ``WARN`` when any is ``WARN``, else ``OK`` (and none when no partition has one).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, Final

import numpy as np

from codegen.dumps.views import effects
from codegen.forensics.commits import Commit, row_ranges
from codegen.text import plural

__all__ = [
    "DEFAULT_MIN_COMMITS",
    "DEFAULT_WINDOW",
    "ERROR_STATUSES",
    "burrow_status",
    "group_status",
    "window_judgements",
    "worst_of_runs",
]

DEFAULT_WINDOW: Final = 10
DEFAULT_MIN_COMMITS: Final = 2
ERROR_STATUSES: Final = ("STOP", "STALL", "REWIND")


def burrow_status(
    commits: list[Commit],
    now: int,
    end_now: int | None,
    min_commits: int = DEFAULT_MIN_COMMITS,
) -> tuple[str | None, str]:
    """Status of one partition over a window of commits (oldest first), and why
    (:func:`window_judgements` of the one window)."""
    known = np.array([c.lag is not None for c in commits], np.bool_)
    (status,), (reason,), _ = window_judgements(
        np.array([c.commit_timestamp for c in commits], np.int64),
        np.array([c.offset for c in commits], np.int64),
        np.array([c.lag or 0 for c in commits], np.int64),
        known,
        np.zeros(1, np.int64),
        np.array([len(commits)], np.int64),
        now,
        [end_now],
        min_commits,
    )
    return status, reason


_NO_LOG_END: Final = "no log end offsets for this partition (its data segments are not here)"


def window_judgements(
    commit_timestamp: np.ndarray,
    offset: np.ndarray,
    lag: np.ndarray,
    known: np.ndarray,
    starts: np.ndarray,
    stops: np.ndarray,
    now: int,
    end_now: Sequence[int | None],
    min_commits: int = DEFAULT_MIN_COMMITS,
) -> tuple[list[str | None], list[str], np.ndarray]:
    """Burrow's status of each window of commits (rows ``starts[k]:stops[k]`` of the columns,
    oldest first; ``known``: whether a commit's lag is), and why, judged at ``now`` with the
    window's log end then (``end_now``). The rules, first that holds:

    - a commit's lag unknown (or no commit): no status;
    - fewer than ``min_commits`` commits: OK, incomplete;
    - a lag of 0 in the window: OK;
    - no commit for longer than the window spans: STOP (OK if the newest committed offset is
      at the log end);
    - the committed offset went back between two commits: REWIND (the last such step);
    - the lag never shrank from one commit to the next: STALL if the committed offset did not
      move over the window, else WARN;
    - else OK.

    Returns the statuses and the reasons as two lists (what lag's reports take), and the
    statuses' ranks (int8, :data:`_RANK`: what :func:`worst_of_runs` takes, no lookup a
    window).
    """
    # no lag known anywhere (no log end history): no status, rule 1 (counted: numpy's any()
    # of a million bools took some 7.5 M instructions, count_nonzero 0.8 M)
    if not np.count_nonzero(known):
        n = len(starts)
        return [None] * n, [_NO_LOG_END] * n, np.full(n, _RANK[None], np.int8)
    engine = effects.engine_function("window_rules")
    if engine is not None and -_INT64 <= now < _INT64 and min_commits < _INT64:
        rules, backs = engine(
            *(np.ascontiguousarray(c, np.int64) for c in (commit_timestamp, offset, lag)),
            np.ascontiguousarray(known, np.bool_),
            *(np.ascontiguousarray(c, np.int64) for c in (starts, stops)),
            now,
            min_commits,
        )
        rule, back = np.frombuffer(rules, np.uint8), np.frombuffer(backs, np.int64)
    else:
        rule, back = _numpy_rules(
            commit_timestamp, offset, lag, known, starts, stops, now, min_commits
        )
    # each window's fixed status and reason, taken from object arrays (by a tuple's
    # __getitem__, some 500 instructions a window)
    statuses: list[str | None] = _FIXED_STATUSES.take(rule).tolist()
    reasons: list[str] = _FIXED_REASONS.take(rule).tolist()
    ranks: np.ndarray = _FIXED_RANKS.take(rule)
    # the reasons with numbers, made for their windows only (exact: Python integers)
    sizes = stops - starts
    for k, size in _at(rule == _INCOMPLETE, sizes):
        statuses[k], reasons[k] = (
            "OK",
            f"incomplete: {plural(size, 'commit')}, {min_commits} needed before the "
            "partition is judged",
        )
    # rows of the windows (an empty one's clipped to the columns': its rule is _NONE)
    last = len(offset) - 1
    newest, oldest = np.clip(stops - 1, 0, last), np.minimum(starts, last)
    for k, off, ts_new, ts_old in _at(
        rule == _IDLE, offset[newest], commit_timestamp[newest], commit_timestamp[oldest]
    ):
        end = end_now[k]
        if end is not None and off >= end:
            statuses[k], reasons[k] = (
                "OK",
                "no commit lately, but the committed offset is at the log end",
            )
        else:
            ms, spans = now - ts_new, ts_new - ts_old
            statuses[k], reasons[k] = (
                "STOP",
                f"no commit for {ms} ms, longer than the window spans ({spans} ms)",
            )
    for k, off_before, off_back in _at(rule == _REWIND, offset[back - 1], offset[back]):
        statuses[k], reasons[k] = (
            "REWIND",
            f"the committed offset went back from {off_before} to {off_back}",
        )
    # the statuses a rule may have changed above: their ranks again (the same rank lookup)
    for k in np.flatnonzero(np.isin(rule, _RULES_MADE_PER_WINDOW)).tolist():
        ranks[k] = _RANK.get(statuses[k], _OTHER)
    return statuses, reasons, ranks


def _numpy_rules(
    commit_timestamp: np.ndarray,
    offset: np.ndarray,
    lag: np.ndarray,
    known: np.ndarray,
    starts: np.ndarray,
    stops: np.ndarray,
    now: int,
    min_commits: int,
) -> tuple[np.ndarray, np.ndarray]:
    """Which rule judges each window (:data:`_NONE` ... :data:`_SHRINKS`), and the row of its
    last step back where that is :data:`_REWIND`: the reference of the engine's
    ``window_rules`` (``codegen/native/burrow_windows.h``)."""
    sizes = stops - starts
    rows = row_ranges(starts, stops)
    if len(rows) < len(offset):  # the windows' rows only, one after another
        commit_timestamp, offset, lag, known = (
            column[rows] for column in (commit_timestamp, offset, lag, known)
        )
        stops = np.cumsum(sizes)
        starts = stops - sizes
    else:
        rows = np.arange(len(offset))
    n = len(offset)
    if not n:  # no commit: every window empty
        return np.zeros(len(starts), np.uint8), np.zeros(len(starts), np.int64)
    has = sizes > 0
    newest, oldest = np.maximum(stops - 1, 0), np.minimum(starts, n - 1)

    def count(flag: np.ndarray, first: np.ndarray) -> np.ndarray:
        """How many rows ``first:stops[k]`` of each window have ``flag``."""
        before = np.zeros(n + 1, np.int64)
        np.cumsum(flag, out=before[1:])
        return np.where(has, before[stops] - before[np.minimum(first, stops)], 0)

    step = np.zeros(n, np.bool_)  # row i against row i - 1 (counted from a window's 2nd row)
    back = step.copy()
    back[1:] = offset[1:] < offset[:-1]
    shrank = step.copy()
    shrank[1:] = lag[1:] < lag[:-1]
    unknown = count(~known, starts)
    zero_lag = count(known & (lag == 0), starts)
    went_back = count(back, starts + 1)
    never_shrinks = count(shrank, starts + 1) == 0
    # the last step back of each window: the greatest row with one, by a running maximum
    last_back = np.maximum.accumulate(np.where(back, np.arange(n), -1))
    # times as Python integers where a difference could leave int64: exact either way
    times = (
        commit_timestamp if _fits_twice(commit_timestamp, now) else commit_timestamp.astype(object)
    )
    ts_new = times[newest]
    idle, span = now - ts_new, ts_new - times[oldest]
    # each window's rule, the first that holds (np.select takes the first condition true)
    rule = np.select(
        [
            ~has | (unknown > 0),
            sizes < min_commits,
            zero_lag > 0,
            idle > span,
            went_back > 0,
            (sizes > 1) & never_shrinks & (offset[newest] == offset[oldest]),
            (sizes > 1) & never_shrinks,
        ],
        [_NONE, _INCOMPLETE, _ZERO, _IDLE, _REWIND, _STALL, _WARN],
        _SHRINKS,
    ).astype(np.uint8)
    # the row (of the columns given) of each rewound window's last step back
    back_row = np.where(rule == _REWIND, rows[np.maximum(last_back[newest], 0)], 0)
    return rule, back_row.astype(np.int64)


_NONE, _INCOMPLETE, _ZERO, _IDLE, _REWIND, _STALL, _WARN, _SHRINKS = range(8)
_FIXED: Final[tuple[tuple[str | None, str], ...]] = (
    (None, _NO_LOG_END),
    ("OK", ""),  # incomplete: its reason made per window
    ("OK", "a lag of 0 in the window"),
    ("STOP", ""),  # STOP or OK at the log end: made per window
    ("REWIND", ""),  # made per window
    ("STALL", "the committed offset did not move over the window and the lag did not shrink"),
    ("WARN", "the offset moves but the lag never shrank over the window"),
    ("OK", "the lag shrinks"),
)
"""Each rule's status and reason, by the number :func:`window_judgements` gives it."""
_FIXED_STATUSES: Final = np.array([status for status, _ in _FIXED], object)
_FIXED_REASONS: Final = np.array([reason for _, reason in _FIXED], object)

_HALF: Final = 1 << 62
_INT64: Final = 1 << 63


def _at(where: np.ndarray, *columns: np.ndarray) -> Iterator[tuple[Any, ...]]:
    """Each row where ``where`` holds: its number and its values of ``columns`` (as Python
    objects)."""
    rows = np.flatnonzero(where)
    return zip(rows.tolist(), *(c[rows].tolist() for c in columns), strict=True)


def _fits_twice(times: np.ndarray, now: int) -> bool:
    """Whether every difference of two of ``times`` and ``now`` fits in int64."""
    return bool(
        -_HALF < now < _HALF
        and (not len(times) or -_HALF < int(times.min()) <= int(times.max()) < _HALF)
    )


def group_status(statuses: Iterable[str | None]) -> str | None:
    """A group's status from its partitions': ``ERR``, ``WARN``, ``OK`` or none (that of its
    partitions' of the highest rank, :data:`_RANK`)."""
    rank: int = max(map(_RANK.get, statuses, itertools.repeat(_OTHER)), default=0)
    return _BY_RANK[rank]


def worst_of_runs(ranks: np.ndarray, starts: np.ndarray) -> list[str | None]:
    """:func:`group_status` of each run of partition statuses, by their ranks (:data:`_RANK`;
    ``window_judgements`` gives them), the runs starting at ``starts`` (increasing, the first
    0): a run's highest rank, where a set of its statuses took some 1 us a group."""
    worst: list[str | None] = _BY_RANK_ARRAY.take(np.maximum.reduceat(ranks, starts)).tolist()
    return worst


_OTHER: Final = 1
"""The rank of a status that is none of Burrow's (counted as OK)."""
_RANK: Final[dict[str | None, int]] = {
    None: 0,
    "OK": _OTHER,
    "WARN": 2,
    **dict.fromkeys(ERROR_STATUSES, 3),
}
"""A partition status's rank: a group's status is that of the highest (:data:`_BY_RANK`)."""
_BY_RANK: Final = (None, "OK", "WARN", "ERR")
_BY_RANK_ARRAY: Final = np.array(_BY_RANK, object)
_FIXED_RANKS: Final = np.array([_RANK.get(status, _OTHER) for status, _ in _FIXED], np.int8)
"""Each rule's status's rank (:data:`_FIXED`)."""
_RULES_MADE_PER_WINDOW: Final = np.array([_INCOMPLETE, _IDLE, _REWIND])
"""The rules whose status :func:`window_judgements` makes a window at a time."""
