"""The memory of retired uses, over git histories built here (two and three commits).

Each scenario retires one thing in one commit and brings it back with another meaning in the
next: a tag, a field name, a record type id, an apiKey, in a flexible client request and in a
coordinator value. Compared with the commit before it, the reuse looks like an addition; only
the memory (the git history, or the lock) sees it. Every run starts outside the repository.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from codegen.lint.command import lint_command
from codegen.lint.memory import LOCK_NAME
from tests.lint.helpers import field, message
from tests.lint.histories import IDS, SCENARIOS, Scenario, commit, git, history, put


def lint(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(lint_command, ["--no-config", *args])
    return result.exit_code, result.stdout + result.stderr


def breaking(out: str) -> set[str]:
    return set(re.findall(r": breaking \[([a-z-]+)\]", out))


def exit_of(case: Scenario) -> int:
    """1 when the reuse fails by default (wire); a json finding is reported and passes."""
    return 1 if case.fails else 0


@pytest.fixture(autouse=True)
def _outside(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every command runs from a folder outside the repository."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)


# --------------------------------------------------------------------------- two commits


@pytest.mark.parametrize("case", SCENARIOS, ids=IDS)
def test_two_commits_then_the_reuse_in_the_working_tree(tmp_path: Path, case: Scenario) -> None:
    repo = history(tmp_path, case.shipped, case.retired)
    put(repo, case.reused)
    specs = str(repo / "specs")
    # compared with HEAD alone the reuse is an addition: the walk-around of a plain diff
    code, out = lint("--git", "HEAD", "--no-history", specs)
    assert code == 0, out
    # the git history remembers commit 1
    code, out = lint("--git", "HEAD", specs)
    assert code == exit_of(case), out
    assert breaking(out) == case.rules
    first = git(repo, "rev-list", "--max-parents=0", "HEAD").strip()
    assert f"in commit {first[:12]}" in out


@pytest.mark.parametrize("case", SCENARIOS, ids=IDS)
def test_two_commits_with_the_lock_and_no_history(tmp_path: Path, case: Scenario) -> None:
    repo = history(tmp_path, case.shipped)
    specs = str(repo / "specs")
    code, out = lint("--write-lock", specs)
    assert code == 0, out
    assert (repo / "specs" / LOCK_NAME).is_file()
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "the lock")
    commit(repo, case.retired, "retire")
    put(repo, case.reused)
    code, out = lint("--git", "HEAD", "--no-history", specs)
    assert code == 1, out
    # the reuse is breaking, and the lock does not hold the new uses yet
    assert breaking(out) == {*case.rules, "lock-outdated"}
    assert "in the lock at HEAD" in out


@pytest.mark.parametrize("case", SCENARIOS, ids=IDS)
def test_folder_mode_reads_the_lock(tmp_path: Path, case: Scenario) -> None:
    """Outside git: the old folder's lock holds what commit 1 had."""
    repo = history(tmp_path, case.shipped)
    assert lint("--write-lock", "--no-history", str(repo / "specs"))[0] == 0
    put(repo, case.retired)  # the old folder: retired specs, the lock of the shipped ones
    old, new = tmp_path / "old", tmp_path / "new"
    subprocess.run(["cp", "-r", str(repo / "specs"), str(old)], check=True)
    put(repo, case.reused)
    (repo / "specs" / LOCK_NAME).unlink()
    subprocess.run(["cp", "-r", str(repo / "specs"), str(new)], check=True)
    code, out = lint(str(old), str(new))
    assert code == exit_of(case), out
    assert breaking(out) == case.rules
    assert "in the lock" in out


# --------------------------------------------------------------------------- three commits


@pytest.mark.parametrize("case", SCENARIOS, ids=IDS)
def test_three_commits_in_any_range(tmp_path: Path, case: Scenario) -> None:
    repo = history(tmp_path, case.shipped, case.retired, case.reused)
    specs = str(repo / "specs")
    for refs in ("HEAD~1..HEAD", "HEAD~1"):
        code, out = lint("--git", refs, specs)
        assert code == exit_of(case), (refs, out)
        assert breaking(out) == case.rules, refs
        # json findings fail where JSON readers count
        strict = lint("--git", refs, "--fail-categories", "wire-json", specs)
        assert strict[0] == 1, (refs, strict[1])
    # release 1 against release 3: the diff itself sees it (the same finding)
    code, out = lint("--git", "HEAD~2..HEAD", specs)
    assert code == exit_of(case), out
    # the labels name the refs and the path inside the repository
    assert "HEAD~1:specs -> HEAD:specs" in lint("--git", "HEAD~1..HEAD", specs)[1]


@pytest.mark.parametrize("case", SCENARIOS[:2], ids=IDS[:2])
def test_an_unrelated_commit_between_does_not_hide_it(tmp_path: Path, case: Scenario) -> None:
    unrelated = {**case.retired, "Extra.json": message([field("X")], name="Extra")}
    reused = {**case.reused, "Extra.json": unrelated["Extra.json"]}
    repo = history(tmp_path, case.shipped, case.retired, unrelated, reused)
    code, out = lint("--git", "HEAD~1..HEAD", str(repo / "specs"))
    assert code == exit_of(case), out
    assert breaking(out) == case.rules


# --------------------------------------------------------------------------- controls


