"""The memory of a spec folder's git history: every spec version any commit has held.

One ``git log --raw`` lists the blobs of every ``*.json`` file below the folder in every
commit reachable from a ref; one ``git cat-file --batch`` reads each distinct blob once. A
blob that is not a valid spec (a broken commit, a file that is no spec) is skipped: history
is evidence of what shipped, not something to lint again.
"""

from __future__ import annotations

import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from codegen.errors import ProblemLog
from codegen.ir import Message
from codegen.ir_build import build_messages
from codegen.lint.memory import Memory, Use, data_record_types, memory_of
from codegen.spec import spec_from_text
from codegen.specfile import SpecSyntaxError, parse_spec_text


class HistoryError(Exception):
    """git could not list or read the history; the message has git's own words."""


@dataclass(frozen=True, slots=True)
class Blob:
    sha: str
    path: str  # repository path
    commit: str  # the oldest commit that has this content at this path
    age: int  # that commit's place in the log: higher is older


def _git(args: list[str], cwd: Path, stdin: bytes | None = None) -> bytes:
    try:
        done = subprocess.run(
            ["git", *args], cwd=cwd, input=stdin, capture_output=True, check=False
        )
    except OSError as exc:
        raise HistoryError(f"cannot run git: {exc}") from exc
    if done.returncode != 0:
        stderr = done.stderr.decode(errors="replace").strip()
        raise HistoryError(f"git {args[0]}: {stderr}")
    return done.stdout


def history_blobs(repo: Path, revs: Sequence[str], root: str) -> list[Blob]:
    """Every distinct ``*.json`` blob below ``root`` in the commits reachable from ``revs``."""
    args = ["log", "--no-renames", "--raw", "--no-abbrev", "-z", "--format=%x01%H"]
    out = _git([*args, *revs, "--", root], repo).decode("utf-8", errors="surrogateescape")
    seen: dict[tuple[str, str], Blob] = {}
    for age, chunk in enumerate(out.split("\x01")[1:]):
        tokens = chunk.split("\0")
        commit = tokens[0].strip()
        meta: str | None = None
        for token in tokens[1:]:
            token = token.strip("\n")
            if meta is None:
                if token.startswith(":"):
                    meta = token
                continue
            parts = meta.split()
            meta = None
            if len(parts) < 5 or parts[4].startswith("D") or not token.endswith(".json"):
                continue
            # newest first: a later (older) commit with the same blob replaces the source
            seen[(parts[3], token)] = Blob(parts[3], token, commit, age)
    return sorted(seen.values(), key=lambda b: (-b.age, b.path))


def _read_blobs(repo: Path, shas: list[str]) -> dict[str, bytes]:
    if not shas:
        return {}
    out = _git(["cat-file", "--batch"], repo, ("\n".join(shas) + "\n").encode())
    contents: dict[str, bytes] = {}
    pos = 0
    for sha in shas:
        end = out.index(b"\n", pos)
        header = out[pos:end].split()
        if len(header) != 3 or header[1] != b"blob":
            pos = end + 1
            continue
        size = int(header[2])
        contents[sha] = out[end + 1 : end + 1 + size]
        pos = end + 1 + size + 1
    return contents


def _message(content: bytes, shown: str) -> Message | None:
    try:
        text = parse_spec_text(content.decode("utf-8"), Path(shown))
    except (UnicodeDecodeError, SpecSyntaxError):
        return None
    log = ProblemLog()
    spec = spec_from_text(text, log)
    if spec is None or log.problems:
        return None
    messages = build_messages([spec], log)
    return messages[0] if messages and not log.problems else None


def _namespace(path: str, root: str) -> str:
    """The folder of ``path`` inside the compared folder ``root``: the record namespace."""
    base = PurePosixPath(root)
    if root.endswith(".json"):
        base = base.parent
    folder = PurePosixPath(path).parent
    return folder.relative_to(base).as_posix() if folder.is_relative_to(base) else folder.as_posix()


def history_memory(repo: Path, revs: Sequence[str], root: str) -> Memory:
    """What the specs below ``root`` (a repository path) held in any commit up to ``revs``.

    Each use names the oldest commit that has it.
    """
    blobs = history_blobs(repo, revs, root)
    contents = _read_blobs(repo, sorted({b.sha for b in blobs}))
    uses: dict[Use, str] = {}
    found: list[tuple[Message, str]] = []
    first_seen: dict[str, str] = {}
    parsed: dict[str, Message | None] = {}
    for blob in blobs:  # oldest first
        if blob.sha not in parsed:
            parsed[blob.sha] = _message(contents.get(blob.sha, b""), f"{blob.commit}:{blob.path}")
        message = parsed[blob.sha]
        if message is None:
            continue
        source = f"commit {blob.commit[:12]}"
        namespace = _namespace(blob.path, root)
        found.append((message, namespace))
        first_seen.setdefault(message.name, source)
        for use, _ in memory_of([message], (), source).uses.items():
            uses.setdefault(use, source)
    for record in data_record_types(found):
        uses.setdefault(record, first_seen[record.key])
    return Memory(uses)
