"""Spark and Arrow types of the generated messages (from ``generated._spark_schemas``).

The schemas are plain data emitted by the generator; this module turns them into
``StructType`` (for Spark) and ``pa.DataType`` (for the Arrow UDF bodies). The Arrow side needs
no pyspark, so the decode core can run (and be tested) without Spark.
"""

from __future__ import annotations

from functools import cache
from typing import Any

import pyarrow as pa

from generated._spark_schemas import FOLDERS, SCHEMAS

__all__ = [
    "DECODE_ERROR",
    "arrow_type",
    "message_arrow_type",
    "message_schema",
    "schema_json",
    "spark_type",
]

DECODE_ERROR = "_decode_error"
"""Name of the column (or field) holding the reason a record did not decode (PERMISSIVE)."""

_ATOMIC_ARROW: dict[str, pa.DataType] = {
    "boolean": pa.bool_(),
    "byte": pa.int8(),
    "short": pa.int16(),
    "integer": pa.int32(),
    "long": pa.int64(),
    "double": pa.float64(),
    "string": pa.string(),
    "binary": pa.binary(),
}


def schema_json(name: str) -> dict[str, Any]:
    """The Spark JSON schema of message ``name`` (``StructType.fromJson`` form)."""
    try:
        return SCHEMAS[name]
    except KeyError:
        raise KeyError(f"no message named {name!r}; known: {', '.join(sorted(SCHEMAS))}") from None


def folder(name: str) -> str:
    """The spec folder (topic family) of a message."""
    return FOLDERS[name]


def arrow_type(spark: Any) -> pa.DataType:
    """The Arrow type of a Spark JSON type (all children nullable)."""
    if isinstance(spark, str):
        return _ATOMIC_ARROW[spark]
    kind = spark["type"]
    if kind == "struct":
        return pa.struct([pa.field(f["name"], arrow_type(f["type"])) for f in spark["fields"]])
    if kind == "array":
        return pa.list_(arrow_type(spark["elementType"]))
    if kind == "map":
        return pa.map_(arrow_type(spark["keyType"]), arrow_type(spark["valueType"]))
    raise ValueError(f"unknown Spark type {spark!r}")


@cache
def message_arrow_type(name: str) -> pa.StructType:
    result: pa.StructType = arrow_type(schema_json(name))
    return result


def _plain(spark: Any) -> Any:
    """The JSON type without field metadata (Spark compares UDF result types with it)."""
    if isinstance(spark, str):
        return spark
    kind = spark["type"]
    if kind == "struct":
        return {
            "type": "struct",
            "fields": [{**f, "type": _plain(f["type"]), "metadata": {}} for f in spark["fields"]],
        }
    if kind == "array":
        return {**spark, "elementType": _plain(spark["elementType"])}
    return spark


def message_schema(name: str, with_metadata: bool = False) -> Any:
    """The ``StructType`` of message ``name`` (every field nullable).

    ``with_metadata=True`` keeps each field's ``attr`` and ``kafkaType`` metadata; UDF return
    types are declared without it.
    """
    from pyspark.sql.types import StructType

    schema = schema_json(name)
    return StructType.fromJson(schema if with_metadata else _plain(schema))


def spark_type(json_type: Any) -> Any:
    """Any Spark JSON type (a dict or an atomic name) as a pyspark ``DataType``."""
    from pyspark.sql.types import _parse_datatype_json_value

    return _parse_datatype_json_value(json_type)