@pytest.mark.parametrize("case", SCENARIOS, ids=IDS)
def test_the_thing_back_with_its_meaning_passes(tmp_path: Path, case: Scenario) -> None:
    """A retired tag back as the same field (name and type: old writers' bytes mean what
    they meant), a field name back with its type, a record type id or apiKey back with its
    spec: no reuse. A new tag after them (tag 2 in the tag scenarios) is new."""
    repo = history(tmp_path, case.shipped, case.retired)
    put(repo, case.restored)
    code, out = lint("--git", "HEAD", str(repo / "specs"))
    assert code == 0, out
    commit(repo, case.restored, "restore")
    assert lint("--git", "HEAD~2..HEAD", str(repo / "specs"))[0] == 0


def test_retiring_alone_passes_and_history_of_another_folder_is_not_mixed_in(
    tmp_path: Path,
) -> None:
    case = SCENARIOS[0]
    repo = history(tmp_path, case.shipped, case.retired)
    code, out = lint("--git", "HEAD~1..HEAD", str(repo / "specs"))
    assert code == 0, out
    assert "[tagged-field-removed]" in out
    # the same spec name in another folder of the repository has its own history
    other = repo / "other"
    other.mkdir()
    (other / "SampleRequest.json").write_text(case.reused["SampleRequest.json"])
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "another folder")
    assert lint("--git", "HEAD~1..HEAD", str(other))[0] == 0


# --------------------------------------------------------------------------- the lock


def test_lock_outdated_until_written_again(tmp_path: Path) -> None:
    case = SCENARIOS[0]
    repo = history(tmp_path, case.shipped)
    specs = str(repo / "specs")
    assert lint("--write-lock", specs)[0] == 0
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "lock")
    put(repo, case.restored)  # adds BrokerCount, tag 2: compatible, but not in the lock
    code, out = lint("--git", "HEAD", specs)
    assert code == 1
    assert breaking(out) == {"lock-outdated"}
    assert "tag 2 of SampleRequest (BrokerCount int32)" in out
    code, out = lint("--write-lock", specs)
    assert (code, out.count(" new")) == (0, 1), out
    assert lint("--git", "HEAD", specs)[0] == 0


def test_removing_entries_from_the_lock_changes_nothing(tmp_path: Path) -> None:
    case = SCENARIOS[0]
    repo = history(tmp_path, case.shipped)
    specs = repo / "specs"
    assert lint("--write-lock", str(specs))[0] == 0
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "lock")
    lock = specs / LOCK_NAME
    commit(repo, case.retired, "retire")
    # drop what the retired tag was from the lock, then reuse the tag
    lock.write_text(lock.read_text().replace('"ClusterLabel string"', '"Note string"'))
    put(repo, case.reused)
    code, out = lint("--git", "HEAD", "--no-history", str(specs))
    assert code == 1
    assert "tag-reused" in breaking(out)
    assert "the lock lost" in out


def test_a_broken_lock_is_invalid_input(tmp_path: Path) -> None:
    specs = tmp_path / "specs"
    put(tmp_path, SCENARIOS[0].shipped)
    (specs / LOCK_NAME).write_text('{"format": 1, "specs": []}')
    code, out = lint(str(specs), str(specs))
    assert code == 2
    assert f"{LOCK_NAME}:1: $: 'specs' is not an object" in out


def test_write_lock_outside_git_notes_it(tmp_path: Path) -> None:
    put(tmp_path, SCENARIOS[0].shipped)
    code, out = lint("--write-lock", str(tmp_path / "specs"))
    assert code == 0
    assert "(no git history: not in a repository, or no commit yet)" in out
    text = (tmp_path / "specs" / LOCK_NAME).read_text()
    assert '"ClusterLabel string"' in text
    assert text == (tmp_path / "specs" / LOCK_NAME).read_text()  # stable text


def test_write_lock_keeps_what_history_had(tmp_path: Path) -> None:
    case = SCENARIOS[0]
    repo = history(tmp_path, case.shipped, case.retired)
    assert lint("--write-lock", str(repo / "specs"))[0] == 0
    lock = (repo / "specs" / LOCK_NAME).read_text()
    assert '"ClusterLabel string"' in lock  # from commit 1, though the specs lack it


# --------------------------------------------------------------------------- configuration


def test_paths_in_the_configuration(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    case = SCENARIOS[0]
    repo = history(tmp_path, case.shipped, case.retired)
    (repo / "pyproject.toml").write_text('[tool.kafka-specgen.lint]\npaths = ["specs"]\n')
    put(repo, case.reused)
    (repo / "sub").mkdir()
    monkeypatch.chdir(repo / "sub")
    result = CliRunner().invoke(lint_command, [])
    assert result.exit_code == 1, result.output
    assert "HEAD:specs -> ../specs" in result.stdout
    assert breaking(result.stdout) == {"tag-reused"}
    (repo / "pyproject.toml").write_text(
        '[tool.kafka-specgen.lint]\npaths = ["specs"]\nagainst = "HEAD~1"\n'
    )
    result = CliRunner().invoke(lint_command, [])
    assert "HEAD~1:specs -> ../specs" in result.stdout


def test_no_path_and_no_message_specs_says_what_to_do() -> None:
    code, out = lint("--git", "HEAD")
    assert code == 2
    assert "no spec path given and ./message_specs does not exist" in out
    assert "paths = [" in out


def test_not_a_repository_is_invalid_input(tmp_path: Path) -> None:
    put(tmp_path, SCENARIOS[0].shipped)
    code, out = lint("--git", "HEAD", str(tmp_path / "specs"))
    assert code == 2
    assert "git rev-parse --show-toplevel" in out


@pytest.mark.parametrize("refs", ["A...B", "..B", "A.."])
def test_bad_ranges(refs: str) -> None:
    code, out = lint("--git", refs, "x")
    assert code == 2
    assert f"--git {refs}" in out
