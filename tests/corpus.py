"""Where the tests find their spec corpora and data, all relative to the project root.

Data the tests own is committed under ``tests/data`` (see its PROVENANCE.md). Kafka's spec
corpora come from release jars that ``make setup`` fetches with Maven (``tests/oracle/fetch.sh``)
and unpacks into ``.cache/kafka-<version>/specs/<artifactId>/<path inside the jar>``:

- 4.4.0, the release the project is pinned to (``tests/oracle/pom.xml``);
- 3.9.0, the previous line (``tests/oracle/previous/pom.xml``): its coordinator records still
  use the older ``"type": "data"`` model, so the lint has a real evolution to compare.

A corpus that is not there is an error that says to run ``make setup``, never a skip.
"""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TEST_DATA = ROOT / "tests" / "data"
KAFKA_DATA = TEST_DATA / "kafka-data"
VECTORS_FILE = TEST_DATA / "vectors" / "vectors.jsonl"

KAFKA_VERSION = "4.4.0"
PREVIOUS_KAFKA_VERSION = "3.9.0"


class CorpusMissingError(FileNotFoundError):
    """A spec corpus or data file the tests need is not on disk."""


def _specs(version: str, artifact: str | None) -> Path:
    path = ROOT / ".cache" / f"kafka-{version}" / "specs"
    if artifact is not None:
        path = path / artifact
    if not path.is_dir():
        raise CorpusMissingError(
            f"{path.relative_to(ROOT)} is missing: run `make setup` (it fetches the Kafka "
            f"{version} jars with Maven and unpacks their message specs)"
        )
    return path


def kafka_specs(artifact: str | None = None) -> Path:
    """The specs of the pinned Kafka release, or of one of its artifacts (``kafka-clients``)."""
    return _specs(KAFKA_VERSION, artifact)


def previous_kafka_specs(artifact: str | None = None) -> Path:
    """The specs of the previous Kafka release line, or of one of its artifacts."""
    return _specs(PREVIOUS_KAFKA_VERSION, artifact)


def data_path(relative: str) -> Path:
    """A file or folder under ``tests/data``; missing is an error, not a skip."""
    path = TEST_DATA / relative
    if not path.exists():
        raise CorpusMissingError(
            f"{path.relative_to(ROOT)} is missing: it is committed with the project, so the "
            "checkout is incomplete (see tests/data/PROVENANCE.md)"
        )
    return path
