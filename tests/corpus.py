"""Where the tests find their spec corpora and data, all relative to the project root, and the
parameter lists and Hypothesis settings of the tests that run over whole corpora.

Data the tests own is committed under ``tests/data`` (see its PROVENANCE.md). Kafka's spec
corpora come from release jars that ``make setup`` fetches with Maven (``tests/oracle/fetch.sh``)
and unpacks into ``.cache/kafka-<version>/specs/<artifactId>/<path inside the jar>``:

- 4.4.0, the release the project is pinned to (``tests/oracle/pom.xml``);
- 3.9.0, the previous line (``tests/oracle/previous/pom.xml``): its coordinator records still
  use the older ``"type": "data"`` model, so the lint has a real evolution to compare.

A corpus that is not there is an error that says to run ``make setup``, never a skip.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Collection, Iterable
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

from codegen.emit import load_messages
from codegen.ir import Message

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


KAFKA_HISTORY = ROOT / "tests" / "lint" / "kafka_history"


def kafka_history() -> list[tuple[str, Path]]:
    """``(version, specs folder)`` of every release of the lint's history corpus, oldest first
    (``tests/lint/kafka_history/releases.tsv``, fetched by ``make setup``)."""
    releases: list[tuple[str, Path]] = []
    for line in (KAFKA_HISTORY / "releases.tsv").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            version = line.split()[0]
            folder = ROOT / ".cache" / "kafka-history" / "specs" / version
            if not folder.is_dir():
                raise CorpusMissingError(
                    f"{folder.relative_to(ROOT)} is missing: run `make setup` (it fetches the "
                    "Kafka releases of tests/lint/kafka_history/releases.tsv with Maven and "
                    "unpacks their message specs)"
                )
            releases.append((version, folder))
    return releases


def data_path(relative: str) -> Path:
    """A file or folder under ``tests/data``; missing is an error, not a skip."""
    path = TEST_DATA / relative
    if not path.exists():
        raise CorpusMissingError(
            f"{path.relative_to(ROOT)} is missing: it is committed with the project, so the "
            "checkout is incomplete (see tests/data/PROVENANCE.md)"
        )
    return path


# ------------------------------------------------------------------------------ test cases

SHIPPED_SPECS = ROOT / "message_specs"
# The case spec of the native backend's tests: every shape the engine reads. Not under
# tests/cases, so it has no golden files.
NATIVE_SHAPES = ROOT / "tests" / "native_shapes"


@cache
def native_corpora() -> dict[str, list[Message]]:
    """The messages the native backend is checked on: ``shipped`` (``message_specs``) and
    ``shapes`` (``tests/native_shapes``)."""
    return {
        "shipped": load_messages([SHIPPED_SPECS]),
        "shapes": load_messages([NATIVE_SHAPES]),
    }


def _params(
    corpus: str,
    messages: Iterable[Message],
    id_prefix: str,
    case: Callable[[Message], Any],
    marks: Collection[pytest.MarkDecorator],
) -> list[Any]:
    return [
        pytest.param(corpus, case(m), v, id=f"{id_prefix}{m.name}/v{v}", marks=marks)
        for m in messages
        for v in m.valid_versions.versions()
    ]


def version_params(
    corpus: str, messages: Iterable[Message], marks: Collection[pytest.MarkDecorator] = ()
) -> list[Any]:
    """``(corpus, message, version)`` for every valid version of every message, with the id
    ``<corpus>/<message>/v<version>``."""
    return _params(corpus, messages, f"{corpus}/", lambda m: m, marks)


def native_params() -> list[Any]:
    """``(corpus, message name, version)`` for every valid version of every message of
    ``native_corpora``, with the id ``<message>/v<version>`` (shipped) or
    ``shapes/<message>/v<version>``."""
    return [
        param
        for corpus, messages in native_corpora().items()
        for param in _params(
            corpus, messages, "" if corpus == "shipped" else f"{corpus}/", lambda m: m.name, ()
        )
    ]


def corpus_settings(
    examples_variable: str, default_examples: int, *also_suppress: HealthCheck
) -> settings:
    """Hypothesis settings of the property tests run per (message, version) over a corpus:
    the examples per case from the environment variable ``examples_variable`` (else
    ``default_examples``), no deadline, no example database (every run draws afresh), and the
    health checks that large generated messages trip turned off, with ``also_suppress``."""
    return settings(
        max_examples=int(os.environ.get(examples_variable, str(default_examples))),
        deadline=None,
        database=None,
        suppress_health_check=[
            HealthCheck.too_slow,
            HealthCheck.data_too_large,
            HealthCheck.large_base_example,
            *also_suppress,
        ],
    )
