"""What the replay tests share: the project's caches (filled by tests/replay/fetch.sh, so
nothing is fetched while tests run), the releases make test replays, and why a replay cannot
run here."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from codegen.forensics.replay import ReplayUnavailableError
from codegen.forensics.replay.harness import java_tools
from codegen.forensics.replay.jars import jar_set

ROOT = Path(__file__).resolve().parent.parent
FETCH_COMMAND = "tests/replay/fetch.sh"
TESTED = tuple(
    line.strip()
    for line in (ROOT / "tests" / "replay" / "releases.txt").read_text().splitlines()
    if line.strip() and not line.startswith("#")
)
"""The releases make test replays (make setup fetches them)."""

CACHE_ENV = {
    "KAFKA_SPECGEN_CACHE": str(ROOT / ".cache" / "kafka-specgen"),
    "KAFKA_SPECGEN_MAVEN_REPOS": str(ROOT / ".cache" / "m2"),
    "KAFKA_SPECGEN_OFFLINE": "1",
}


def use_project_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    """The replay reads the jars the set-up fetched, and fetches nothing."""
    for name, value in CACHE_ENV.items():
        monkeypatch.setenv(name, value)


def missing_reason(releases: tuple[str, ...]) -> str | None:
    """Why these releases cannot be replayed here (a sentence naming the command), or None."""
    saved = {k: os.environ.get(k) for k in CACHE_ENV}
    os.environ.update(CACHE_ENV)
    try:
        java_tools()
        for release in releases:
            jar_set(release)
    except ReplayUnavailableError as exc:
        return f"{exc} (run {FETCH_COMMAND})"
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    return None


def require(releases: tuple[str, ...]) -> None:
    """Skip (fail under CI=true: make setup fetches them) when the releases cannot replay."""
    reason = missing_reason(releases)
    if reason is None:
        return
    if os.environ.get("CI") == "true":
        pytest.fail(f"replay unavailable: {reason}")
    pytest.skip(f"replay unavailable: {reason}")
