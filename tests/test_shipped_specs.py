"""The shipped specs in ``message_specs/`` are wire-identical to Apache Kafka 4.4.0's own.

The reference corpus is the JSON inside the 4.4.0 jars, unpacked by ``tests/oracle/fetch.sh``
into ``.cache/kafka-4.4.0/specs/<artifactId>/<path inside the jar>``. Both sides are read the
way Kafka's generator reads them (comments allowed, scalars coerced to strings, a JSON-null
default meaning "no default"), documentation is dropped, and what is left must match exactly.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
SHIPPED_DIR = ROOT / "message_specs"
CORPUS_DIR = ROOT / ".cache" / "kafka-4.4.0" / "specs"

# Shipped in full: every coordinator record spec, every "metadata" spec of the jar that holds
# the KRaft records and every spec of kafka-storage (the __remote_log_metadata records and the
# producer-state snapshot). Shipped besides them: these "data" specs of kafka-clients.
COORDINATOR_TYPES = frozenset({"coordinator-key", "coordinator-value"})
KRAFT_METADATA_ARTIFACT = "kafka-metadata"
STORAGE_ARTIFACT = "kafka-storage"
SHIPPED_DATA_SPECS = frozenset(
    {
        "LeaderChangeMessage",
        "SnapshotHeaderRecord",
        "SnapshotFooterRecord",
        "KRaftVersionRecord",
        "VotersRecord",
        "ConsumerProtocolSubscription",
        "ConsumerProtocolAssignment",
        "AbortedTxn",
    }
)

HEADER_LINE = "// Part of this project's shipped specs; wire layout follows Apache Kafka 4.4.0."

# Field attributes that decide bytes on the wire or the generated API; "about" is left out.
_BOOL_FLAGS = ("ignorable", "mapKey", "zeroCopy")
_RANGE_KEYS = ("versions", "nullableVersions", "taggedVersions", "flexibleVersions")
_MAX_VERSION = 32767
_FIELD_KEYS = frozenset(
    {"name", "type", "about", "default", "fields", "tag", "entityType", *_BOOL_FLAGS, *_RANGE_KEYS}
)
_SPEC_KEYS = frozenset(
    {
        "name",
        "type",
        "apiKey",
        "validVersions",
        "flexibleVersions",
        "deprecatedVersions",
        "latestVersionUnstable",
        "listeners",
        "fields",
        "commonStructs",
    }
)


def strip_comments(text: str) -> str:
    """Blank out ``//`` and ``/* */`` comments that are not inside JSON strings."""
    out: list[str] = []
    i = 0
    n = len(text)
    while i < n:
        c = text[i]
        if c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append(text[i : j + 1])
            i = j + 1
        elif text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            if j < 0:
                raise ValueError("unterminated /* comment")
            out.append(" ")
            i = j + 2
        else:
            out.append(c)
            i += 1
    return "".join(out)


def load_spec(path: Path) -> dict[str, Any]:
    value = json.loads(strip_comments(path.read_text(encoding="utf-8")))
    assert isinstance(value, dict), f"{path}: a spec must be a JSON object"
    return value


def _scalar(value: Any) -> str:
    """A JSON scalar as Jackson coerces it into a Java String property."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _version_range(text: str) -> str:
    """Kafka's ``Versions.toString`` form of a range: ``none``, ``N``, ``N+`` or ``A-B``."""
    text = text.strip()
    if text == "none":
        return "none"
    if text.endswith("+"):
        low, high = int(text[:-1]), _MAX_VERSION
    elif "-" in text:
        low_text, high_text = text.split("-", 1)
        low, high = int(low_text), int(high_text)
    else:
        low = high = int(text)
    if high < low:
        return "none"
    if high == _MAX_VERSION:
        return f"{low}+"
    return str(low) if low == high else f"{low}-{high}"


def _normalise_field(field: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"name": field["name"], "type": field["type"]}
    tagged = _version_range(_scalar(field.get("taggedVersions", "none")))
    versions = field.get("versions")
    out["versions"] = _version_range(_scalar(versions)) if versions is not None else tagged
    for key in ("nullableVersions", "taggedVersions", "flexibleVersions"):
        if key in field and field[key] is not None:
            rng = _version_range(_scalar(field[key]))
            if rng != "none" or key == "flexibleVersions":
                out[key] = rng
    if field.get("tag") is not None:
        out["tag"] = int(field["tag"])
    if field.get("default") is not None:
        out["default"] = _scalar(field["default"])
    for flag in _BOOL_FLAGS:
        if _scalar(field.get(flag, False)).lower() == "true":
            out[flag] = True
    entity = field.get("entityType")
    if entity is not None and entity != "unknown":
        out["entityType"] = entity
    if "fields" in field:
        out["fields"] = [_normalise_field(f) for f in field["fields"]]
    unknown = set(field) - _FIELD_KEYS
    assert not unknown, f"field {field['name']}: unexpected attributes {sorted(unknown)}"
    return out


def _normalise_struct(struct: dict[str, Any]) -> dict[str, Any]:
    return {
        "name": struct["name"],
        "versions": _version_range(_scalar(struct["versions"])),
        "fields": [_normalise_field(f) for f in struct.get("fields", [])],
    }


