"""Spec histories for the memory tests: one scenario per retired thing and spec kind.

Each scenario has the specs of three commits (the thing used, retired, then reused with
another meaning) and a control (the thing back with its meaning). Specs are written to a
spec folder of a git repository made in the test.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.lint.helpers import field, message

GIT = [
    "git",
    "-c",
    "user.name=t",
    "-c",
    "user.email=t@example.com",
    "-c",
    "init.defaultBranch=main",
]


def _tagged(name: str, type: str, tag: int) -> dict[str, Any]:
    return field(name, type, "0+", taggedVersions="0+", tag=tag)


def request(
    tagged: list[tuple[str, str]],
    *,
    name: str = "SampleRequest",
    api_key: int = 90,
    valid: str = "0-2",
    extra: tuple[dict[str, Any], ...] = (),
) -> dict[str, str]:
    """A flexible client request; the tagged fields take tags 0, 1, ... in order."""
    fields = [field("A"), *(_tagged(n, t, i) for i, (n, t) in enumerate(tagged)), *extra]
    text = message(fields, name=name, type="request", api_key=api_key, valid=valid, flexible="0+")
    return {f"{name}.json": text}


def record(
    tagged: list[tuple[str, str]], *, prefix: str = "Group", type_id: int = 3
) -> dict[str, str]:
    """A coordinator-model record type in the folder group/: key and flexible value."""
    key = message(
        [field("Id", "string", "0")],
        name=f"{prefix}Key",
        type="coordinator-key",
        api_key=type_id,
        valid="0",
    )
    fields = [field("A"), *(_tagged(n, t, i) for i, (n, t) in enumerate(tagged))]
    value = message(
        fields,
        name=f"{prefix}Value",
        type="coordinator-value",
        api_key=type_id,
        valid="0",
        flexible="0+",
    )
    return {f"group/{prefix}Key.json": key, f"group/{prefix}Value.json": value}


@dataclass(frozen=True)
class Scenario:
    id: str
    shipped: dict[str, str]  # commit 1: the thing is used
    retired: dict[str, str]  # commit 2: the thing is gone
    reused: dict[str, str]  # next: the thing is back with another meaning
    rules: frozenset[str]  # the breaking findings the reuse gives
    restored: dict[str, str]  # a control: the thing back with its meaning (passes)
    fails: bool = True  # whether they fail by default (a json finding does not: wire only)


NOTE = ("Note", "string")
SCENARIOS = [
    Scenario(
        "tag/request",
        request([NOTE, ("ClusterLabel", "string")]),
        request([NOTE]),
        request([NOTE, ("BrokerCount", "int32")]),
        frozenset({"tag-reused"}),
        # the tag back as the same field, and a new field on the next tag
        request([NOTE, ("ClusterLabel", "string"), ("BrokerCount", "int32")]),
    ),
    Scenario(
        "tag/coordinator-value",
        record([NOTE, ("ClusterLabel", "string")]),
        record([NOTE]),
        record([NOTE, ("BrokerCount", "int32")]),
        frozenset({"tag-reused"}),
        record([NOTE, ("ClusterLabel", "string"), ("BrokerCount", "int32")]),
    ),
    Scenario(
        "field-name/request",
        request([NOTE, ("Label", "string")]),
        request([NOTE]),
        # a non-tagged field in a new version: fine for the wire, but Label was a string
        request([NOTE], valid="0-3", extra=(field("Label", "int32", "3+"),)),
        frozenset({"field-name-reused"}),
        request([NOTE], valid="0-3", extra=(field("Label", "string", "3+"),)),
        # the bytes are new ones (version 3): the JSON key is what breaks
        fails=False,
    ),
    Scenario(
        "field-name/coordinator-value",
        record([NOTE, ("Label", "string")]),
        record([NOTE]),
        # tags stay contiguous, so the name comes back on the retired tag: both are reused
        record([NOTE, ("Label", "int32")]),
        frozenset({"field-name-reused", "tag-reused"}),
        record([NOTE, ("Label", "string")]),
    ),
    Scenario(
        "record-type-id/coordinator-value",
        {**record([NOTE]), **record([NOTE], prefix="Member", type_id=4)},
        record([NOTE]),
        {**record([NOTE]), **record([NOTE], prefix="Session", type_id=4)},
        frozenset({"record-type-reused"}),
        {**record([NOTE]), **record([NOTE], prefix="Member", type_id=4)},
    ),
    Scenario(
        "api-key/request",
        {**request([NOTE]), **request([NOTE], name="OtherRequest", api_key=91)},
        request([NOTE]),
        {**request([NOTE]), **request([NOTE], name="NewRequest", api_key=91)},
        frozenset({"api-key-reused"}),
        {**request([NOTE]), **request([NOTE], name="OtherRequest", api_key=91)},
    ),
]
IDS = [s.id for s in SCENARIOS]


def git(repo: Path, *args: str) -> str:
    done = subprocess.run([*GIT, *args], cwd=repo, capture_output=True, text=True, check=True)
    return done.stdout


def put(repo: Path, specs: dict[str, str], folder_name: str = "specs") -> None:
    """Make the spec folder hold exactly ``specs`` (the lock, if any, is kept)."""
    folder = repo / folder_name
    for old in folder.rglob("*.json") if folder.exists() else []:
        old.unlink()
    for rel, text in specs.items():
        path = folder / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def commit(repo: Path, specs: dict[str, str], what: str, folder_name: str = "specs") -> None:
    put(repo, specs, folder_name)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", what)


def history(tmp_path: Path, *commits: dict[str, str]) -> Path:
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    for number, specs in enumerate(commits, start=1):
        commit(repo, specs, f"commit {number}")
    return repo
