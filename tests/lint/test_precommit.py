"""The pre-commit hooks, run as docs/lint.md shows them, in a new git repository.

The remote form pins this repository at its HEAD commit (pre-commit clones it and
pip-installs it into its own environment, which needs PyPI); the ``repo: local`` form runs the
installed ``kafka-specgen``. pre-commit itself comes from the test environment when it has it,
otherwise it is installed into a virtualenv of the test session.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib
import venv
from collections.abc import Iterator
from pathlib import Path

import pytest
from skips import skip_conditionally

from codegen.lint.memory import LOCK_NAME
from tests.lint.helpers import field, message
from tests.lint.histories import IDS, SCENARIOS, Scenario, put

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs" / "lint.md"
_YAML = re.compile(r"^```yaml\n(?P<body>repos:\n.*?)^```$", re.M | re.S)
_OFFLINE = ("NewConnectionError", "Temporary failure in name resolution", "No route to host")

OLD = message([field("A"), field("B", "string")])
BREAKING = message([field("A", "int64"), field("B", "string")])
COMPATIBLE = message([field("A"), field("B", "string"), field("C", versions="3+")], valid="0-3")


def _config(marker: str) -> str:
    """The ``.pre-commit-config.yaml`` block of docs/lint.md that contains ``marker``."""
    blocks = [m["body"] for m in _YAML.finditer(DOCS.read_text())]
    (block,) = [b for b in blocks if marker in b]
    return block


def _run(args: list[str], cwd: Path, env: dict[str, str], timeout: float = 90) -> str:
    done = subprocess.run(
        args, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )
    if done.returncode != 0:
        output = done.stdout + done.stderr
        if any(sign in output for sign in _OFFLINE):
            skip_conditionally(f"PyPI is not reachable: {args[:3]}")
        raise AssertionError(f"{args} failed ({done.returncode}):\n{output[-3000:]}")
    return done.stdout


@pytest.fixture(scope="module")
def pre_commit(tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[str]]:
    """The command that runs pre-commit."""
    try:
        import pre_commit  # noqa: F401
    except ImportError:
        home = tmp_path_factory.mktemp("pre-commit-venv")
        venv.create(home, with_pip=True)
        python = home / "bin" / "python"
        _run([str(python), "-m", "pip", "install", "-q", "pre-commit"], home, dict(os.environ))
        yield [str(python), "-m", "pre_commit"]
    else:
        yield [sys.executable, "-m", "pre_commit"]


def _env(tmp_path: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    env |= {
        "PRE_COMMIT_HOME": str(tmp_path / "pre-commit-home"),
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.com",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.com",
        "GIT_CONFIG_GLOBAL": os.devnull,
    }
    return env


def _commit(repo: Path, env: dict[str, str], spec: str) -> subprocess.CompletedProcess[str]:
    (repo / "message_specs" / "Sample.json").write_text(spec)
    subprocess.run(["git", "add", "-A"], cwd=repo, env=env, check=True)
    return subprocess.run(
        ["git", "commit", "-qm", "change the spec"],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        timeout=90,
        check=False,
    )


def _check_hook(repo: Path, env: dict[str, str], pre_commit: list[str], config: str) -> None:
    (repo / "message_specs").mkdir(parents=True)
    (repo / "message_specs" / "Sample.json").write_text(OLD)
    (repo / ".pre-commit-config.yaml").write_text(config)
    _run(["git", "init", "-q"], repo, env)
    _run([*pre_commit, "install"], repo, env)
    _run([*pre_commit, "install-hooks"], repo, env)
    _run(["git", "add", "-A"], repo, env)
    _run(["git", "commit", "-qm", "specs", "--no-verify"], repo, env)

    failed = _commit(repo, env, BREAKING)
    output = failed.stdout + failed.stderr
    assert failed.returncode == 1, output
    assert "Kafka message spec evolution lint" in output
    assert (
        "message_specs/Sample.json:7: $.fields[0].type: breaking [field-type-changed] (wire) field A "
        "type changed from int32 to int64" in output
    )
    # the breaking change stays uncommitted: put the old spec back, then a compatible change
    (repo / "message_specs" / "Sample.json").write_text(OLD)
    passed = _commit(repo, env, COMPATIBLE)
    assert passed.returncode == 0, passed.stdout + passed.stderr
    assert "Passed" in passed.stdout + passed.stderr


def test_docs_pin_the_release_tag() -> None:
    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    remote = _config("repo: https://")
    assert f"rev: v{version}" in remote
    hooks = (ROOT / ".pre-commit-hooks.yaml").read_text()
    assert f"rev: v{version}" in hooks
    assert {"kafka-spec-lint", "kafka-spec-lint-github"} <= set(
        re.findall(r"^- id: (\S+)", hooks, re.M)
    )


@pytest.mark.slow
def test_remote_form_at_head(tmp_path: Path, pre_commit: list[str]) -> None:
    head = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.strip()
    remote = _config("repo: https://")
    config = re.sub(r"repo: \S+", f"repo: {ROOT.as_posix()}", remote, count=1)
    config = re.sub(r"rev: \S+", f"rev: {head}", config, count=1)
    assert config != remote
    _check_hook(tmp_path / "repo", _env(tmp_path), pre_commit, config)


def _local_env(tmp_path: Path) -> dict[str, str]:
    env = _env(tmp_path)
    # the "installed" kafka-specgen: this checkout, run by the test's interpreter
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    script = bin_dir / "kafka-specgen"
    script.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m codegen "$@"\n')
    script.chmod(0o755)
    env["PATH"] = f"{bin_dir}{os.pathsep}{env['PATH']}"
    env["PYTHONPATH"] = str(ROOT)
    return env


def test_local_form(tmp_path: Path, pre_commit: list[str]) -> None:
    _check_hook(tmp_path / "repo", _local_env(tmp_path), pre_commit, _config("repo: local"))


def _git_commit(repo: Path, env: dict[str, str], *flags: str) -> subprocess.CompletedProcess[str]:
    subprocess.run(["git", "add", "-A"], cwd=repo, env=env, check=True)
    return subprocess.run(
        ["git", "commit", "-qm", "change the specs", *flags],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        timeout=90,
        check=False,
    )


@pytest.mark.parametrize("case", SCENARIOS, ids=IDS)
def test_local_form_with_the_lock_stops_the_two_commit_walk_around(
    tmp_path: Path, pre_commit: list[str], case: Scenario
) -> None:
    """docs/lint.md's hook and lock: retire in one commit, reuse in the next; it fails."""
    env = _local_env(tmp_path)
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / ".pre-commit-config.yaml").write_text(_config("repo: local"))
    _run(["git", "init", "-q"], repo, env)
    _run([*pre_commit, "install"], repo, env)
    put(repo, case.shipped, "message_specs")
    _run(["kafka-specgen", "lint", "--write-lock", "message_specs"], repo, env)
    assert (repo / "message_specs" / LOCK_NAME).is_file()
    first = _git_commit(repo, env, "--no-verify")  # no HEAD to compare with yet
    assert first.returncode == 0, first.stderr

    put(repo, case.retired, "message_specs")
    retired = _git_commit(repo, env)
    output = retired.stdout + retired.stderr
    if case.shipped.keys() - case.retired.keys():
        # deleting a spec is breaking on its own: a deliberate retirement goes in unchecked
        assert retired.returncode == 1, output
        assert "[spec-removed]" in output
        assert _git_commit(repo, env, "--no-verify").returncode == 0
    else:
        assert retired.returncode == 0, output  # a removed tagged field is a warning

    put(repo, case.reused, "message_specs")
    reused = _git_commit(repo, env)
    output = reused.stdout + reused.stderr
    assert reused.returncode == 1, output
    for rule_id in case.rules:
        assert f": breaking [{rule_id}]" in output

    # the control: the thing back with its meaning, the lock written again, passes
    put(repo, case.restored, "message_specs")
    _run(["kafka-specgen", "lint", "--write-lock", "message_specs"], repo, env)
    restored = _git_commit(repo, env)
    assert restored.returncode == 0, restored.stdout + restored.stderr


def test_hooks_install_the_generator_extra() -> None:
    # pre-commit pip-installs the repository without extras; the lint needs the generator's.
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extra = project["optional-dependencies"]["generator"]
    hooks = (ROOT / ".pre-commit-hooks.yaml").read_text()
    listed = re.findall(r"^  additional_dependencies: \[(.*)\]$", hooks, re.M)
    assert len(listed) == len(re.findall(r"^- id: ", hooks, re.M))
    for line in listed:
        assert re.findall(r'"([^"]+)"', line) == extra
