"""Fuzz targets for the write side: wrong values given to the constructor + encode, and
JSON-ish objects given to from_json.

Only documented errors may come out (``EncodeError`` subclasses from encode,
``JsonFormatError`` from from_json), and whatever encodes must decode back to the same
values. Each example starts from a valid instance (tests/strategies.py) and replaces one
value: a field present at the version (at any depth), or a struct's unknown tags.
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from oracle import cache_dir
from strategies import Options, instances

from codegen.emit import load_messages
from codegen.ir import Message, Struct
from codegen.runtime import EncodeError, JsonFormatError, KafkaStruct, UnknownTags

pytestmark = pytest.mark.fuzz

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = {
    "AbortTransactionRecord",
    "ClientQuotaRecord",
    "ConsumerGroupMemberMetadataValue",
    "OffsetCommitValue",
    "PartitionChangeRecord",
    "UserScramCredentialRecord",
}
# Kafka's corpus (fetched by tests/oracle/fetch.sh): records fields, versioned nullability.
CORPUS_SPECS = cache_dir() / "specs" / "kafka-clients" / "common" / "message"
CORPUS = ("FetchSnapshotResponse", "ShareFetchResponse", "MetadataRequest", "ProduceRequest")
FUZZ_SETTINGS = settings(
    deadline=None,
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.large_base_example,
    ],
)


def _targets() -> list[Any]:
    shipped = [m for m in load_messages([ROOT / "message_specs"]) if m.name in SHIPPED]
    params = [pytest.param("generated", m, id=m.name) for m in shipped]
    files = [CORPUS_SPECS / f"{name}.json" for name in CORPUS]
    if all(f.is_file() for f in files):
        params += [pytest.param("corpus", m, id=f"corpus/{m.name}") for m in load_messages(files)]
    return params


TARGETS = _targets()


def _module(codec_package: Any, source: str, message: Message) -> Any:
    if source == "generated":
        return importlib.import_module(f"generated.{message.module}")
    files = [CORPUS_SPECS / f"{name}.json" for name in CORPUS]
    package = codec_package("fuzz_encode_corpus", files)
    return importlib.import_module(f"{package.__name__}.{message.module}")


# --------------------------------------------------------------------------- values

SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=False),
    st.text(max_size=5),
    st.binary(max_size=5),
    st.uuids(),
    st.just(bytearray(b"\x01\x02")),
    st.just(object()),
)
WRONG = st.recursive(
    SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.tuples(inner, inner),
        st.dictionaries(st.integers(-3, 2**33), inner, max_size=3),
        st.dictionaries(st.text(max_size=3), inner, max_size=2),
    ),
    max_leaves=6,
)
JSONISH = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(),
        st.floats(allow_nan=False),
        st.text(max_size=6),
        st.sampled_from(["", "AAAAAAAAAAAAAAAAAAAAAA", "AAE=", "NaN", "Infinity"]),
    ),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=8,
)


def _structs(obj: Any, struct: Struct, version: int) -> list[tuple[Any, Struct]]:
    """Every struct object in ``obj`` with its IR, the fields present at ``version`` only."""
    found = [(obj, struct)]
    for f in struct.fields:
        if f.struct is None or version not in f.versions:
            continue
        value = getattr(obj, f.attr)
        for child in value if isinstance(value, list) else [value]:
            if child is not None:
                found += _structs(child, f.struct, version)
    return found


def plain(obj: Any) -> Any:
    """A struct's values as what its bytes can say: arrays as lists, bytes-likes as bytes,
    float64 values as floats, unknown tags as their (tag, bytes) pairs in written order."""
    values = [
        _plain_value(getattr(obj, info.attr), info.kind, info.element) for info in type(obj)._FIELDS
    ]
    tags = obj.unknown_tags
    if isinstance(tags, UnknownTags):
        values.append(list(tags.pairs))
    else:
        assert isinstance(tags, Mapping)
        values.append(sorted((t, bytes(v)) for t, v in tags.items()))
    return (type(obj).__name__, values)


def _plain_value(value: Any, kind: str, element: str) -> Any:
    if value is None:
        return None
    if kind == "struct":
        assert isinstance(value, KafkaStruct)
        return plain(value)
    if kind == "array":
        return [_plain_value(item, element, "") for item in value]
    if kind == "float64":
        result = float(value)
        return "nan" if math.isnan(result) else result
    if kind in ("bytes", "records"):
        return bytes(value)
    return value


def _written_back(cls: Any, obj: Any, version: int) -> None:
    """Encode: a documented error, or bytes that decode to the same values."""
    try:
        data = obj.encode(version)
    except EncodeError:
        return
    decoded = cls.decode(data, version)
    assert plain(decoded) == plain(obj)
    assert decoded.encode(version) == data


# --------------------------------------------------------------------------- targets


@pytest.mark.parametrize(("source", "message"), TARGETS)
def test_wrong_values_encode_or_raise_encode_errors(
    source: str, message: Message, codec_package: Any
) -> None:
    module = _module(codec_package, source, message)
    cls = getattr(module, message.name)
    options = Options(large_strings=False)

    @FUZZ_SETTINGS
    @given(st.data())
    def check(data: st.DataObject) -> None:
        version = data.draw(st.sampled_from(list(message.valid_versions.versions())))
        obj = data.draw(instances(message, module, version, options))
        target, struct = data.draw(st.sampled_from(_structs(obj, message.root, version)))
        attrs = [f.attr for f in struct.fields if version in f.versions] + ["unknown_tags"]
        attr = data.draw(st.sampled_from(attrs))
        setattr(target, attr, data.draw(WRONG))
        _written_back(cls, obj, version)

    check()


@pytest.mark.parametrize(("source", "message"), TARGETS)
def test_jsonish_objects_read_or_raise_json_errors(
    source: str, message: Message, codec_package: Any
) -> None:
    module = _module(codec_package, source, message)
    cls = getattr(module, message.name)
    options = Options(large_strings=False, records_json_safe=True, unknown_tags=False)

    @FUZZ_SETTINGS
    @given(st.data())
    def check(data: st.DataObject) -> None:
        version = data.draw(st.sampled_from(list(message.valid_versions.versions())))
        tree = data.draw(instances(message, module, version, options)).to_json(version)
        nodes = _json_objects(tree)
        node = data.draw(st.sampled_from(nodes))
        if node and data.draw(st.booleans()):
            key = data.draw(st.sampled_from(sorted(node)))
            if data.draw(st.booleans()):
                del node[key]
            else:
                node[key] = data.draw(JSONISH)
        else:
            tree = data.draw(st.one_of(st.just(tree), JSONISH))
        try:
            obj = cls.from_json(tree, version)
        except JsonFormatError:
            return
        _written_back(cls, obj, version)

    check()


def _json_objects(tree: Any) -> list[dict[str, Any]]:
    """Every JSON object in ``tree`` (the root first)."""
    found: list[dict[str, Any]] = []
    if isinstance(tree, dict):
        found.append(tree)
        for value in tree.values():
            found += _json_objects(value)
    elif isinstance(tree, list):
        for value in tree:
            found += _json_objects(value)
    return found
