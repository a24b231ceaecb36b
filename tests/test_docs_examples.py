"""The Python examples of the README and docs/ run as written.

A file's ```python blocks run in order in one fresh interpreter from the project root (later
blocks use names from earlier ones), as a reader would paste them. A block right after a
``<!-- not run: why -->`` line is an illustration (placeholder paths or values) and is left
out; every file must still have something to run (a failure otherwise, never a skip), so a doc
cannot quietly stop being checked.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from replay_support import CACHE_ENV

ROOT = Path(__file__).resolve().parent.parent
_BLOCK = re.compile(
    r"(?:^(?P<note><!-- not run:[^\n]*-->)\n)?^```python\n(?P<code>.*?)^```$", re.M | re.S
)
# Files whose examples start a Spark session.
SPARK_DOCS = {"README.md", "docs/forensics.md", "docs/spark.md"}
# Every page: a new page's examples run without anyone listing it here.
DOCS = ["README.md", *sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "docs").glob("*.md"))]


def runnable_blocks(text: str) -> tuple[list[str], int]:
    """The code of the blocks to run, and how many were marked as not run."""
    run: list[str] = []
    skipped = 0
    for m in _BLOCK.finditer(text):
        if m.group("note"):
            skipped += 1
        else:
            run.append(m.group("code"))
    return run, skipped


def test_block_markers_are_recognised() -> None:
    text = (
        "x\n```python\na = 1\n```\n<!-- not run: placeholder -->\n```python\nb(\n```\n"
        "```python\nprint(a)\n```\n"
    )
    assert runnable_blocks(text) == (["a = 1\n", "print(a)\n"], 1)


@pytest.mark.parametrize(
    "doc",
    [
        pytest.param(d, marks=[pytest.mark.spark, pytest.mark.spark_connect])
        if d in SPARK_DOCS
        else d
        for d in DOCS
    ],
)
def test_examples_run(doc: str, request: pytest.FixtureRequest) -> None:
    blocks, skipped = runnable_blocks((ROOT / doc).read_text())
    assert blocks, (
        f"{doc}: every example is marked as not run ({skipped})"
        if skipped
        else f"{doc} has no Python examples"
    )
    script = "\n".join(blocks)
    # The replay examples read the jars the set-up fetched, and fetch nothing.
    env = {**os.environ, **CACHE_ENV}
    if doc in SPARK_DOCS:
        # The spark_connect pass: get_session() connects to the run's server (SPARK_REMOTE).
        url = request.getfixturevalue("spark_connect_url")
        if url is not None:
            env["SPARK_REMOTE"] = url
    proc = subprocess.run(
        [sys.executable, "-c", script],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
        env=env,
    )
    assert proc.returncode == 0, f"{doc} examples failed:\n{proc.stderr[-3000:]}"
