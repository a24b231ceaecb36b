"""The Arrow decode core with a package other than the shipped one (no Spark session).

The package is generated from ``tests/data/newer_coordinator``: a record type (apiKey 1) and a
value version (TransactionLogValue v2) the shipped package does not have.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from types import ModuleType

import newer_specs
import pyarrow as pa
import pytest

from codegen.columnar.decode import decode_message_array
from codegen.columnar.package import PackageError, codecs
from codegen.columnar.topics import decode_topic_arrays


@pytest.fixture(scope="module")
def newer(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ModuleType]:
    parent = newer_specs.generate(tmp_path_factory.mktemp("newer"))
    yield newer_specs.import_package(parent)
    sys.path.remove(str(parent))


def _arrays(newer: ModuleType) -> tuple[pa.Array, pa.Array]:
    keys, values = zip(*newer_specs.records(newer), strict=True)
    return pa.array(keys, pa.binary()), pa.array(values, pa.binary())


def test_topic_arrays_with_the_shipped_package(newer: ModuleType) -> None:
    out = decode_topic_arrays("transaction_state", *_arrays(newer))
    assert out.errors == {}
    assert out.columns["recordName"].to_pylist() == ["TransactionLog", None]
    assert out.columns["isNewerVersion"].to_pylist() == [True, False]
    assert out.columns["decodedValue"].to_pylist()[1] is None


def test_topic_arrays_with_the_newer_package(newer: ModuleType) -> None:
    out = decode_topic_arrays("transaction_state", *_arrays(newer), package=newer_specs.PACKAGE)
    assert out.errors == {}
    assert out.columns["recordName"].to_pylist() == ["TransactionLog", "TransactionAudit"]
    assert out.columns["valueVersion"].to_pylist() == [2, 0]
    assert out.columns["isNewerVersion"].to_pylist() == [False, False]
    log, audit = out.columns["decodedValue"].to_pylist()
    assert log["TransactionAuditValue"] is None
    assert log["TransactionLogValue"]["coordinatorEpoch"] == newer_specs.COORDINATOR_EPOCH
    assert audit["TransactionAuditValue"] == {
        "producerId": 42,
        "action": "fenced",
        "operator": "ops",
        "_unknown_tagged_fields": None,
    }


def test_message_array_with_the_newer_package(newer: ModuleType) -> None:
    _, values = _arrays(newer)
    decoded = decode_message_array(values[:1], "TransactionLogValue", package=newer_specs.PACKAGE)
    assert decoded.errors == {} and decoded.versions.tolist() == [2]
    assert decoded.values.to_pylist()[0]["coordinatorEpoch"] == newer_specs.COORDINATOR_EPOCH
    shipped = decode_message_array(values[:1], "TransactionLogValue")
    assert shipped.newer.tolist() == [True] and "coordinatorEpoch" not in shipped.values.type.names
    with pytest.raises(KeyError):
        decode_message_array(values[1:], "TransactionAuditValue")


def test_a_package_that_is_not_a_codec_package_is_named() -> None:
    with pytest.raises(PackageError, match="cannot import the codec package 'no_such_codecs'"):
        codecs("no_such_codecs")
    with pytest.raises(PackageError, match="'json' has no MESSAGES"):
        codecs("json")
