"""What ``make test`` relies on to say where a run is and what it skipped: the time-weighted
progress lines (tests/progress.py) and, under ``CI=true``, skips that fail (tests/skips.py).

Each test runs pytest in a subprocess on a small suite written into a temporary folder, with a
conftest that registers the plugins as tests/conftest.py does.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from progress import estimate

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent
REPORT = ["-rfEsxX"]
"""make test's summary flags (the Makefile's PYTEST): failures, errors, skips and xfails named."""

CONFTEST = """
import pytest
from progress import TimeProgress
from skips import SkipsFailInCi, ci_requires_everything


def pytest_addoption(parser):
    parser.addoption("--time-progress", action="store_true")


def pytest_configure(config):
    if config.getoption("--time-progress"):
        config.pluginmanager.register(TimeProgress(config))
    if ci_requires_everything():
        config.pluginmanager.register(SkipsFailInCi())
"""

SUITE = """
import time

import pytest
from skips import skip_conditionally


def test_passes():
    time.sleep(0.05)


def test_needs_a_tool():
    pytest.skip("tool X not installed (apt-get install -y x)")


@pytest.mark.skipif(True, reason="jar Y not fetched (make setup)")
def test_needs_a_jar():
    pass


def test_needs_the_network():
    skip_conditionally("PyPI is not reachable")


@pytest.mark.xfail(reason="known", strict=True)
def test_known_failure():
    raise AssertionError
"""


def _pytest(
    folder: Path, *args: str, ci: bool, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    drop = ("CI", "PYTEST_ADDOPTS", "SPECGEN_BACKEND", "SPECGEN_SPARK_CONNECT")
    run_env = {k: v for k, v in os.environ.items() if k not in drop} | (env or {})
    run_env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(TESTS), run_env.get("PYTHONPATH")]))
    if ci:
        run_env["CI"] = "true"
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:randomly", *REPORT, *args],
        cwd=folder,
        env=run_env,
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.fixture
def suite(tmp_path: Path) -> Path:
    (tmp_path / "conftest.py").write_text(CONFTEST)
    (tmp_path / "test_suite.py").write_text(SUITE)
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    return tmp_path


def test_make_test_names_skips_and_xfails_in_every_phase() -> None:
    makefile = (ROOT / "Makefile").read_text().replace("\\\n", " ")  # continued lines joined
    pytest_lines = [x for x in makefile.splitlines() if "-m pytest" in x and "--time-progress" in x]
    assert len(pytest_lines) == 2, pytest_lines  # PYTEST (native and pure) and the Connect phase
    assert all(f" {REPORT[0]}" in x for x in pytest_lines), pytest_lines


def test_every_skip_and_xfail_is_listed_with_its_reason(suite: Path) -> None:
    proc = _pytest(suite, ci=False)
    assert proc.returncode == 0, proc.stdout
    skipped = [x for x in proc.stdout.splitlines() if x.startswith("SKIPPED")]
    assert sorted(x.split(": ", 1)[1] for x in skipped) == [
        "PyPI is not reachable",
        "jar Y not fetched (make setup)",
        "tool X not installed (apt-get install -y x)",
    ]
    assert "XFAIL test_suite.py::test_known_failure - known" in proc.stdout.splitlines()
    assert "1 passed, 3 skipped, 1 xfailed" in proc.stdout


def test_under_ci_a_skip_fails_unless_conditional(suite: Path) -> None:
    proc = _pytest(suite, ci=True)
    assert proc.returncode == 1, proc.stdout
    summary = [x.split(" - ")[0] for x in proc.stdout.splitlines() if x.startswith(("FAIL", "ERR"))]
    assert sorted(summary) == [
        "ERROR test_suite.py::test_needs_a_jar",  # skipped by its mark, in the set-up phase
        "FAILED test_suite.py::test_needs_a_tool",
    ]
    assert (
        "CI=true: this test skipped, but make setup installs everything the tests need: "
        "tool X not installed (apt-get install -y x)"
    ) in proc.stdout
    assert "SKIPPED [1] test_suite.py:21: PyPI is not reachable"  # the test's line in proc.stdout
    assert "1 failed, 1 passed, 1 skipped, 1 xfailed, 1 error" in proc.stdout


def test_under_ci_a_module_that_skips_at_import_fails(suite: Path) -> None:
    (suite / "test_suite.py").unlink()
    (suite / "test_module.py").write_text(
        "import pytest\npytest.importorskip('no_such_module_here')\n\ndef test_x():\n    pass\n"
    )
    assert "1 skipped" in _pytest(suite, ci=False).stdout
    proc = _pytest(suite, ci=True)
    assert proc.returncode != 0
    assert "CI=true: test_module.py skipped, but make setup installs" in proc.stdout


def test_progress_lines_weigh_tests_by_their_last_durations(suite: Path) -> None:
    first = _pytest(suite, "--time-progress", ci=False)
    assert first.returncode == 0, first.stdout
    lines = [x for x in first.stdout.splitlines() if x.startswith("[time progress]")]
    assert lines[0] == (
        "[time progress] 5 tests, about 0m 00s of test time (estimated by kind: no earlier run "
        "in .pytest_cache); a line at every 10% of it"
    )
    assert all(" of the estimated test time: " in x for x in lines[1:]), lines
    cache = suite / ".pytest_cache" / "v" / "kafka-specgen" / "durations"
    durations = json.loads(cache.read_text())["auto/all"]
    assert sorted(durations) == sorted(
        f"test_suite.py::{name}"
        for name in (
            "test_passes",
            "test_needs_a_tool",
            "test_needs_a_jar",
            "test_needs_the_network",
            "test_known_failure",
        )
    )
    assert durations["test_suite.py::test_passes"] >= 0.05
    # The second run weighs each test by its first run's time: the slow one is most of it.
    second = _pytest(suite, "--time-progress", ci=False)
    lines = [x for x in second.stdout.splitlines() if x.startswith("[time progress]")]
    assert "of test time (timed in this phase's last run)" in lines[0]
    assert lines[1].startswith("[time progress]  "), lines
    assert " of the estimated test time: 1 of 5 tests in " in lines[1]


def test_each_phase_keeps_its_own_durations_and_borrows_another_phases(suite: Path) -> None:
    """make test's phases (native, pure backend, Spark Connect) time the same tests apart; a
    phase without a run of its own weighs its tests by another phase's times, not by kind."""
    (suite / "test_slow.py").write_text("import time\n\ndef test_slow():\n    time.sleep(0.4)\n")
    assert _pytest(suite, "--time-progress", ci=False).returncode == 0
    pure = {"SPECGEN_BACKEND": "pure"}
    proc = _pytest(suite, "--time-progress", "test_slow.py", ci=False, env=pure)
    first = next(x for x in proc.stdout.splitlines() if x.startswith("[time progress]"))
    assert first.startswith("[time progress] 1 tests, about 0m 00s of test time (1 in another")
    connect = {"SPECGEN_SPARK_CONNECT": "1"}
    assert _pytest(suite, "--time-progress", "-m", "not x", ci=False, env=connect).returncode == 0
    phases = json.loads((suite / ".pytest_cache/v/kafka-specgen/durations").read_text())
    assert sorted(phases) == ["auto+connect/not x", "auto/all", "pure/all"]
    assert list(phases["pure/all"]) == ["test_slow.py::test_slow"]
    assert phases["pure/all"]["test_slow.py::test_slow"] >= 0.4
    assert len(phases["auto/all"]) == 6


