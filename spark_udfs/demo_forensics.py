"""The end of the demo (``make demo``): the forensics commands run on the dump's log folder,
their answers saved beside the Spark results, and one line each saying what they found.

Each command is run as a user runs it (``python -m codegen ...``, two at a time), its answer
written to a file below ``--out``; the lines are read from the commands' JSON answers, never
from what the synthesized cluster was meant to hold:

- ``groups --format jsonl``: the groups by type and state, the most rebalances, conversions
  between protocols, deleted groups;
- ``lag`` (a table of every group) and ``lag --format jsonl`` and ``--format html`` for the
  page's groups (the story's on a synthesized cluster, else the groups not OK): the statuses,
  each partition that is not OK, and a group whose lag grew and came back;
- ``transactions --format jsonl``: the hanging transactions, what they block, the
  transactions read;
- ``downgrade-check --to 3.9 --format json``: the verdict and what blocks it.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import json
import os
import re
import subprocess
import sys
import threading
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from codegen.dumps.storage import StoragePath
from codegen.text import plural

__all__ = ["PAGE_GROUPS_MAX", "Answer", "run_forensics"]

PAGE_GROUPS_MAX: Final = 12
"""Groups on the lag page at most: each partition is a plot (about 0.1 s to draw)."""
DOWNGRADE_TO: Final = "3.9"
_GROUP_LINE: Final = re.compile(
    r"^(?P<group>\S(?:.*\S)?)  (?P<status>OK|WARN|ERR|no status)  \(now "
)


@dataclass(frozen=True, slots=True)
class Answer:
    """One command's run: what was run, where its answer is, and the line saying what it
    found (or why it could not)."""

    name: str
    argv: list[str]
    file: Path
    line: str


def _clock(ms: int) -> str:
    return _dt.datetime.fromtimestamp(ms / 1000, tz=_dt.UTC).strftime("%H:%M")


def _minutes(ms: int) -> str:
    return plural(max(1, round(ms / 60_000)), "minute")


# -- groups ---------------------------------------------------------------------------------


STORM_GAP_MS: Final = 5 * 60_000
"""Rebalances closer than this belong to one burst."""


def _burst(doc: dict[str, Any]) -> tuple[int, int, int, str]:
    """A group's largest burst of rebalances (count, first, last time, group): rebalances
    each within :data:`STORM_GAP_MS` of the one before."""
    times = [e["timestamp"] for e in doc["timeline"] if e["kind"] == "rebalance"]
    best = (0, 0, 0, doc["group"])
    start = 0
    for i, t in enumerate(times):
        if i and t - times[i - 1] > STORM_GAP_MS:
            start = i
        if i - start + 1 > best[0]:
            best = (i - start + 1, times[start], t, doc["group"])
    return best


def groups_line(docs: list[dict[str, Any]]) -> str:
    if not docs:
        return "no group in the dump"
    types = Counter(d["type"] or "deleted" for d in docs)
    states = Counter(d["state"] for d in docs)
    parts = [
        f"{plural(len(docs), 'group')} ("
        + ", ".join(f"{n} {t}" for t, n in types.most_common())
        + "; "
        + ", ".join(f"{n} {s}" for s, n in states.most_common())
        + ")"
    ]
    storm = max((_burst(d) for d in docs), key=lambda b: b[0])
    if storm[0] >= 10:
        count, first, last, group = storm
        parts.append(f"{group} rebalanced {count} times from {_clock(first)} to {_clock(last)}")
    for d in docs:
        for e in d["timeline"]:
            if e["kind"] == "protocol-conversion":
                detail = e["detail"]
                parts.append(
                    f"{d['group']} moved from {detail['from']} to {detail['to']} at "
                    f"{_clock(e['timestamp'])}"
                )
    deleted = [d["group"] for d in docs if d["type"] is None]
    if deleted:
        parts.append(f"deleted: {', '.join(deleted)}")
    return "; ".join(parts)


# -- lag ------------------------------------------------------------------------------------


def table_statuses(text: str) -> dict[str, str]:
    """Group -> status, from ``lag``'s table (its group lines)."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        m = _GROUP_LINE.match(line)
        if m:
            out[m["group"]] = m["status"]
    return out


def _partitions(doc: dict[str, Any], status: str) -> str:
    names = [f"{p['topic']}-{p['partition']}" for p in doc["partitions"] if p["status"] == status]
    return ", ".join(names)


