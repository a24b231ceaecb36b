"""The lint on Kafka's own history: every release of kafka-clients from 3.3.1 to 4.4.0 with its
coordinator jars (``tests/lint/kafka_history/releases.tsv``, fetched by ``make setup``), linted
pair by pair as a user would, each pair with the memory of every earlier release (what
``--git`` gives).

Two checks keep the lint honest: every finding is one of the reviewed findings of
``kafka_history/expected.tsv`` (each with its reason, category and severity; a new or a missing
finding fails), and what fails by default (a breaking wire finding) is exactly what the
independent judgement of :mod:`tests.lint.layout_judgement` calls a break, spec by spec.
docs/lint.md shows the resulting table; a test keeps it equal to what is measured.
"""

from __future__ import annotations

import itertools
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from corpus import KAFKA_HISTORY, kafka_history

from codegen.lint import Category, Finding, LintResult, Memory, Severity, SpecSet, lint, load_set
from codegen.lint.memory import LayoutUse
from codegen.lint.retired import set_memory
from tests.lint import layout_judgement as judgement

pytestmark = [pytest.mark.oracle, pytest.mark.xdist_group("kafka-history")]

EXPECTED = KAFKA_HISTORY / "expected.tsv"
DOC = Path(__file__).resolve().parents[2] / "docs" / "lint.md"
Key = tuple[str, str, str, str, str]  # pair, spec, rule, category, severity
JOIN = "JoinGroupRequest"


@dataclass
class PairRun:
    old: str
    new: str
    result: LintResult
    changed_specs: int
    judged_breaks: set[str]

    @property
    def pair(self) -> str:
        return f"{self.old}..{self.new}"

    @property
    def failing(self) -> set[str]:
        return {f.spec for f in self.result.findings if f.counts}


@dataclass
class History:
    sets: dict[str, SpecSet]
    memories: dict[str, Memory]  # before each release: what the earlier ones had
    pairs: list[PairRun] = field(default_factory=list)


def _key(pair: str, f: Finding) -> Key:
    return (pair, f.spec, f.rule, f.category.value, f.severity.value)


def _changed(
    old: dict[str, tuple[judgement.Spec, str]], new: dict[str, tuple[judgement.Spec, str]]
) -> int:
    """Specs added, removed or with other content (comments and layout of the text aside)."""
    return len(old.keys() ^ new.keys()) + sum(
        1 for name in old.keys() & new.keys() if old[name][0] != new[name][0]
    )


@pytest.fixture(scope="module")
def history() -> History:
    releases = kafka_history()
    sets = {version: load_set(folder) for version, folder in releases}
    raw = {version: judgement.load_release(folder) for version, folder in releases}
    run = History(sets, {})
    memory = Memory()
    layouts: dict[tuple[str, int], list[object]] = {}
    for (old, _), (new, _) in itertools.pairwise(releases):
        memory = memory | set_memory(sets[old], f"Kafka {old}")
        judgement.remember(raw[old], layouts)
        run.memories[new] = memory
        result = lint(sets[old], sets[new], history=memory)
        breaks = {n for n in raw[old] if judgement.breaks(n, raw[old], raw[new], layouts)}
        run.pairs.append(PairRun(old, new, result, _changed(raw[old], raw[new]), breaks))
    return run


def _expected() -> Counter[Key]:
    rows: Counter[Key] = Counter()
    for number, line in enumerate(EXPECTED.read_text().splitlines(), start=1):
        if not line.strip() or line.startswith("#"):
            continue
        cells = line.split("\t")
        assert len(cells) == 6 and cells[5].strip(), f"{EXPECTED.name}:{number}: no reason"
        rows[(cells[0], cells[1], cells[2], cells[3], cells[4])] += 1
    return rows


def test_every_finding_is_a_reviewed_one(history: History) -> None:
    found: Counter[Key] = Counter(
        _key(run.pair, f) for run in history.pairs for f in run.result.findings
    )
    expected = _expected()
    new = sorted((found - expected).elements())
    missing = sorted((expected - found).elements())
    messages = {_key(run.pair, f): f.message for run in history.pairs for f in run.result.findings}
    report = [f"new:     {' '.join(k)}: {messages[k]}" for k in new]
    report += [f"missing: {' '.join(k)}" for k in missing]
    assert not report, "\n".join(report)


