"""``python -m codegen.forensics.replay fetch VERSION...``: fetch releases' jars into the cache
and compile their harness (what ``make setup`` runs for the tests; a user runs it on a
connected machine to replay offline later)."""

from __future__ import annotations

import sys

from codegen.forensics.replay.harness import compile_harness, java_tools
from codegen.forensics.replay.jars import (
    ReplayUnavailableError,
    cache_dir,
    jar_set,
    locked_releases,
)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if not args or args[0] != "fetch":
        print(
            "usage: python -m codegen.forensics.replay fetch VERSION... | fetch --all\n"
            f"  fetches each Kafka release's jars into {cache_dir() / 'maven'} (from Maven "
            "Central) and compiles its replay harness",
            file=sys.stderr,
        )
        return 2
    versions = list(locked_releases()) if args[1:] == ["--all"] else args[1:]
    try:
        _, javac = java_tools()
        for version in versions:
            jars = jar_set(version, progress=lambda text: print(text, file=sys.stderr))
            compile_harness(jars, javac)
    except ReplayUnavailableError as exc:
        print(f"replay fetch: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
