"""What a Kafka release reads and supports, derived from its own jars.

From Kafka 2.8 the group coordinator's records are JSON message specs shipped inside the
release's jars: in core (``kafka_2.13``) up to 3.4, in ``kafka-group-coordinator`` from 3.5.
For each release this module reads those specs and keeps, per record type id, the record name,
the highest value version and the first flexible value version. The same for the transaction
coordinator's records (``__transaction_state``: core up to 3.8, ``kafka-transaction-coordinator``
from 3.9) and the share coordinator's (``__share_group_state``, ``kafka-share-coordinator`` from
4.0). For the KRaft release lines (3.3 on) it also keeps the metadata.version levels and the
feature levels the release supports, read by ``tests/oracle/releases/FeatureTables.java`` from the
release's ``kafka-server-common`` jar (its ``MetadataVersion`` and feature enums) and the
``ConfigResource`` types of its ``kafka-clients`` jar. The result is vendored as
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
import os
import re
import subprocess
import sys
import zipfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Final

__all__ = [
    "KRAFT_JARS",
    "METADATA_JARS",
    "PATCH_JARS",
    "RELEASE_JARS",
    "SHARE_JARS",
    "TRANSACTION_JARS",
    "derive_features",
    "derive_metadata",
    "derive_release",
    "derive_releases",
    "main",
    "metadata_readability",
    "spec_versions",
    "wire_spec",
]

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

TRANSACTION_JARS: Final[dict[str, str]] = {
    **{
        line: f"kafka_2.13-{line}.{0 if line != '3.3' else 1}.jar"
        for line in ("2.8", "3.0", "3.1", "3.2", "3.3", "3.4", "3.5", "3.6", "3.7", "3.8")
    },
    **{
        line: f"kafka-transaction-coordinator-{line}.0.jar"
        for line in ("3.9", "4.0", "4.1", "4.2", "4.3", "4.4")
    },
}
"""Release line -> the jar holding its ``__transaction_state`` record specs."""

SHARE_JARS: Final[dict[str, str]] = {
    line: f"kafka-share-coordinator-{line}.0.jar" for line in ("4.0", "4.1", "4.2", "4.3", "4.4")
}
"""Release line -> the jar holding its ``__share_group_state`` record specs."""

PATCH_JARS: Final[dict[str, str]] = {"3.4.1": "kafka_2.13-3.4.1.jar"}
"""Patch release -> the core jar whose specs say what it reads of ``__consumer_offsets`` and
``__transaction_state``, for the patch releases whose loading differs from their line's first
release (3.4.1: KIP-915's backport)."""

METADATA_JARS: Final[dict[str, str]] = {
    line: f"kafka-metadata-{v}.jar"
    for line, v in (
        ("3.3", "3.3.1"),
        ("3.4", "3.4.0"),
        ("3.5", "3.5.0"),
        ("3.6", "3.6.0"),
        ("3.7", "3.7.0"),
        ("3.8", "3.8.0"),
        ("3.9", "3.9.0"),
        ("4.0", "4.0.0"),
        ("4.1", "4.1.0"),
        ("4.2", "4.2.0"),
        ("4.3", "4.3.0"),
        ("4.4", "4.4.0"),
    )
}
"""KRaft line -> the jar holding its ``__cluster_metadata`` record specs."""

KRAFT_JARS: Final[dict[str, tuple[str, str]]] = {
    line: (f"kafka-server-common-{v}.jar", f"kafka-clients-{v}.jar")
    for line, v in (
        ("3.3", "3.3.1"),
        ("3.4", "3.4.0"),
        ("3.5", "3.5.0"),
        ("3.6", "3.6.0"),
        ("3.7", "3.7.0"),
        ("3.8", "3.8.0"),
        ("3.9", "3.9.0"),
        ("4.0", "4.0.0"),
        ("4.1", "4.1.0"),
        ("4.2", "4.2.0"),
        ("4.3", "4.3.0"),
        ("4.4", "4.4.0"),
    )
}
"""Release line -> the jars whose enums say which metadata.version and feature levels it
supports (KRaft is production from 3.3, KIP-833)."""

FEATURE_TABLES: Final = (
    Path(__file__).resolve().parents[2] / "tests/oracle/releases/FeatureTables.java"
)

_COMMENT_LINE: Final = re.compile(r"^\s*//.*$", re.M)
_TRANSACTION_RECORDS: Final = ("TransactionLog",)
_SHARE_RECORDS: Final = ("ShareSnapshot", "ShareUpdate")


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


def _specs(jar: Path, folder: str = "common/message/") -> dict[str, dict[str, Any]]:
    found: dict[str, dict[str, Any]] = {}
    with zipfile.ZipFile(jar) as zf:
        for name in zf.namelist():
            if not name.startswith(folder) or not name.endswith(".json"):
                continue
            # Kafka's specs allow whole-line // comments (the licence header).
            spec = json.loads(_COMMENT_LINE.sub("", zf.read(name).decode("utf-8")))
            found[spec["name"]] = spec
    return found


def derive_release(
    jar: Path, records: str = "group", newest: Path | None = None
) -> dict[str, dict[str, Any]]:
    """Record type id (as a string, for JSON) -> name, highest value version, flexible-from, of
    the ``group`` (default), ``transaction`` or ``share`` coordinator's records in ``jar``; with
    ``newest`` (the newest release's jar of those records), the value versions whose layout on
    the wire differs from that release's (``layoutDiffers``: records of early-access features
    changed before their release at the same version, which this release's class misreads)."""
    specs = _specs(jar)
    newest_specs = _specs(newest) if newest is not None else {}
    types: dict[str, dict[str, Any]] = {}
    for name, key in specs.items():
        if not name.endswith("Key"):
            continue
        own = (
            name.startswith(_TRANSACTION_RECORDS)
            if records == "transaction"
            else name.startswith(_SHARE_RECORDS)
            if records == "share"
            else not name.startswith(_TRANSACTION_RECORDS + _SHARE_RECORDS)
        )
        if not own:
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
        differs = []
        theirs = newest_specs.get(value["name"])
        if theirs is not None:
            theirs_versions = spec_versions(theirs["validVersions"])
            for v in range(versions[0], versions[1] + 1):
                if theirs_versions is None or not theirs_versions[0] <= v <= theirs_versions[1]:
                    continue
                if not readable_as(value, theirs, v):
                    differs.append(v)
        for type_id in ids:
            entry: dict[str, Any] = {
                "name": name[: -len("Key")],
                "highestValueVersion": versions[1],
                "flexibleFrom": _flexible_from(value.get("flexibleVersions")),
            }
            if differs:
                entry["layoutDiffers"] = differs
                entry["layout"] = wire_spec(value)
            types[str(type_id)] = entry
    return dict(sorted(types.items(), key=lambda kv: int(kv[0])))


_WIRE_KEYS: Final[tuple[str, ...]] = (
    "name",
    "type",
    "versions",
    "validVersions",
    "flexibleVersions",
    "nullableVersions",
    "taggedVersions",
    "tag",
)


def wire_spec(spec: dict[str, Any]) -> dict[str, Any]:
    """What of a spec (or field) reaches the wire: names, types, versions and tags, its fields
    and common structs (the reader of :mod:`codegen.forensics.release_layouts`)."""
    out: dict[str, Any] = {k: spec[k] for k in _WIRE_KEYS if k in spec}
    for nested in ("fields", "commonStructs"):
        if spec.get(nested):
            out[nested] = [wire_spec(f) for f in spec[nested]]
    return out


def readable_as(reader: dict[str, Any], writer: dict[str, Any], version: int) -> bool:
    """Whether ``reader``'s generated class reads what ``writer``'s writes at ``version``: the
    same flexibility and the same fields in the same order with the same types (field names do
    not reach the wire), struct by struct; a tagged field the reader does not know is skipped,
    one it knows must have the writer's type."""
    if _flexible(reader, version) != _flexible(writer, version):
        return False
    return _fields_readable(reader, reader["fields"], writer, writer["fields"], version)


def _fields_readable(
    rspec: dict[str, Any],
    rfields: list[dict[str, Any]],
    wspec: dict[str, Any],
    wfields: list[dict[str, Any]],
    version: int,
) -> bool:
    def split(
        spec: dict[str, Any], items: list[dict[str, Any]]
    ) -> tuple[list[tuple[dict[str, Any], Any]], dict[int, tuple[dict[str, Any], Any]]]:
        plain, tagged = [], {}
        for f in items:
            if not _present(f, version):
                continue
            if _present_tagged(f, version):
                tagged[int(f["tag"])] = (f, spec)
            else:
                plain.append((f, spec))
        return plain, tagged

    rplain, rtags = split(rspec, rfields)
    wplain, wtags = split(wspec, wfields)
    if len(rplain) != len(wplain):
        return False
    pairs = list(zip(rplain, wplain, strict=True))
    pairs += [(rtags[t], wtags[t]) for t in rtags.keys() & wtags.keys()]
    for (rf, rs), (wf, ws) in pairs:
        rkind, wkind = str(rf["type"]), str(wf["type"])
        if rkind.startswith("[]") != wkind.startswith("[]"):
            return False
        if _wire_type(rkind) != _wire_type(wkind):
            return False
        if _wire_type(rkind) == "struct" and not _fields_readable(
            rs, _struct_fields(rs, rf), ws, _struct_fields(ws, wf), version
        ):
            return False
    return True


def _struct_fields(spec: dict[str, Any], field: dict[str, Any]) -> list[dict[str, Any]]:
    if field.get("fields"):
        return list(field["fields"])
    name = str(field["type"]).removeprefix("[]")
    for common in spec.get("commonStructs", []):
        if common["name"] == name:
            return list(common["fields"])
    return []


def _present_tagged(field: dict[str, Any], version: int) -> bool:
    span = _versions(field.get("taggedVersions"))
    return span is not None and span[0] <= version <= span[1]


def _wire_type(kind: str) -> str:
    """A field's type as the wire sees it: a struct's name does not matter, its fields do."""
    kind = kind.removeprefix("[]")
    return "struct" if kind[:1].isupper() else kind


def _versions(text: str | None) -> tuple[int, int] | None:
    """(lowest, highest) of a field's versions (``2+`` -> (2, 2**15)), None for ``none``."""
    if text is None or text == "none":
        return None
    if text.endswith("+"):
        return int(text[:-1]), 2**15
    found = spec_versions(text)
    return found


def _present(field: dict[str, Any], version: int) -> bool:
    span = _versions(field.get("versions"))
    return span is not None and span[0] <= version <= span[1]


def _tagged(field: dict[str, Any]) -> bool:
    return "tag" in field


def _struct_of(field: dict[str, Any]) -> str | None:
    """The struct a field holds (``[]BrokerEndpoint`` -> ``BrokerEndpoint``), or None."""
    kind = str(field["type"]).removeprefix("[]")
    return kind if kind[:1].isupper() else None


def _layout(spec: dict[str, Any], version: int) -> list[tuple[str, str]]:
    """The non-tagged top-level fields a reader of ``spec`` reads at ``version``, in order."""
    return [
        (f["name"], f["type"]) for f in spec["fields"] if _present(f, version) and not _tagged(f)
    ]


def _flexible(spec: dict[str, Any], version: int) -> bool:
    flexible = _flexible_from(spec.get("flexibleVersions"))
    return flexible is not None and version >= flexible


def metadata_readability(old: dict[str, Any], newest: dict[str, Any]) -> dict[str, str]:
    """The versions of a ``__cluster_metadata`` record newer than ``old``'s spec reads (up to
    ``newest``'s), that ``old``'s generated class cannot read, with the exception it throws.

    The generated ``read()`` of a record has no version guard: a newer version is read with
    the conditions of the reader's fields (``_version >= N``), then ``MetadataRecordSerde``
    throws "Found N byte(s) of garbage" when bytes are left; a nested struct's ``read()``
    does check, and throws ``UnsupportedVersionException``."""
    versions = spec_versions(old["validVersions"])
    newest_versions = spec_versions(newest["validVersions"])
    if versions is None or newest_versions is None:
        return {}
    unreadable: dict[str, str] = {}
    for version in range(versions[1] + 1, newest_versions[1] + 1):
        structs = [
            s for f in old["fields"] if _present(f, version) and (s := _struct_of(f)) is not None
        ]
        if structs:
            unreadable[str(version)] = (
                "org.apache.kafka.common.errors.UnsupportedVersionException: Can't read "
                f"version {version} of {structs[0]}"
            )
        elif _layout(old, version) != _layout(newest, version) or _flexible(
            old, version
        ) != _flexible(newest, version):
            unreadable[str(version)] = (
                "org.apache.kafka.server.common.serialization.MetadataParseException: Found "
                f"byte(s) of garbage after {old['apiKey']} (version {version} holds fields "
                f"version {versions[1]} does not)"
            )
    return unreadable


def _metadata_specs(jar: Path) -> dict[int, dict[str, Any]]:
    return {
        int(spec["apiKey"]): spec
        for spec in _specs(jar, "common/metadata/").values()
        if spec.get("type") == "metadata"
    }


def derive_metadata(jar: Path, newest_jar: Path) -> dict[str, dict[str, Any]]:
    """The ``__cluster_metadata`` record types a KRaft release reads: api key -> name, highest
    version and the newer versions (up to ``newest_jar``'s) it cannot read."""
    newest = _metadata_specs(newest_jar)
    types: dict[str, dict[str, Any]] = {}
    for api_key, spec in sorted(_metadata_specs(jar).items()):
        versions = spec_versions(spec["validVersions"])
        assert versions is not None
        entry: dict[str, Any] = {"name": spec["name"], "highestVersion": versions[1]}
        unreadable = metadata_readability(spec, newest.get(api_key, spec))
        if unreadable:
            entry["unreadable"] = unreadable
        types[str(api_key)] = entry
    return types


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _coordinates(jar: Path) -> str:
    artifact, _, version = jar.stem.rpartition("-")
    return f"org.apache.kafka:{artifact}:{version}"


def derive_features(server_common: Path, clients: Path) -> dict[str, Any]:
    """metadata.version levels, feature levels and config resource types of a KRaft release,
    from its jars (runs ``FeatureTables.java`` with ``java``)."""
    out = subprocess.run(
        ["java", "-cp", f"{server_common}{os.pathsep}{clients}", str(FEATURE_TABLES)],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    doc: dict[str, Any] = json.loads(out)
    levels = {k: v for k, v in doc["metadataVersions"].items() if v > 0}
    latest = doc["latestProductionMetadataVersion"]
    return {
        "source": f"{_coordinates(server_common)}, {_coordinates(clients)}",
        "metadataVersions": levels,
        "latestProductionMetadataVersion": latest,
        "features": doc["features"],
        "configResourceTypes": doc["configResourceTypes"],
    }


def derive_releases(jar_dir: Path, releases: Iterable[str] = RELEASE_JARS) -> dict[str, Any]:
    """The vendored document: per release line its source jar, the jar's digest and types, the
    transaction and share coordinators' types, and (KRaft lines) the supported features and the
    metadata records read; then the patch releases of :data:`PATCH_JARS`."""
    out: dict[str, Any] = {}
    newest = max(METADATA_JARS, key=lambda line: tuple(int(p) for p in line.split(".")))
    for release in releases:
        jar = jar_dir / RELEASE_JARS[release]
        entry: dict[str, Any] = {
            "source": _coordinates(jar),
            "sha256": _sha256(jar),
            "recordTypes": derive_release(jar, newest=jar_dir / RELEASE_JARS[newest]),
        }
        if release in TRANSACTION_JARS:
            tjar = jar_dir / TRANSACTION_JARS[release]
            entry["transactionSource"] = _coordinates(tjar)
            entry["transactionRecordTypes"] = derive_release(
                tjar, "transaction", jar_dir / TRANSACTION_JARS[newest]
            )
        if release in SHARE_JARS:
            sjar = jar_dir / SHARE_JARS[release]
            entry["shareSource"] = _coordinates(sjar)
            entry["shareRecordTypes"] = derive_release(sjar, "share", jar_dir / SHARE_JARS[newest])
        if release in KRAFT_JARS:
            common, clients = KRAFT_JARS[release]
            entry["kraft"] = derive_features(jar_dir / common, jar_dir / clients)
        if release in METADATA_JARS:
            entry["metadataSource"] = _coordinates(jar_dir / METADATA_JARS[release])
            entry["metadataRecordTypes"] = derive_metadata(
                jar_dir / METADATA_JARS[release], jar_dir / METADATA_JARS[newest]
            )
        out[release] = entry
    for patch, name in PATCH_JARS.items():
        jar = jar_dir / name
        out[patch] = {
            "source": _coordinates(jar),
            "sha256": _sha256(jar),
            "recordTypes": derive_release(jar, newest=jar_dir / RELEASE_JARS[newest]),
            "transactionSource": _coordinates(jar),
            "transactionRecordTypes": derive_release(
                jar, "transaction", jar_dir / TRANSACTION_JARS[newest]
            ),
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
            "What each Kafka release line reads and supports, derived by "
            "codegen/forensics/release_specs.py from the listed jars (fetched from Maven Central "
            "by tests/oracle/releases/fetch.sh): the __consumer_offsets, __transaction_state and "
            "__share_group_state record versions from the record specs inside them, and for "
            "KRaft lines the metadata.version and feature levels and config resource types "
            "from their MetadataVersion, feature and ConfigResource enums, and the "
            "__cluster_metadata record versions they read (and the newer ones they cannot) from "
            "their kafka-metadata jar. Keys with three numbers are patch releases whose loading "
            "differs from their line's first release."
        ),
        "releases": derive_releases(Path(args[0])),
    }
    json.dump(doc, sys.stdout, indent=1)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
