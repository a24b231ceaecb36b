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


def _pytest(folder: Path, *args: str, ci: bool) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("CI", "PYTEST_ADDOPTS")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(TESTS), env.get("PYTHONPATH")]))
    if ci:
        env["CI"] = "true"
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:randomly", "-rfEs", *args],
        cwd=folder,
        env=env,
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


def test_every_skip_is_listed_with_its_reason(suite: Path) -> None:
    proc = _pytest(suite, ci=False)
    assert proc.returncode == 0, proc.stdout
    skipped = [x for x in proc.stdout.splitlines() if x.startswith("SKIPPED")]
    assert sorted(x.split(": ", 1)[1] for x in skipped) == [
        "PyPI is not reachable",
        "jar Y not fetched (make setup)",
        "tool X not installed (apt-get install -y x)",
    ]
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
    assert lines[0].startswith("[time progress] 5 tests, about 0m 00s of test time (estimated")
    assert all(" of the estimated test time: " in x for x in lines[1:]), lines
    cache = suite / ".pytest_cache" / "v" / "kafka-specgen" / "durations" / "auto" / "all"
    durations = json.loads(cache.read_text())
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
    assert "(timed in the last run)" in lines[0]
    assert lines[1].startswith("[time progress]  "), lines
    assert " of the estimated test time: 1 of 5 tests in " in lines[1]


def test_estimates_by_kind_put_spark_and_the_broker_above_the_rest() -> None:
    assert estimate("tests/spark/test_spark.py::test_x") > estimate("tests/test_roundtrip.py::t")
    assert estimate("tests/test_broker.py::test_x") > estimate("tests/fuzz/test_fuzz_decode.py::t")
