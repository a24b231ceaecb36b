"""The printer of record bytes (``codegen/native/json_wire.h``) against the reference.

- every ``WirePlan`` (:func:`codegen.dumps.json_text.wire_plans`, one per message and version)
  prints, from a message's bytes, what orjson prints of ``to_json`` of the message the decoder
  reads from them, on instances drawn by hypothesis (the coordinator topics' messages: tagged
  fields with defaults, uuids, nested arrays; and a user's ``PaymentValue``);
- on bytes cut and changed at every position it prints nothing where the decoder refuses them
  (the record then takes the decoder's path, which says why), and the decoder's text where it
  reads them.

The lines of whole batches (``user_lines``) are compared with the reference's in
tests/test_native_user_topics.py.
"""

from __future__ import annotations

import sys
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import _shipped, coordinator_message_classes, instances
from v2_batches import record_bytes_variants
from version_rule import CASES_FOLDER, PACKAGE

from codegen.dumps.json_text import jsontext_module, wire_plans
from codegen.runtime import backends

NATIVE = jsontext_module() is not None and backends.requested() != backends.PURE

pytestmark = [
    pytest.mark.native_only,
    pytest.mark.skipif(not NATIVE, reason="the native printer is not built or not asked for"),
]


def _has_float(message: Any) -> bool:
    return any(f.type.kind == "float64" for s in message.structs for f in s.fields)


def _tagged_struct(message: Any) -> bool:
    """Whether a struct field is tagged (a plan leaves a struct read there to the reference,
    which compares it with the default instance)."""
    return any(
        f.tag is not None and f.type.kind == "struct" for s in message.structs for f in s.fields
    )


def _expected(cls: Any, data: bytes, version: int) -> bytes | None:
    """orjson's text of to_json of what the decoder reads from data, or None where it refuses
    the bytes."""
    try:
        obj = cls.decode(data, version)
    except ValueError:
        return None
    return orjson.dumps(obj.to_json(version))


@pytest.mark.parametrize("cls", coordinator_message_classes(), ids=lambda c: c.__name__)
def test_wire_plans_print_to_json(cls: Any) -> None:
    """A plan prints the decoder's message as to_json at its version; a message with no
    float64 field has a plan at every version."""
    message = _shipped()[cls.SPEC_NAME]
    module = sys.modules[cls.__module__]
    plans = wire_plans(cls)
    versions = list(message.valid_versions.versions())
    if _has_float(message):
        pytest.skip("float64 fields are printed by the reference encoder")
    assert [v for v in versions if plans[v] is None] == []

    @settings(max_examples=15, deadline=None, suppress_health_check=list(HealthCheck))
    @given(data=st.data())
    def check(data: st.DataObject) -> None:
        version = data.draw(st.sampled_from(versions))
        obj = data.draw(instances(message, module, version))
        try:
            encoded = obj.encode(version)
        except (ValueError, TypeError, OverflowError):
            return  # an instance the encoder refuses (a lone surrogate): nothing to read
        got = plans[version].dumps(encoded)
        expected = _expected(cls, encoded, version)
        assert got == expected or (got is None and _tagged_struct(message))

    check()


def _variants_agree(cls: Any, encoded: bytes, version: int) -> int:
    """Every variant of encoded: the plan prints the decoder's text or, where the decoder
    refuses the bytes, nothing. Returns how many variants it printed."""
    plan = wire_plans(cls)[version]
    printed = 0
    for variant in record_bytes_variants(encoded):
        got = plan.dumps(variant)
        expected = _expected(cls, variant, version)
        if expected is None:
            assert got is None, (variant, got)
        else:
            assert got in (expected, None), (variant, got, expected)
            printed += got is not None
    return printed


def test_bytes_cut_and_changed(codec_package: Any) -> None:
    """PaymentValue at every version (a nested array of structs with string arrays, a tagged
    field, an unknown tag) and the coordinator values with uuids and tagged fields."""
    payments = codec_package(PACKAGE, [CASES_FOLDER])
    value_cls = payments.MESSAGES["PaymentValue"]
    line_cls = value_cls._STRUCTS["PaymentLine"]
    printed = 0
    for version in range(4):
        value = value_cls(
            amount=7,
            currency="€" if version else "EUR",
            lines=[line_cls(item='t"é\n', cents=3, tags=["a", "b"]), line_cls(item="x")],
            reference="inv-1" if version >= 3 else None,
            unknown_tags={9: b"zz"} if version >= 2 else {},
        )
        printed += _variants_agree(value_cls, value.encode(version), version)
    assert printed > 100


@pytest.mark.parametrize(
    "name", ["ConsumerGroupMemberMetadataValue", "ConsumerGroupTargetAssignmentMemberValue"]
)
def test_coordinator_bytes_cut_and_changed(name: str) -> None:
    """Values with uuids, tagged fields and a tagged struct, cut and changed."""
    (cls,) = [c for c in coordinator_message_classes() if c.__name__ == name]
    message = _shipped()[cls.SPEC_NAME]
    version = max(message.valid_versions.versions())

    @settings(max_examples=3, deadline=None, suppress_health_check=list(HealthCheck))
    @given(obj=instances(message, sys.modules[cls.__module__], version))
    def check(obj: Any) -> None:
        _variants_agree(cls, obj.encode(version), version)

    check()


def test_wire_plans_refuse_float64_and_tagged_struct_defaults() -> None:
    """What the printer does not print has no plan (its records take the decoder's path)."""
    for cls in coordinator_message_classes():
        message = _shipped()[cls.SPEC_NAME]
        plans = wire_plans(cls)
        if _has_float(message):
            assert all(p is None for p in plans), cls