def test_what_fails_is_what_breaks_the_wire(history: History) -> None:
    """No false positive and no false negative against the independent layout judgement."""
    wrong = []
    for run in history.pairs:
        for spec in sorted(run.failing - run.judged_breaks):
            wrong.append(f"{run.pair} {spec}: fails, but the layout judgement sees no break")
        for spec in sorted(run.judged_breaks - run.failing):
            wrong.append(f"{run.pair} {spec}: breaks, but the lint does not fail on it")
    assert not wrong, "\n".join(wrong)
    # and the judgement is no empty agreement: 4.0's removals and the record breaks are in it
    breaks = {run.pair: run.judged_breaks for run in history.pairs}
    assert {"ProduceRequest", "LeaderAndIsrRequest"} <= breaks["3.9.2..4.0.0"]
    assert "ConsumerGroupCurrentMemberAssignmentValue" in breaks["3.5.2..3.6.0"]
    assert "ConsumerGroupCurrentMemberAssignmentValue" in breaks["3.7.2..3.8.0"]
    assert {"ShareSnapshotValue", "ShareGroupPartitionMetadataKey"} <= breaks["4.0.2..4.1.0"]


def results_table(history: History) -> str:
    """The Markdown table of docs/lint.md: per pair, changed specs, findings by category and
    severity, and the disagreements with the layout judgement."""
    head = (
        "| releases | changed specs | wire breaking | wire warning | wire info | json | code "
        "| style | false positives | false negatives |"
    )
    lines = [head, "|" + "---|" * 10]
    totals = Counter[str]()
    for run in history.pairs:
        active = run.result.active()
        counts = Counter[str]()
        for f in active:
            if f.category is Category.WIRE:
                counts[f"wire {f.severity.value}"] += 1
            else:
                counts[f.category.value] += 1
        counts["changed"] = run.changed_specs
        counts["fp"] = len(run.failing - run.judged_breaks)
        counts["fn"] = len(run.judged_breaks - run.failing)
        totals.update(counts)
        columns = ("changed", "wire breaking", "wire warning", "wire info", "json", "code")
        cells = [str(counts[c]) for c in (*columns, "style", "fp", "fn")]
        lines.append(f"| {run.old} -> {run.new} | " + " | ".join(cells) + " |")
    columns = ("changed", "wire breaking", "wire warning", "wire info", "json", "code", "style")
    cells = [str(totals[c]) for c in (*columns, "fp", "fn")]
    lines.append(
        f"| **{len(history.pairs)} pairs** | " + " | ".join(f"**{c}**" for c in cells) + " |"
    )
    return "\n".join(lines) + "\n"


def test_the_docs_table_is_the_measured_one(history: History) -> None:
    doc = DOC.read_text()
    found = re.search(r"<!-- kafka-history table -->\n(.*?)<!-- end -->", doc, re.S)
    assert found is not None, "docs/lint.md has no Kafka history table"
    assert found.group(1) == results_table(history)


def test_versions_brought_back_are_compared_with_what_they_had(history: History) -> None:
    # 4.0.1 brought JoinGroup versions 0-1 back, which 4.0.0 had removed (KIP-896)
    old, new = history.sets["4.0.0"], history.sets["4.0.1"]
    rules = {f.spec: f.rule for f in lint(old, new).findings if f.spec.startswith("JoinGroup")}
    assert rules == {
        "JoinGroupRequest": "lowest-version-lowered",
        "JoinGroupResponse": "lowest-version-lowered",
    }  # nothing records their layout: a warning
    remembered = history.memories["4.0.1"]
    assert [f for f in lint(old, new, history=remembered).findings if "JoinGroup" in f.spec] == []
    # a memory in which version 0 had another layout: the comeback breaks
    (had,) = [u for u in remembered.of_type(LayoutUse) if (u.spec, u.version) == (JOIN, 0)]
    assert had.layout == "{string, int32, string, string, []{string, bytes}}"
    other = LayoutUse(JOIN, 0, "{string, int64, string, string, []{string, bytes}}")
    broken = [
        (f.rule, f.severity, f.message)
        for f in lint(old, new, history=Memory({other: "an older lock"})).findings
        if f.spec == JOIN
    ]
    assert broken == [
        (
            "lowest-version-lowered",
            Severity.WARNING,
            "version 1 comes back (validVersions 2-9 -> 0-9), and nothing records the layout it "
            "had (no git history or lock holds it); retired version numbers may have had another "
            "layout: check it, or lint with the git history or a lock",
        ),
        (
            "version-layout-changed",
            Severity.BREAKING,
            "version 0 of JoinGroupRequest comes back (validVersions 2-9 -> 0-9) with another "
            "layout than in an older lock: field SessionTimeoutMs was int64 and is int32; "
            "readers of that release read these bytes differently: give them the layout they had",
        ),
    ]
