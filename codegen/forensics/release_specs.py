"""Which ``__consumer_offsets`` record versions a Kafka release reads, derived from its jars.

From Kafka 2.8 the group coordinator's records are JSON message specs shipped inside the
release's jars: in core (``kafka_2.13``) up to 3.4, in ``kafka-group-coordinator`` from 3.5.
For each release this module reads those specs and keeps, per record type id, the record name,
the highest value version and the first flexible value version. The result is vendored as
``release_specs.json`` next to this module (run time never needs the jars); regenerate it with

    tests/oracle/releases/fetch.sh
    python -m codegen.forensics.release_specs .cache/kafka-releases/jars > \\
        codegen/forensics/release_specs.json

A record type is the key's ``apiKey`` (specs of type ``coordinator-key``), or, in the older
specs of type ``data``, each of the key's versions (the key version *was* the record type).
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
import zipfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Final

__all__ = ["RELEASE_JARS", "derive_release", "derive_releases", "main", "spec_versions"]

RELEASE_JARS: Final[dict[str, str]] = {
    "2.8": "kafka_2.13-2.8.0.jar",
    "3.0": "kafka_2.13-3.0.0.jar",
    "3.1": "kafka_2.13-3.1.0.jar",
    "3.2": "kafka_2.13-3.2.0.jar",
    "3.3": "kafka_2.13-3.3.1.jar",
    "3.4": "kafka_2.13-3.4.0.jar",
    "3.5": "kafka-group-coordinator-3.5.0.jar",
    "3.6": "kafka-group-coordinator-3.6.0.jar",
    "3.7": "kafka-group-coordinator-3.7.0.jar",
    "3.8": "kafka-group-coordinator-3.8.0.jar",
    "3.9": "kafka-group-coordinator-3.9.0.jar",
    "4.0": "kafka-group-coordinator-4.0.0.jar",
    "4.1": "kafka-group-coordinator-4.1.0.jar",
    "4.2": "kafka-group-coordinator-4.2.0.jar",
    "4.3": "kafka-group-coordinator-4.3.0.jar",
    "4.4": "kafka-group-coordinator-4.4.0.jar",
}
"""Release line -> the jar (first release of the line; 3.3.0 was never published) whose
specs say what the line reads. tests/oracle/releases/pom.xml fetches exactly these."""

_COMMENT_LINE: Final = re.compile(r"^\s*//.*$", re.M)
_TRANSACTION_RECORDS: Final = ("TransactionLog",)


def spec_versions(text: str) -> tuple[int, int] | None:
    """(lowest, highest) of a ``validVersions`` string such as ``0-3`` or ``2``."""
    if text == "none":
        return None
    low, _, high = text.partition("-")
    return int(low), int(high or low)


def _flexible_from(text: str | None) -> int | None:
    if text is None or text == "none":
        return None
    return int(text.rstrip("+"))


def _specs(jar: Path) -> dict[str, dict[str, Any]]:
    found: dict[str, dict[str, Any]] = {}
    with zipfile.ZipFile(jar) as zf:
        for name in zf.namelist():
            if not name.startswith("common/message/") or not name.endswith(".json"):
                continue
            # Kafka's specs allow whole-line // comments (the licence header).
            spec = json.loads(_COMMENT_LINE.sub("", zf.read(name).decode("utf-8")))
            found[spec["name"]] = spec
    return found


def derive_release(jar: Path) -> dict[str, dict[str, Any]]:
    """Record type id (as a string, for JSON) -> name, highest value version, flexible-from."""
    specs = _specs(jar)
    types: dict[str, dict[str, Any]] = {}
    for name, key in specs.items():
        if not name.endswith("Key") or name.startswith(_TRANSACTION_RECORDS):
            continue
        if key.get("type") not in ("data", "coordinator-key"):
            continue
        value = specs.get(name[: -len("Key")] + "Value")
        if value is None:
            continue
        versions = spec_versions(value["validVersions"])
        if versions is None:
            continue
        if key.get("type") == "coordinator-key":
            ids = [int(key["apiKey"])]
        else:
            key_versions = spec_versions(key["validVersions"])
            ids = list(range(key_versions[0], key_versions[1] + 1)) if key_versions else []
        for type_id in ids:
            types[str(type_id)] = {
                "name": name[: -len("Key")],
                "highestValueVersion": versions[1],
                "flexibleFrom": _flexible_from(value.get("flexibleVersions")),
            }
    return dict(sorted(types.items(), key=lambda kv: int(kv[0])))


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def derive_releases(jar_dir: Path, releases: Iterable[str] = RELEASE_JARS) -> dict[str, Any]:
    """The vendored document: per release line its source jar, the jar's digest and types."""
    out: dict[str, Any] = {}
    for release in releases:
        jar = jar_dir / RELEASE_JARS[release]
        artifact, _, version = jar.stem.rpartition("-")
        out[release] = {
            "source": f"org.apache.kafka:{artifact}:{version}",
            "sha256": _sha256(jar),
            "recordTypes": derive_release(jar),
        }
    return out


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print(
            "usage: python -m codegen.forensics.release_specs JAR_DIR  "
            "(run tests/oracle/releases/fetch.sh first to fill .cache/kafka-releases/jars)",
            file=sys.stderr,
        )
        return 2
    doc = {
        "about": (
            "__consumer_offsets record versions each Kafka release line reads, derived by "
            "codegen/forensics/release_specs.py from the record specs inside the listed jar "
            "(fetched from Maven Central by tests/oracle/releases/fetch.sh)."
        ),
        "releases": derive_releases(Path(args[0])),
    }
    json.dump(doc, sys.stdout, indent=1)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