def lag_line(statuses: dict[str, str], page: list[dict[str, Any]]) -> str:
    if not statuses:
        return "no committed offsets in the dump"
    counts = Counter(statuses.values())
    parts = [", ".join(f"{n} {s}" for s, n in sorted(counts.items()))]
    for doc in page:
        for status in ("STALL", "STOP", "REWIND", "WARN"):
            where = _partitions(doc, status)
            if where:
                parts.append(f"{doc['group']} {status} on {where}")
    for doc in page:
        if doc["status"] != "OK":
            continue
        peaks = [
            (c["lag"], c["commitTimestamp"], p)
            for p in doc["partitions"]
            for c in p["commits"]
            if c["lag"] is not None
        ]
        if not peaks:
            continue
        lag, when, p = max(peaks, key=lambda x: x[0])
        now = p["lag"] or 0
        if lag >= 10 * max(now, 10):
            parts.append(
                f"{doc['group']} fell behind ({p['topic']}-{p['partition']}: lag {lag:,} at "
                f"{_clock(when)}) and caught up (lag {now:,} now)"
            )
    return "; ".join(parts)


def _page_groups(statuses: dict[str, str], wanted: Sequence[str]) -> list[str]:
    """The page's groups: those asked (the story's) that are in the dump, else the groups
    not OK; at most :data:`PAGE_GROUPS_MAX`."""
    chosen = [g for g in wanted if g in statuses] or [g for g, s in statuses.items() if s != "OK"]
    return chosen[:PAGE_GROUPS_MAX]


# -- transactions and downgrade-check ----------------------------------------------------------


def transactions_line(docs: list[dict[str, Any]]) -> str:
    hanging = [d for d in docs if d["kind"] == "hanging"]
    ids = [d for d in docs if d["kind"] == "transactional-id"]
    done = Counter(
        t["outcome"].split(" ")[0] for d in ids for t in d["transactions"] if t["outcome"]
    )
    parts = [plural(len(hanging), "hanging transaction")]
    for n, h in enumerate(hanging):
        blocked = ", ".join(g["group"] for g in h["blockedGroups"]) or "no group"
        who = h["transactionalId"] or f"producer {h['producerId']}"
        text = (
            f"{h['topic']}-{h['partition']} from offset {h['firstOffset']} since "
            f"{_clock(h['firstTimestamp'])} ({who}: {h['reason'].split(';')[0]}), "
            f"blocking {blocked}"
        )
        if n == 0:  # "1 hanging transaction: payments-1 ..."
            parts[0] += f": {text}"
        else:
            parts.append(text)
    if ids:
        parts.append(
            f"{plural(len(ids), 'transactional id')}, "
            + ", ".join(f"{n:,} {o}" for o, n in done.most_common())
        )
    return "; ".join(parts)


def downgrade_line(doc: dict[str, Any]) -> str:
    blocked = [c["check"] for c in doc["checks"] if c["status"] == "blocked"]
    line = str(doc["verdict"])
    if blocked:
        line += f" by {', '.join(blocked)}"
    first = doc.get("firstFailure")
    if first:
        line += f"; first failure at start-up: {first.split(': MetadataParseException')[0]}"
    return line


# -- the runs ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Run:
    """A command to run: its arguments after ``python -m codegen``, the file its answer goes
    to (``--output``, or its standard output) and the exit statuses that are answers."""

    args: list[str]
    file: Path
    answers: tuple[int, ...] = (0,)
    to_stdout: bool = False

    def argv(self, python: str) -> list[str]:
        output = [] if self.to_stdout else ["--output", str(self.file)]
        return [python, "-m", "codegen", *self.args, *output]

    def start(self, pool: ThreadPoolExecutor, python: str, niceness: int = 0) -> Future[str | None]:
        """Run it (``niceness`` above this process's); the future says why it gave no answer
        (None: it did)."""

        def run() -> str | None:
            with self.file.open("w", encoding="utf-8") if self.to_stdout else _null() as out:
                proc = subprocess.Popen(
                    self.argv(python),
                    stdout=out if self.to_stdout else subprocess.DEVNULL,
                    stderr=subprocess.PIPE,
                    text=True,
                )
                if niceness:
                    with contextlib.suppress(OSError):  # it ended already
                        os.setpriority(
                            os.PRIO_PROCESS, proc.pid, os.getpriority(os.PRIO_PROCESS, 0) + niceness
                        )
                _, err = proc.communicate()
            if proc.returncode in self.answers:
                return None
            last = (err or "").strip().splitlines()
            return f"exit status {proc.returncode}: {last[-1] if last else 'no message'}"

        return pool.submit(run)


