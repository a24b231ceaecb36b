"""Shared fixtures: codec packages generated into the session's tmp dir, and the coverage line
of the Kafka oracle tests (printed in the terminal summary, merged across xdist workers)."""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

CodecPackage = Callable[[str, Sequence[Path]], ModuleType]


@pytest.fixture(scope="session")
def codec_package(tmp_path_factory: pytest.TempPathFactory) -> Iterator[CodecPackage]:
    """``make(package, spec_roots)``: generate the specs into ``<tmp>/<package>`` (once per
    worker) and import the package. Give each spec corpus its own package name: spec names
    repeat between corpora."""
    from codegen.emit import write_package

    root = tmp_path_factory.mktemp("codecs")
    sys.path.insert(0, str(root))
    made: dict[str, ModuleType] = {}

    def make(package: str, spec_roots: Sequence[Path]) -> ModuleType:
        if package not in made:
            write_package(list(spec_roots), root / package)
            made[package] = importlib.import_module(package)
        return made[package]

    yield make
    sys.path.remove(str(root))


class OracleCoverage:
    """What the Kafka differential tests compared."""

    def __init__(self) -> None:
        self.messages: set[str] = set()
        self.pairs: set[tuple[str, int]] = set()
        self.cases = 0
        self.mismatches: set[str] = set()  # what differed (shrinking reruns counted once)

    def dump(self) -> dict[str, Any]:
        return {
            "messages": sorted(self.messages),
            "pairs": sorted([list(p) for p in self.pairs]),
            "cases": self.cases,
            "mismatches": sorted(self.mismatches),
        }

    def merge(self, data: dict[str, Any]) -> None:
        self.messages.update(data["messages"])
        self.pairs.update((str(n), int(v)) for n, v in data["pairs"])
        self.cases += int(data["cases"])
        self.mismatches.update(data["mismatches"])

    def line(self) -> str:
        return (
            f"Kafka oracle coverage: {len(self.messages)} messages, "
            f"{len(self.pairs)} (message, version) pairs, {self.cases} cases, "
            f"{len(self.mismatches)} mismatches"
        )


_COVERAGE = pytest.StashKey[OracleCoverage]()


def _coverage(config: pytest.Config) -> OracleCoverage:
    return config.stash.setdefault(_COVERAGE, OracleCoverage())


@pytest.fixture(scope="session")
def oracle_coverage(request: pytest.FixtureRequest) -> OracleCoverage:
    return _coverage(request.config)


def pytest_sessionfinish(session: pytest.Session) -> None:
    output = getattr(session.config, "workeroutput", None)  # set on xdist workers
    if output is not None and _COVERAGE in session.config.stash:
        output["oracle_coverage"] = session.config.stash[_COVERAGE].dump()


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: Any) -> None:
    data = getattr(node, "workeroutput", {}).get("oracle_coverage")
    if data is not None:
        _coverage(node.config).merge(data)


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    if _COVERAGE in config.stash:
        terminalreporter.write_line(config.stash[_COVERAGE].line())


# The tests that exercise the generated codecs (decode, encode, rows, errors, the Kafka oracle,
# real data): marked ``codec``, so ``make test`` runs them once more on the pure backend.
CODEC_TESTS = {
    "test_backends.py",
    "test_dumps_fast_path.py",
    "test_dumps_records.py",
    "test_encode_checks.py",
    "test_oracle_diff.py",
    "test_roundtrip.py",
    "test_row_readers.py",
    "test_vectors_codecs.py",
    "fuzz/test_fuzz_decode.py",
    "fuzz/test_fuzz_encode.py",
}
TESTS = Path(__file__).resolve().parent


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if item.path.relative_to(TESTS).as_posix() in CODEC_TESTS:
            item.add_marker(pytest.mark.codec)


def pytest_report_header(config: pytest.Config) -> str:
    from codegen.runtime import backend

    return (
        f"codec backend: {backend()} (SPECGEN_BACKEND={os.environ.get('SPECGEN_BACKEND', 'auto')})"
    )


@pytest.fixture(scope="session")
def broker_run(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """A real broker of the pinned release, loaded by the group workload and stopped: its log
    folder and the truth it answered (``tests/broker/client.py``). Once per session (all
    ``kafka`` tests share one xdist group)."""
    from broker.client import missing_reason, run_broker

    reason = missing_reason()
    if reason is not None:
        if os.environ.get("CI") == "true":  # make setup fetches the broker: CI must run these
            pytest.fail(f"Kafka broker: {reason}")
        pytest.skip(f"Kafka broker: {reason}")
    return run_broker(tmp_path_factory.mktemp("broker"))
