"""Make ``jars.json``: per release the jars of its replay class path, with their SHA-256.

For maintainers, with Maven on the PATH (users never need it)::

    python -m codegen.forensics.replay.lock .cache/m2 > codegen/forensics/replay/jars.json

Maven resolves the runtime closure of ``org.apache.kafka:kafka_2.13:X`` for each release of
:data:`RELEASES` (and Mockito's for the harness) into the given local repository; the SHA-256 of
each jar is read from there.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, Final

__all__ = ["HARNESS", "RELEASES", "main", "resolve"]

RELEASES: Final = (
    "2.8.0",
    "3.0.0",
    "3.1.0",
    "3.2.0",
    "3.3.1",
    "3.4.0",
    "3.4.1",
    "3.5.0",
    "3.6.0",
    "3.7.0",
    "3.8.0",
    "3.9.0",
    "3.9.2",
    "4.0.0",
    "4.0.2",
    "4.1.0",
    "4.2.0",
    "4.3.0",
    "4.4.0",
)
"""The first release of every line from 2.8 (3.3.1 for 3.3), the patch releases whose loading
differs (3.4.1), and the latest patches of 3.9 and 4.0 (the real older brokers of the tests)."""

HARNESS: Final = ("org.mockito:mockito-core:5.14.2",)
"""What the harness adds to every release (with its own closure)."""

_POM: Final = """<project xmlns="http://maven.apache.org/POM/4.0.0"><modelVersion>4.0.0</modelVersion>
<groupId>specgen</groupId><artifactId>replay-lock</artifactId><version>1</version>
<dependencies><dependency><groupId>{group}</groupId><artifactId>{artifact}</artifactId>
<version>{version}</version></dependency></dependencies></project>
"""


def resolve(coordinates: str, repo: Path) -> dict[str, Path]:
    """The runtime closure of ``group:artifact:version``: coordinates -> jar file."""
    group, artifact, version = coordinates.split(":")
    with tempfile.TemporaryDirectory() as tmp:
        pom = Path(tmp) / "pom.xml"
        pom.write_text(_POM.format(group=group, artifact=artifact, version=version))
        listing = Path(tmp) / "list.txt"
        subprocess.run(
            ["mvn", "-B", "-q", "-f", str(pom), f"-Dmaven.repo.local={repo}",
             "dependency:list", "-DincludeScope=runtime", f"-DoutputFile={listing}",
             "-DoutputAbsoluteArtifactFilename=true"],
            check=True, capture_output=True,
        )  # fmt: skip
        found: dict[str, Path] = {}
        for line in listing.read_text().splitlines():
            parts = line.strip().split(":")
            if len(parts) < 6 or parts[2] != "jar":
                continue
            # group:artifact:jar[:classifier]:version:scope:path
            if len(parts) == 7:
                g, a, _, classifier, v, _, path = parts
                key = f"{g}:{a}:{classifier}:{v}"
            else:
                g, a, _, v, _, path = parts
                key = f"{g}:{a}:{v}"
            found[key] = Path(path)
        return found


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m codegen.forensics.replay.lock MAVEN_REPO", file=sys.stderr)
        return 2
    repo = Path(args[0]).resolve()
    sha: dict[str, str] = {}
    releases: dict[str, list[str]] = {}
    harness: list[str] = []
    for coordinates in HARNESS:
        for key, path in sorted(resolve(coordinates, repo).items()):
            harness.append(key)
            sha[key] = _sha256(path)
    for release in RELEASES:
        print(f"resolving Kafka {release}", file=sys.stderr)
        jars = resolve(f"org.apache.kafka:kafka_2.13:{release}", repo)
        releases[release] = sorted(jars)
        for key, path in jars.items():
            sha[key] = _sha256(path)
    doc: dict[str, Any] = {
        "about": (
            "The jars of each Kafka release's replay class path (the runtime closure of "
            "org.apache.kafka:kafka_2.13), and the harness's (Mockito), with their SHA-256; "
            "made by codegen/forensics/replay/lock.py with Maven from Maven Central."
        ),
        "harness": harness,
        "releases": releases,
        "sha256": dict(sorted(sha.items())),
    }
    json.dump(doc, sys.stdout, indent=1)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
