"""The fuzz harness: hypothesis profiles and a time budget for the tests of this folder.

Tests here use plain ``@given`` (no ``@settings``): their settings come from a profile chosen
with the environment variable ``KAFKA_SPECGEN_FUZZ``:

- unset, empty or ``ci``: the ``ci`` profile, a short bounded round (``CI_EXAMPLES`` examples,
  at most ``CI_SECONDS`` per test) that every normal test run does;
- ``fuzz``: the ``fuzz`` profile for ``DEFAULT_FUZZ_SECONDS``;
- a number of seconds (``make fuzz FUZZ_SECONDS=600``): the ``fuzz`` profile for that long.

In ``fuzz`` mode the examples are unlimited and the time is what stops a test: the seconds are
shared evenly by the selected test functions of this folder, and a function's share evenly by
its parametrized cases. A test that has found a failure is never stopped early, so hypothesis
can shrink it. The profiles apply to this folder only: the rest
of the suite keeps its own settings.
"""

from __future__ import annotations

import contextlib
import functools
import os
import time
from collections.abc import Callable, Generator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import pytest
from hypothesis import HealthCheck, settings
from hypothesis.errors import InvalidArgument, UnsatisfiedAssumption

FUZZ_ENV: Final = "KAFKA_SPECGEN_FUZZ"
CI_EXAMPLES: Final = 20
CI_SECONDS: Final = 30.0
"""A ceiling for one test in a normal run, so a slow example cannot stall the suite."""
DEFAULT_FUZZ_SECONDS: Final = 600.0
MIN_FUZZ_SECONDS: Final = 0.5
"""The least a parametrized case gets in a fuzz run (a run may then take a little longer)."""
HERE: Final = Path(__file__).resolve().parent

_COMMON: Final[dict[str, Any]] = {
    "deadline": None,  # time is bounded per test, not per example (machines are shared)
    "suppress_health_check": [
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.large_base_example,
        HealthCheck.function_scoped_fixture,
    ],
    "print_blob": True,  # a failure prints the @reproduce_failure line that replays it
}
settings.register_profile("ci", max_examples=CI_EXAMPLES, **_COMMON)
settings.register_profile("fuzz", max_examples=10**9, **_COMMON)


@dataclass(frozen=True)
class Mode:
    """The chosen profile and how long all the fuzz tests of a run may take together."""

    profile: str
    seconds: float | None
    """Total seconds of a ``fuzz`` run; None for ``ci``."""


def fuzz_mode(value: str | None) -> Mode:
    """The mode a value of ``KAFKA_SPECGEN_FUZZ`` selects."""
    text = (value or "").strip()
    if text in ("", "ci"):
        return Mode("ci", None)
    if text == "fuzz":
        return Mode("fuzz", DEFAULT_FUZZ_SECONDS)
    try:
        seconds = float(text)
    except ValueError:
        seconds = -1.0
    if not seconds > 0:
        raise pytest.UsageError(
            f"{FUZZ_ENV}={value!r}: give 'ci', 'fuzz' or a number of seconds above 0 "
            f"(such as {FUZZ_ENV}=600)"
        )
    return Mode("fuzz", seconds)


class BudgetSpent(BaseException):
    """Raised inside a hypothesis run when its time is up. Not an ``Exception``, so hypothesis
    does not take it for a failure: it ends the run, and the hook below ends the test.
    Hypothesis keeps the example it ended in, as it does for any exception; the next run
    replays it once, sees it pass and drops it."""


@dataclass
class Budget:
    """The time left to one test function (shared by its parametrized cases, run in turn)."""

    seconds: float
    deadline: float = 0.0
    failed: bool = False
    examples: int = 0
    spent: dict[str, tuple[int, float]] = field(default_factory=dict)
    """Test id -> (examples, seconds), for the summary of a fuzz run."""

    def guard(self, inner: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(inner)
        def timed(*args: Any, **kwargs: Any) -> Any:
            self.examples += 1
            try:
                result = inner(*args, **kwargs)
            except UnsatisfiedAssumption:
                raise
            except Exception:
                self.failed = True  # shrinking must not be cut short
                raise
            # Only after a whole example: one cut short (a test drawing with st.data()) would
            # look to hypothesis like a strategy that draws differently each time.
            if not self.failed and time.monotonic() > self.deadline:
                raise BudgetSpent
            return result

        return timed


_BUDGET = pytest.StashKey[Budget]()
_BUDGETS = pytest.StashKey[list[Budget]]()
_MODE = pytest.StashKey[Mode]()


def pytest_configure(config: pytest.Config) -> None:
    config.stash[_MODE] = fuzz_mode(os.environ.get(FUZZ_ENV))


def _in_this_folder(item: pytest.Item) -> bool:
    return HERE in Path(str(item.path)).resolve().parents


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if _in_this_folder(item):
            item.add_marker(pytest.mark.fuzz)


def pytest_collection_finish(session: pytest.Session) -> None:
    """Give each selected test of this folder its settings and its share of the time."""
    config = session.config
    mode = config.stash[_MODE]
    cases: dict[int, list[pytest.Function]] = {}  # test function -> its (parametrized) cases
    for item in session.items:
        fuzzed = isinstance(item, pytest.Function) and _in_this_folder(item)
        if fuzzed and getattr(item.obj, "is_hypothesis_test", False):
            cases.setdefault(id(item.obj), []).append(item)
    profile = settings.get_profile(mode.profile)
    budgets: list[Budget] = []
    for items in cases.values():
        if mode.seconds is None:
            seconds = CI_SECONDS
        else:  # each test function gets an equal share, split among its cases
            seconds = max(MIN_FUZZ_SECONDS, mode.seconds / len(cases) / len(items))
        budget = Budget(seconds)
        budgets.append(budget)
        test = items[0].obj
        # A test with its own @settings keeps them; the time budget still holds.
        with contextlib.suppress(InvalidArgument):
            settings(profile)(test)
        test.hypothesis.inner_test = budget.guard(test.hypothesis.inner_test)
        for item in items:
            item.stash[_BUDGET] = budget
    config.stash[_BUDGETS] = budgets


@pytest.hookimpl(wrapper=True)
def pytest_pyfunc_call(pyfuncitem: pytest.Function) -> Generator[None, object, object]:
    budget = pyfuncitem.stash.get(_BUDGET, None)
    if budget is None:
        return (yield)
    start = time.monotonic()
    budget.deadline = start + budget.seconds
    budget.failed = False
    budget.examples = 0
    try:
        return (yield)
    except BudgetSpent:
        return True
    finally:
        budget.spent[pyfuncitem.nodeid] = (budget.examples, time.monotonic() - start)


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    mode = config.stash.get(_MODE, None)
    if mode is None or mode.seconds is None:
        return
    spent = sorted(
        (nodeid, examples, seconds)
        for budget in config.stash.get(_BUDGETS, [])
        for nodeid, (examples, seconds) in budget.spent.items()
    )
    terminalreporter.write_sep("-", f"fuzz: {mode.seconds:g} s shared by {len(spent)} tests")
    for nodeid, examples, seconds in spent:
        terminalreporter.write_line(f"{examples:>10,} examples {seconds:8.1f} s  {nodeid}")
