"""The lint's memory: what the git history and the lock cost next to a plain two-ref diff.

    .venv/bin/python bench/bench_lint_memory.py [--commits 200] [--repeat 3]

Makes a git repository in a temporary folder holding Kafka 4.4.0's specs (``make setup``
unpacks them into ``.cache/kafka-4.4.0/specs``), then ``--commits`` commits that each edit
one spec (a comment line: a new blob, as real edits make), and writes the lock. Then,
in alternating rounds in one process, best of ``--repeat``, it times ``--git HEAD`` over the
specs as the command runs it:

- ``diff``: HEAD against the working tree alone (no lock, no history): the old figure;
- ``lock``: the same with the lock at HEAD and in the working tree (``--no-history``);
- ``history``: the same, also reading every commit (``git log --raw`` + ``git cat-file``).

CPU time counts this process and its git children; ratios are against ``diff``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from codegen.lint import LintResult, lint, load_git_set, load_set  # noqa: E402
from codegen.lint.history import history_memory  # noqa: E402
from codegen.lint.memory import LOCK_NAME, lock_text  # noqa: E402
from codegen.lint.retired import set_memory  # noqa: E402

SPECS = ROOT / ".cache" / "kafka-4.4.0" / "specs"
GIT = ["git", "-c", "user.name=b", "-c", "user.email=b@example.com"]


def _git(repo: Path, *args: str) -> None:
    subprocess.run([*GIT, *args], cwd=repo, check=True, capture_output=True)


def make_repo(root: Path, commits: int) -> Path:
    repo = root / "repo"
    specs = repo / "specs"
    shutil.copytree(SPECS, specs)
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "Kafka 4.4.0 specs")
    files = sorted(specs.rglob("*.json"))
    for number in range(commits):
        spec = files[number % len(files)]
        spec.write_text(spec.read_text() + f"// edit {number}\n")
        _git(repo, "commit", "-qam", f"edit {number}")
    (specs / LOCK_NAME).write_text(lock_text(set_memory(load_set(specs), "specs")))
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "lock")
    return repo


def _cpu() -> float:
    times = os.times()
    return times.user + times.system + times.children_user + times.children_system


def runs(repo: Path) -> dict[str, Callable[[], LintResult]]:
    specs = repo / "specs"

    def diff() -> LintResult:
        old, new = load_git_set("HEAD", Path("specs"), repo), load_set(specs)
        return lint(replace(old, lock=None), replace(new, lock=None))

    def locked() -> LintResult:
        return lint(load_git_set("HEAD", Path("specs"), repo), load_set(specs))

    def with_history() -> LintResult:
        memory = history_memory(repo, ["HEAD"], "specs")
        return lint(load_git_set("HEAD", Path("specs"), repo), load_set(specs), history=memory)

    return {"diff": diff, "lock": locked, "history": with_history}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--commits", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    if not SPECS.is_dir():
        sys.exit(f"{SPECS} is missing: run `make setup` first")
    with tempfile.TemporaryDirectory() as tmp:
        started = time.perf_counter()
        repo = make_repo(Path(tmp), args.commits)
        print(f"repository: {args.commits + 2} commits ({time.perf_counter() - started:.1f} s)")
        cases = runs(repo)
        for name, run in cases.items():  # same verdict for all: the working tree is HEAD
            assert run().exit_code == 0, name
        best = {name: (float("inf"), float("inf")) for name in cases}
        for _ in range(args.repeat):
            for name, run in cases.items():
                cpu, wall = _cpu(), time.perf_counter()
                run()
                spent = (_cpu() - cpu, time.perf_counter() - wall)
                best[name] = (min(best[name][0], spent[0]), min(best[name][1], spent[1]))
        base_cpu, base_wall = best["diff"]
        print(f"{'run':<8} {'cpu s':>7} {'wall s':>7} {'cpu ratio':>9} {'wall ratio':>10}")
        for name, (cpu, wall) in best.items():
            print(
                f"{name:<8} {cpu:7.3f} {wall:7.3f} {cpu / base_cpu:9.2f} {wall / base_wall:10.2f}"
            )


if __name__ == "__main__":
    main()
