"""Code generated from any spec corpus is ``mypy --strict`` clean, not just ``generated/``.

Kafka's corpus has fields that are nullable in some versions only; their writers narrow them
with an assert, and a None written at a version that cannot hold it is still a NullValueError.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from corpus import ROOT, kafka_specs

from codegen.runtime.errors import NullValueError

# The Kafka release's specs come from `make setup` (tests/corpus.py): oracle-marked.
CORPORA: dict[str, Callable[[], Path]] = {
    "types_kafka_4_4_0": kafka_specs,
    "types_tagged_demo": lambda: ROOT / "tests" / "cases" / "tagged_demo",
}


@pytest.mark.parametrize(
    "package",
    [
        pytest.param("types_kafka_4_4_0", marks=pytest.mark.oracle),
        pytest.param("types_tagged_demo"),
    ],
)
def test_generated_corpus_is_mypy_strict_clean(
    package: str, codec_package: Any, tmp_path: Path
) -> None:
    module = codec_package(package, [CORPORA[package]()])
    folder = Path(module.__file__).parent
    env = dict(os.environ, MYPYPATH=str(ROOT))
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--cache-dir", str(tmp_path), folder.name],
        cwd=folder.parent,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]


@pytest.mark.oracle
def test_none_in_a_field_this_version_cannot_null_is_a_null_value_error(
    codec_package: Any,
) -> None:
    # MetadataRequestTopic.name is nullable from version 10 only.
    package = codec_package("types_kafka_4_4_0", [kafka_specs()])
    request_cls = package.MESSAGES["MetadataRequest"]
    topic_cls = request_cls._STRUCTS["MetadataRequestTopic"]
    request = request_cls(topics=[topic_cls(name=None)])
    assert request.encode(10)  # fine where it may be null
    with pytest.raises(NullValueError, match=r"MetadataRequest v9.*topics\[0\]\.name"):
        request.encode(9)


# --------------------------------------------------------------------------- the typed index and rows

TYPED_INDEX_AND_ROWS = """\
from collections.abc import Mapping
from typing import assert_type
from uuid import UUID

from codegen.runtime import KafkaMessage
from generated import MESSAGES
from generated.consumer_group_member_metadata_value import (
    ClassicProtocolRow,
    ConsumerGroupMemberMetadataValue,
    ConsumerGroupMemberMetadataValueRow,
)
from generated.offset_commit_value import OffsetCommitValue, OffsetCommitValueRow

assert_type(MESSAGES["OffsetCommitValue"], type[OffsetCommitValue])
assert_type(MESSAGES["ConsumerGroupMemberMetadataValue"], type[ConsumerGroupMemberMetadataValue])


def by_name(name: str) -> None:
    assert_type(MESSAGES[name], type[KafkaMessage])


row = OffsetCommitValue.decode_row(b"", 3)
assert_type(row, OffsetCommitValueRow)
assert_type(row, tuple[int, int, str, int, int, UUID, Mapping[int, bytes]])
assert_type(row[0], int)
assert_type(row[2], str)
read_row = OffsetCommitValue.row_reader(3)
same, end = read_row(b"", 0)
assert_type(same, OffsetCommitValueRow)
assert_type(end, int)
member = ConsumerGroupMemberMetadataValue.decode_row(b"", 0)
assert_type(member, ConsumerGroupMemberMetadataValueRow)
assert_type(member[0], str | None)
classic = member[8]
assert_type(classic, tuple[int, list[ClassicProtocolRow], Mapping[int, bytes]] | None)
assert_type(member[-1], Mapping[int, bytes])
obj = MESSAGES["OffsetCommitValue"].decode(b"", 3)
assert_type(obj, OffsetCommitValue)
"""


def test_messages_and_rows_are_typed_per_message(tmp_path: Path) -> None:
    """mypy --strict sees MESSAGES["Name"] as that spec's class and each row as its fields'
    types (the nested structs' rows included); a name it cannot know, as any message class."""
    (tmp_path / "user.py").write_text(TYPED_INDEX_AND_ROWS)
    env = dict(os.environ, MYPYPATH=str(ROOT))
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--strict",
            "--cache-dir",
            str(tmp_path / "cache"),
            "user.py",
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