@contextlib.contextmanager
def _null() -> Iterator[None]:
    yield None


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x]


class Forensics:
    """The four commands running on a log folder (:func:`start_forensics`), in a thread of
    their own; :meth:`answers` waits for them."""

    def __init__(
        self,
        folder: StoragePath,
        out: Path,
        python: str,
        story_groups: Sequence[str],
        niceness: int,
    ) -> None:
        self._args = (folder, out, python, story_groups, niceness)
        self._answers: list[Answer] = []
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="forensics", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            self._answers = _run_all(*self._args)
        except BaseException as exc:  # handed to the caller of answers()
            self._error = exc

    def answers(self) -> list[Answer]:
        self._thread.join()
        if self._error is not None:
            raise self._error
        return self._answers


def start_forensics(
    folder: StoragePath,
    out: Path,
    python: str,
    story_groups: Sequence[str] = (),
    niceness: int = 0,
) -> Forensics:
    """Start the four commands on ``folder`` (a log folder), two at a time, their answers
    below ``out``: ``niceness`` lets them run beside other work (the demo's Spark job) on
    the cores it leaves idle. The lag page's groups are ``story_groups`` (those in the dump),
    else the groups not OK in lag's table."""
    return Forensics(folder, out, python, story_groups, niceness)


def run_forensics(
    folder: StoragePath, out: Path, python: str, story_groups: Sequence[str] = ()
) -> list[Answer]:
    """:func:`start_forensics` and its answers: one :class:`Answer` each, in the order groups,
    lag, transactions, downgrade-check."""
    return start_forensics(folder, out, python, story_groups).answers()


def _run_all(
    folder: StoragePath, out: Path, python: str, story_groups: Sequence[str], niceness: int
) -> list[Answer]:
    where = str(folder)
    groups = _Run(["groups", where, "--format", "jsonl"], out / "groups.jsonl")
    table = _Run(["lag", where], out / "lag.txt")
    transactions = _Run(
        ["transactions", where, "--format", "jsonl"], out / "transactions.jsonl", (0, 1)
    )
    downgrade = _Run(
        ["downgrade-check", where, "--to", DOWNGRADE_TO, "--format", "json"],
        out / f"downgrade-{DOWNGRADE_TO}.json",
        (0, 1, 3),
        to_stdout=True,
    )
    with ThreadPoolExecutor(max_workers=2) as pool:
        table_done = table.start(pool, python, niceness)
        groups_done = groups.start(pool, python, niceness)
        transactions_done = transactions.start(pool, python, niceness)
        downgrade_done = downgrade.start(pool, python, niceness)
        problem = table_done.result()
        statuses = table_statuses(table.file.read_text()) if problem is None else {}
        chosen = [a for g in _page_groups(statuses, story_groups) for a in ("--group", g)]
        page = _Run(["lag", where, *chosen, "--format", "html"], out / "lag.html")
        history = _Run(["lag", where, *chosen, "--format", "jsonl"], out / "lag-page.jsonl")
        page_done = page.start(pool, python, niceness) if chosen else None
        history_done = history.start(pool, python, niceness) if chosen else None
        answers = [
            _answer(
                "groups", groups, groups_done.result(), lambda: groups_line(_lines(groups.file))
            )
        ]
        for done in (history_done, page_done):
            if problem is None and done is not None:
                problem = done.result()
        shown = page if chosen else table
        docs = _lines(history.file) if chosen and problem is None else []
        answers.append(_answer("lag", shown, problem, lambda: lag_line(statuses, docs)))
        answers.append(
            _answer(
                "transactions",
                transactions,
                transactions_done.result(),
                lambda: transactions_line(_lines(transactions.file)),
            )
        )
        answers.append(
            _answer(
                f"downgrade-check --to {DOWNGRADE_TO}",
                downgrade,
                downgrade_done.result(),
                lambda: downgrade_line(json.loads(downgrade.file.read_text())),
            )
        )
    history.file.unlink(missing_ok=True)  # the page's history, read for its line only
    return answers


def _answer(name: str, run: _Run, problem: str | None, line: Callable[[], str]) -> Answer:
    return Answer(name, run.args, run.file, problem if problem is not None else line())


if __name__ == "__main__":  # pragma: no cover - a manual run on a log folder
    for answer in run_forensics(Path(sys.argv[1]), Path(sys.argv[2]), sys.executable):
        print(f"{answer.name}: {answer.line}")