def test_the_estimate_is_divided_among_the_workers(suite: Path) -> None:
    (suite / "test_slow.py").write_text(
        "import time\n\ndef test_a():\n    time.sleep(1.5)\n\ndef test_b():\n    time.sleep(1.5)\n"
    )
    assert _pytest(suite, "--time-progress", ci=False).returncode == 0
    proc = _pytest(suite, "--time-progress", "-n", "2", ci=False)
    assert proc.returncode == 0, proc.stdout
    first = next(x for x in proc.stdout.splitlines() if x.startswith("[time progress]"))
    assert first.startswith("[time progress] 7 tests, about 0m 01s on 2 workers (0m 03s of test ")


def test_estimates_by_kind_put_spark_and_the_broker_above_the_rest() -> None:
    assert estimate("tests/spark/test_spark.py::test_x") > estimate("tests/test_roundtrip.py::t")
    assert estimate("tests/test_broker.py::test_x") > estimate("tests/fuzz/test_fuzz_decode.py::t")


def _machine(tmp_path: Path, mode: str, uid: int, **env: str) -> subprocess.CompletedProcess[str]:
    """tests/machine.sh with a PATH of stand-ins: Java 17, javac, Maven and a C compiler,
    no Chromium; ``id -u`` says ``uid``; apt-get (where given) records its arguments and
    installs Chromium's stand-in."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    tools = {
        "java": "echo 'openjdk version \"17.0.15\" 2025-04-15' >&2",
        "javac": "true",
        "mvn": "true",
        "cc": "true",
        "id": f"echo {uid}",
        "apt-get": (
            f'echo "$*" >> {tmp_path}/apt.log\n'
            f'case "$*" in *install*) printf "#!/bin/sh\\n" > {bin_dir}/chromium;'
            f" chmod +x {bin_dir}/chromium;; esac"
        ),
    }
    for name, body in tools.items():
        (bin_dir / name).write_text(f"#!/bin/bash\n{body}\n")
        (bin_dir / name).chmod(0o755)
    for name in ("sed", "head", "sort", "env", "true", "chmod"):
        if not (bin_dir / name).exists():
            real = subprocess.run(["which", name], capture_output=True, text=True).stdout
            (bin_dir / name).symlink_to(real.strip())
    return subprocess.run(
        ["/bin/bash", str(TESTS / "machine.sh"), mode],
        env={"PATH": str(bin_dir), **env},
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_setup_stops_for_a_missing_chromium_as_for_java_where_it_cannot_install(
    tmp_path: Path,
) -> None:
    proc = _machine(tmp_path, "install", uid=1000)
    assert proc.returncode == 1, proc.stdout
    assert "machine: chromium missing, and this user cannot install them" in proc.stdout
    assert (
        "  chromium  MISSING: renders the HTML lag report in its test (it skips without it); "
        "install: sudo apt-get install -y chromium"
    ) in proc.stdout.splitlines()
    assert "install the tools marked MISSING, then run make setup again" in proc.stderr
    assert not (tmp_path / "apt.log").exists()
    spared = _machine(tmp_path, "install", uid=1000, ALLOW_MISSING="chromium")
    assert spared.returncode == 0, spared.stdout
    assert "  chromium  missing, allowed (ALLOW_MISSING)" in spared.stdout
    in_ci = _machine(tmp_path, "check", uid=1000, ALLOW_MISSING="chromium", CI="true")
    assert in_ci.returncode == 1  # under CI a skip fails: nothing may be missing


def test_setup_installs_what_is_missing_where_it_can(tmp_path: Path) -> None:
    proc = _machine(tmp_path, "install", uid=0)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "machine: installing chromium (apt-get" in proc.stdout
    assert (tmp_path / "apt.log").read_text().splitlines() == [
        "update -qq",
        "install -y -qq chromium",
    ]
    assert f"  chromium  {tmp_path / 'bin' / 'chromium'}" in proc.stdout.splitlines()
