"""JSON values: Kafka's JsonConverter form of each field type, written and read back, and the
errors of JSON that does not read as the message. Stdlib only."""

from __future__ import annotations

import base64
import binascii
import math
import uuid
from typing import Any, Final

from codegen.runtime.errors import JsonFormatError


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


_URL_SAFE: Final = bytes.maketrans(b"+/", b"-_")


def uuid_json(value: uuid.UUID) -> str:
    """The uuid as Kafka's JSON writes it: URL-safe base64 without padding (22 characters)."""
    return binascii.b2a_base64(value.bytes, newline=False).translate(_URL_SAFE)[:22].decode("ascii")


def json_missing(cls: str, key: str, version: int) -> JsonFormatError:
    return JsonFormatError(
        f"{cls}: unable to locate field '{key}', which is mandatory in version {version}",
        field=key,
    )


def json_null(cls: str, key: str, version: int) -> JsonFormatError:
    return JsonFormatError(
        f"{cls}: field '{key}' is null, but it is not nullable in version {version}", field=key
    )


def json_int(node: object, cls: str, key: str, low: int, high: int) -> int:
    if isinstance(node, bool) or not isinstance(node, int):
        if isinstance(node, float) and node.is_integer():
            node = int(node)
        else:
            raise JsonFormatError(
                f"{cls}: field '{key}' expected an integer, got {type(node).__name__}", field=key
            )
    if not low <= node <= high:
        raise JsonFormatError(
            f"{cls}: field '{key}' value {node} is out of range {low}..{high}", field=key
        )
    return node


_NON_FINITE_JSON = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}


def float_json(value: float) -> float | str:
    """A float64 as Kafka's JsonConverter prints it: non-finite values become the strings
    ``"NaN"``, ``"Infinity"`` and ``"-Infinity"`` (Jackson's default)."""
    if math.isfinite(value):
        return value
    return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")


def json_float(node: object, cls: str, key: str) -> float:
    """A float64 from JSON. Unlike Kafka's reader, this also takes JSON integers and the
    non-finite strings Kafka's writer prints, so every to_json output reads back."""
    if isinstance(node, str) and node in _NON_FINITE_JSON:
        return _NON_FINITE_JSON[node]
    if isinstance(node, bool) or not isinstance(node, (int, float)):
        raise JsonFormatError(
            f"{cls}: field '{key}' expected a number, got {type(node).__name__}", field=key
        )
    try:
        return float(node)
    except OverflowError:
        raise JsonFormatError(
            f"{cls}: field '{key}' value {node} is too large for a float64", field=key
        ) from None


def json_struct_version(cls: str, version: int) -> JsonFormatError:
    """An inline struct given at a version it does not have (Kafka's converters' text)."""
    return JsonFormatError(f"Can't read version {version} of {cls}")


def json_bool(node: object, cls: str, key: str) -> bool:
    if not isinstance(node, bool):
        raise JsonFormatError(
            f"{cls}: field '{key}' expected a boolean, got {type(node).__name__}", field=key
        )
    return node


def json_str(node: object, cls: str, key: str) -> str:
    if not isinstance(node, str):
        raise JsonFormatError(
            f"{cls}: field '{key}' expected a string, got {type(node).__name__}", field=key
        )
    return node


def json_bytes(node: object, cls: str, key: str) -> bytes:
    if not isinstance(node, str):
        raise JsonFormatError(
            f"{cls}: field '{key}' expected a base64 string, got {type(node).__name__}", field=key
        )
    try:
        return base64.b64decode(node, validate=True)
    except (binascii.Error, ValueError) as exc:  # ValueError: not ASCII
        raise JsonFormatError(
            f"{cls}: field '{key}' is not valid base64: {exc}", field=key
        ) from exc


def json_uuid(node: object, cls: str, key: str) -> uuid.UUID:
    text = json_str(node, cls, key)
    try:
        raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (binascii.Error, ValueError) as exc:
        raise JsonFormatError(
            f"{cls}: field '{key}' is not a base64url uuid: {exc}", field=key
        ) from exc
    if len(raw) != 16:
        raise JsonFormatError(f"{cls}: field '{key}' is not a 16-byte uuid", field=key)
    return uuid.UUID(bytes=raw)


def json_list(node: object, cls: str, key: str) -> list[Any]:
    if not isinstance(node, list):
        raise JsonFormatError(
            f"{cls}: field '{key}' expected a JSON array, got {type(node).__name__}", field=key
        )
    return node


def json_item_error(exc: JsonFormatError, key: str, index: int, is_struct: bool) -> JsonFormatError:
    """The error of an array element: the path gets the element's index."""
    if is_struct:
        return exc.within(key, index)
    exc.field = f"{key}[{index}]"
    return exc


def json_object(node: object, cls: str) -> dict[str, Any]:
    if not isinstance(node, dict):
        raise JsonFormatError(f"{cls}: expected a JSON object, got {type(node).__name__}")
    return node
