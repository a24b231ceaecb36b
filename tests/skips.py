"""Skips under ``CI=true``: there ``make setup`` has installed every tool and fetched every jar
the tests need (tests/machine.sh checks the machine's), so a test that skips for want of one is
a failure, reported with its skip reason (tests/conftest.py turns it). A skip that depends on
something the set-up cannot provide (the network, say) stays a skip: raise it with
:func:`skip_conditionally`.
"""

from __future__ import annotations

import os
from typing import Any, NoReturn

import pytest

__all__ = ["SkipsFailInCi", "ci_requires_everything", "skip_conditionally"]


def skip_conditionally(reason: str) -> NoReturn:
    """Skip this test, in CI too: what it needs is not something the set-up installs."""
    skip = pytest.skip.Exception(reason, _use_item_location=True)  # the test's line, not ours
    skip.conditional = True  # type: ignore[attr-defined]
    raise skip


def _conditional(call: pytest.CallInfo[None]) -> bool:
    return call.excinfo is not None and getattr(call.excinfo.value, "conditional", False)


def ci_requires_everything() -> bool:
    return os.environ.get("CI") == "true"


def _failure(what: str, longrepr: Any) -> str:
    reason = longrepr[2] if isinstance(longrepr, tuple) else str(longrepr)
    reason = reason.removeprefix("Skipped: ")
    return (
        f"CI=true: {what} skipped, but make setup installs everything the tests need: {reason}"
        "\n(a skip the set-up cannot avoid is raised with skips.skip_conditionally)"
    )


class SkipsFailInCi:
    """The plugin tests/conftest.py registers under ``CI=true``: a skipped test, module or
    folder is reported as failed, unless a :func:`skip_conditionally` (or an xfail)."""

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
        report = yield
        if report.skipped and not hasattr(report, "wasxfail") and not _conditional(call):
            report.outcome = "failed"
            report.longrepr = _failure("this test", report.longrepr)
        return report

    @pytest.hookimpl(wrapper=True)
    def pytest_make_collect_report(self, collector: pytest.Collector) -> Any:
        report = yield
        if report.skipped:
            report.outcome = "failed"
            report.longrepr = _failure(report.nodeid or "collection", report.longrepr)
        return report
