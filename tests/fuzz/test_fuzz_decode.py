"""Mutated bytes into every shipped message at every version: decode, read, the hot-loop reader
and the row reader may only raise ``DecodeError`` subclasses; whatever decodes encodes back to
bytes that decode equal, and the four entry points agree on success, end offset and error."""

from __future__ import annotations

import importlib
import math
from functools import cache
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from mutations import mutated
from strategies import Options, instances, plain_row, row_of

from codegen.emit import load_messages
from codegen.runtime import KafkaMessage
from codegen.runtime.errors import DecodeError, UnknownTagError

pytestmark = pytest.mark.fuzz

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = load_messages([ROOT / "message_specs"])
BY_NAME = {m.name: m for m in SHIPPED}
PAIRS = [
    pytest.param(m.name, v, id=f"{m.name}/v{v}")
    for m in SHIPPED
    for v in m.valid_versions.versions()
]
SEED_OPTIONS = Options(large_strings=False)
"""Seeds stay small: the mutations, not the sizes, are what is explored."""


def _outcome(call: Any) -> tuple[str, Any]:
    """("ok", result) or ("error", the DecodeError's text); anything else escapes."""
    try:
        return "ok", call()
    except DecodeError as exc:
        return "error", str(exc)


def _same(a: Any, b: Any) -> bool:
    """Equal, with NaN equal to itself (a float64 field may decode to any NaN)."""
    if isinstance(a, float) and isinstance(b, float):
        return a == b or (math.isnan(a) and math.isnan(b))
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


@cache
def _codec(name: str, version: int) -> tuple[type[KafkaMessage], st.SearchStrategy[bytes]]:
    """The class of a shipped message and the strategy of its mutated encodings."""
    message = BY_NAME[name]
    module = importlib.import_module(f"generated.{message.module}")
    cls: type[KafkaMessage] = getattr(module, message.name)
    seeds = instances(message, module, version, SEED_OPTIONS).map(lambda o: o.encode(version))
    return cls, mutated(seeds) | st.binary(max_size=64)


@pytest.mark.parametrize(("name", "version"), PAIRS)
@given(data=st.data())
def test_mutated_bytes_decode_or_raise_decode_errors(
    name: str, version: int, data: st.DataObject
) -> None:
    cls, inputs = _codec(name, version)
    buf = data.draw(inputs, label="bytes")
    decoded = _outcome(lambda: cls.decode(buf, version))
    row = _outcome(lambda: cls.decode_row(buf, version))
    read = _outcome(lambda: cls.read(buf, 0, version))
    fast = _outcome(lambda: cls.reader(version)(buf, 0))
    rows = _outcome(lambda: cls.row_reader(version)(buf, 0))
    # read() and the hot-loop readers stop at the message's end; decode() wants every byte.
    assert read[0] == fast[0] == rows[0], (read, fast, rows)
    assert decoded[0] == row[0], (decoded, row)
    if read[0] == "ok":
        end = read[1][1]
        assert fast[1][1] == rows[1][1] == end
        assert _same(row_of(fast[1][0]), plain_row(rows[1][0]))
        assert decoded[0] == ("ok" if end == len(buf) else "error")
    else:
        assert decoded[0] == "error"
    if decoded[0] == "error":
        assert decoded[1] == row[1]
        return
    obj = decoded[1]
    assert _same(row_of(obj), plain_row(row[1]))
    try:
        encoded = obj.encode(version)
    except UnknownTagError as exc:
        # Kafka's readers keep repeated or descending raw tags; its writer refuses them.
        assert _unordered_unknown_tags(obj), (buf.hex(), exc)
        return
    assert not _unordered_unknown_tags(obj), buf.hex()
    again = cls.decode(encoded, version)
    assert _same(row_of(again), row_of(obj)), (buf.hex(), obj, again)


def _unordered_unknown_tags(value: Any) -> bool:
    """True when a struct in ``value`` holds raw tags that are not strictly ascending."""
    if isinstance(value, list | tuple):
        return any(_unordered_unknown_tags(v) for v in value)
    fields = getattr(type(value), "ROW_FIELDS", None)
    if fields is None:
        return False
    tags = [tag for tag, _ in value.unknown_tags.pairs]
    if any(a >= b for a, b in pairwise(tags)):
        return True
    return any(_unordered_unknown_tags(getattr(value, f)) for f in fields if f != "unknown_tags")
