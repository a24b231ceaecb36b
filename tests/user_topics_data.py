"""A user's own topics for the topic-map tests: the TaggedDemo package of
``tests/spark/test_user_package.py`` (built by the build hook, ``tests/conftest.py``), a broker
folder of its records written with the project's segment writer, and the topic map naming them.

``sensors-0``: values with an int16 version prefix, at versions 0, 1 and 2, one cut short, a
tombstone, one at version 9 (newer than the spec, read as 2, its newest and flexible);
``audit-0``: the version in a ``schema-version`` header, one record without it; ``readings-0``:
a key (TaggedDemo v0) and a value (v2) at fixed versions. ``__consumer_offsets-0`` is a copy of
a real broker's partition (tests/data/kafka-data/aibulb), decoded as before.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from test_golden import annotated_hex

from codegen.dumps import Header, NewRecord, SegmentWriter

TESTS = Path(__file__).resolve().parent
SAMPLES = TESTS / "cases" / "tagged_demo" / "samples"
INTERNAL = TESTS / "data" / "kafka-data" / "aibulb" / "__consumer_offsets-0"
V0 = annotated_hex(SAMPLES / "v0.hex")
V2 = annotated_hex(SAMPLES / "v2.hex")
SEGMENT = "00000000000000000000.log"
PACKAGE = "demo_codecs"

TOPIC_MAP = f'''\
# The messages of our topics (docs/dumps.md, "Your own topics").
package = "{PACKAGE}"

[topics]
"sensor*" = {{ value = {{ message = "TaggedDemo", version = "prefix" }} }}
"audit" = {{ value = {{ message = "TaggedDemo", header = "schema-version" }} }}
"readings" = {{ key = {{ message = "TaggedDemo", version = 0 }}, value = {{ message = "TaggedDemo", version = 2 }} }}
'''


def prefixed(version: int, body: bytes) -> bytes:
    return version.to_bytes(2, "big", signed=True) + body


@dataclass(frozen=True)
class Written:
    folder: Path
    topic_map: Path
    v1: bytes
    """TaggedDemo at version 1 (encoded by the package)."""

    def expected(self, module: ModuleType) -> dict[tuple[str, int], Any]:
        """(topic, offset) -> the value's JSON, None for a tombstone, or the error's start."""
        cls = module.MESSAGES["TaggedDemo"]
        v0, v1, v2 = cls.decode(V0, 0), cls.decode(self.v1, 1), cls.decode(V2, 2)
        return {
            ("sensors", 0): v0.to_json(0),
            ("sensors", 1): v1.to_json(1),
            ("sensors", 2): v2.to_json(2),
            ("sensors", 3): "value: TaggedDemo v2",
            ("sensors", 4): None,
            ("sensors", 5): v2.to_json(2),
            ("audit", 0): v0.to_json(0),
            ("audit", 1): v2.to_json(2),
            ("audit", 2): "value: no header 'schema-version' naming the version",
            ("readings", 0): v2.to_json(2),
        }


def write_topics(folder: Path, module: ModuleType) -> Written:
    """The broker folder and the topic map file (``topics.toml`` next to it)."""
    v2 = module.MESSAGES["TaggedDemo"].decode(V2, 2)
    v2.owner = None  # not in version 1
    v1 = v2.encode(1)
    broker = folder / "kafka-logs"
    for name in ("sensors-0", "audit-0", "readings-0"):
        (broker / name).mkdir(parents=True)
    with SegmentWriter(broker / "sensors-0" / SEGMENT) as w:
        w.write_batch(
            [(b"s1", prefixed(0, V0)), (b"s2", prefixed(1, v1)), (b"s1", prefixed(2, V2))],
            timestamp=1_700_000_000_000,
        )
        w.write_batch(
            [(b"s3", prefixed(2, V2[:-1])), (b"s2", None), (b"s4", prefixed(9, V2))],
            timestamp=1_700_000_001_000,
        )
    with SegmentWriter(broker / "audit-0" / SEGMENT) as w:
        version = b"schema-version"
        w.write_batch(
            [
                NewRecord(None, V0, headers=[Header(version, b"0")]),
                NewRecord(None, V2, headers=[Header(b"other", b"x"), Header(version, b"2")]),
                NewRecord(None, V2),
            ]
        )
    with SegmentWriter(broker / "readings-0" / SEGMENT) as w:
        w.write_batch([(V0, V2)])
    shutil.copytree(INTERNAL, broker / INTERNAL.name)
    topic_map = folder / "topics.toml"
    topic_map.write_text(TOPIC_MAP)
    return Written(broker, topic_map, v1)