def normalise(spec: dict[str, Any]) -> dict[str, Any]:
    """Everything of a spec that Kafka's generator turns into code or bytes, in one form."""
    unknown = set(spec) - _SPEC_KEYS
    assert not unknown, f"spec {spec['name']}: unexpected attributes {sorted(unknown)}"
    out: dict[str, Any] = {"name": spec["name"], "type": spec["type"]}
    if spec.get("apiKey") is not None:
        out["apiKey"] = int(spec["apiKey"])
    out["validVersions"] = _version_range(_scalar(spec["validVersions"]))
    out["flexibleVersions"] = _version_range(_scalar(spec["flexibleVersions"]))
    out["latestVersionUnstable"] = _scalar(spec.get("latestVersionUnstable", False)) == "true"
    out["deprecatedVersions"] = _version_range(_scalar(spec.get("deprecatedVersions", "none")))
    listeners = spec.get("listeners", [])
    out["listeners"] = sorted([listeners] if isinstance(listeners, str) else listeners)
    out["fields"] = [_normalise_field(f) for f in spec.get("fields", [])]
    out["commonStructs"] = [_normalise_struct(s) for s in spec.get("commonStructs", [])]
    return out


def iter_abouts(spec: dict[str, Any]) -> Iterator[tuple[str, str | None]]:
    """Every field of a spec by a path of names, with its ``about`` text (or None)."""

    def walk(prefix: str, fields: list[dict[str, Any]]) -> Iterator[tuple[str, str | None]]:
        for field in fields:
            path = f"{prefix}{field['name']}"
            yield path, field.get("about")
            yield from walk(path + ".", field.get("fields", []))

    yield from walk("", spec.get("fields", []))
    for struct in spec.get("commonStructs", []):
        yield from walk(f"@{struct['name']}.", struct.get("fields", []))


def _comparable_text(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", " ", text.lower()).strip()


def _corpus_files() -> dict[str, Path]:
    if not CORPUS_DIR.is_dir():
        pytest.skip(
            f"Kafka 4.4.0 spec corpus not found at {CORPUS_DIR}; "
            "run tests/oracle/fetch.sh to download and unpack it"
        )
    files: dict[str, Path] = {}
    for path in sorted(CORPUS_DIR.rglob("*.json")):
        # kafka-clients ships each spec once; a name seen twice would make the pairing ambiguous.
        assert path.name not in files, f"{path.name} is in the corpus twice"
        files[path.name] = path
    return files


def _wanted(path: Path, spec: dict[str, Any]) -> bool:
    """Whether a corpus spec belongs to the shipped set."""
    artifact = path.relative_to(CORPUS_DIR).parts[0]
    kind = spec.get("type")
    if kind in COORDINATOR_TYPES or artifact == STORAGE_ARTIFACT:
        return True
    if kind == "metadata":
        return artifact == KRAFT_METADATA_ARTIFACT
    return artifact == "kafka-clients" and spec.get("name") in SHIPPED_DATA_SPECS


SHIPPED = sorted(SHIPPED_DIR.rglob("*.json"))


def test_specs_are_shipped() -> None:
    assert SHIPPED, f"no specs in {SHIPPED_DIR}"


@pytest.mark.parametrize("path", SHIPPED, ids=[p.stem for p in SHIPPED])
def test_shipped_spec_matches_kafka(path: Path) -> None:
    corpus = _corpus_files()
    assert path.name in corpus, f"{path.name} has no counterpart in the Kafka 4.4.0 corpus"
    ours = load_spec(path)
    theirs = load_spec(corpus[path.name])
    assert normalise(ours) == normalise(theirs)


@pytest.mark.parametrize("path", SHIPPED, ids=[p.stem for p in SHIPPED])
def test_shipped_about_texts_are_our_own(path: Path) -> None:
    corpus = _corpus_files()
    if path.name not in corpus:
        pytest.fail(f"{path.name} has no counterpart in the Kafka 4.4.0 corpus")
    theirs = dict(iter_abouts(load_spec(corpus[path.name])))
    for field_path, about in iter_abouts(load_spec(path)):
        assert about, f"{path.name}: {field_path} has no about text"
        kafka_about = theirs.get(field_path)
        if kafka_about:
            assert _comparable_text(about) != _comparable_text(kafka_about), (
                f"{path.name}: {field_path} repeats Kafka's about text"
            )


@pytest.mark.parametrize("path", SHIPPED, ids=[p.stem for p in SHIPPED])
def test_shipped_spec_has_our_header(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    assert text.splitlines()[0] == HEADER_LINE
    assert "Licensed to the Apache Software Foundation" not in text


def test_every_wanted_corpus_spec_is_shipped() -> None:
    corpus = _corpus_files()
    wanted = {name for name, path in corpus.items() if _wanted(path, load_spec(path))}
    shipped = {p.name for p in SHIPPED}
    assert sorted(wanted - shipped) == []
    assert sorted(shipped - wanted) == []
    names = {load_spec(p)["name"] for p in SHIPPED}
    assert names >= SHIPPED_DATA_SPECS
