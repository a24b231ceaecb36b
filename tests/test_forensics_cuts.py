"""``--as-of`` holds at every moment: at every batch boundary of the repository's real logs and
of the synthesized transaction clusters, ``groups``, ``lag`` and ``transactions`` answer, and
their answer is the one over only the records before the cut (a copy of the log dir as it was
then, tests/cuts.py). The command line gives the Python API's answer at a sample of the cuts;
Spark's on a random history at a time and at an offset
(tests/spark/test_forensics_histories_spark.py), and on a real broker's logs in
tests/test_broker.py.

A cut by a time is compared with the copy read at the same time (*now*, which the lag status
and the transactions' ages are taken at, is that time); the groups at a time and every answer
at an offset (whose *now* is the newest batch kept) with the copy read whole.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from cuts import answers, as_of_text, batch_cuts, prefix_copy, sample
from test_forensics_transactions import write_cluster, write_offset_transactions

from codegen.forensics.groups import AsOf
from codegen.forensics.groups_command import groups_command
from codegen.forensics.lag_command import lag_command
from codegen.forensics.transactions_command import transactions_command

DATA = Path(__file__).resolve().parent / "data"
REAL = (
    "forensics/aibulb",
    "forensics/ldi-poc",
    "kafka-data/aibulb",
    "kafka-data/ldi-poc",
    "kafka-data/mscaldas-spooldir",
    "dumplog",
)


def check_every_cut(root: Path, cuts: list[AsOf], tmp_path: Path) -> int:
    """Compare every cut's answers with the copy's; returns how many were compared."""
    for n, cut in enumerate(cuts):
        copy = prefix_copy(root, cut, tmp_path / f"cut-{n}")
        whole = answers(root, cut)
        if cut.offset is None:
            assert answers(copy, cut) == whole, cut
            assert answers(copy, None, transactions=False)["groups"] == whole["groups"], cut
        else:  # read whole, the copy's now is the newest batch it holds: the cut's moment
            assert answers(copy, None) == whole, cut
    return len(cuts)


@pytest.mark.parametrize("name", REAL)
def test_every_cut_of_the_real_logs_is_the_answer_over_its_prefix(
    name: str, tmp_path: Path
) -> None:
    root = DATA / name
    cuts = batch_cuts(root)
    assert check_every_cut(root, cuts, tmp_path) == len(cuts) >= 10


@pytest.mark.parametrize("writer", [write_cluster, write_offset_transactions])
def test_every_cut_of_the_transaction_clusters_is_the_answer_over_its_prefix(
    writer: Any, tmp_path: Path
) -> None:
    root = writer(tmp_path / "cluster")
    cuts = batch_cuts(root)
    assert check_every_cut(root, cuts, tmp_path) >= 10


def test_a_cut_before_a_partition_starts_is_answered(tmp_path: Path) -> None:
    """The crash of a real cluster: a __consumer_offsets partition with no record before the
    cut read as an empty chunk."""
    root = DATA / "forensics" / "aibulb"  # __consumer_offsets-0 from 2023-05 16:06, -28 later
    early = AsOf(timestamp_ms=batch_cuts(root)[1].timestamp_ms)
    found = answers(root, early)
    assert isinstance(found["groups"], list) and isinstance(found["lag"], list)
    code, _, err = _cli(groups_command, root, "--as-of", as_of_text(early))
    assert code == 0, err
    code, _, err = _cli(lag_command, root, "--as-of", as_of_text(early))
    assert code == 0, err


def _cli(command: Any, *args: object) -> tuple[int, str, str]:
    res = CliRunner().invoke(command, [str(a) for a in args])
    if res.exception is not None and not isinstance(res.exception, SystemExit):
        raise res.exception
    return res.exit_code, res.stdout, res.stderr


def _lines(text: str) -> list[Any]:
    return [json.loads(line) for line in text.splitlines() if line]


def check_cli(root: Path, cut: AsOf, tmp_path: Path, formats: tuple[str, ...] = ()) -> None:
    """The commands' jsonl is the Python API's answer at ``cut`` (bad input: exit 2 and the
    API's message), and ``formats`` are written (exit 0, or 1 for hanging transactions)."""
    whole = json.loads(json.dumps(answers(root, cut)).replace("<log dir>", str(root)))
    at = ["--as-of", as_of_text(cut)]
    asked = [
        (groups_command, "groups"),
        (lag_command, "lag"),
        (transactions_command, "transactions"),
    ]
    for command, name in asked:
        code, out, err = _cli(command, root, *at, "--format", "jsonl")
        expected = whole[name]
        if isinstance(expected, str):  # bad input at every cut
            assert code == 2 and expected.removeprefix("bad input: ") in err
            continue
        lines = _lines(out)
        hanging = any(line.get("kind") == "hanging" for line in lines)
        assert code == (1 if hanging else 0), err
        assert lines == expected
        for fmt in formats:
            code, _, err = _cli(command, root, *at, "--format", fmt, "--output", tmp_path / name)
            assert code == (1 if hanging else 0), err


@pytest.mark.parametrize("name", ["forensics/aibulb", "dumplog", "cluster"])
def test_the_command_line_gives_the_api_answer_at_a_sample_of_cuts(
    name: str, tmp_path: Path
) -> None:
    root = write_cluster(tmp_path / "cluster") if name == "cluster" else DATA / name
    for n, cut in enumerate(sample(batch_cuts(root), 5, seed=41)):
        check_cli(root, cut, tmp_path, ("table", "html") if n == 2 else ())
