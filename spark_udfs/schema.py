"""Spark and Arrow types of the generated messages (from a package's ``_spark_schemas``).

The schemas are plain data emitted by the generator; this module turns them into
``StructType`` (for Spark) and ``pa.DataType`` (for the Arrow UDF bodies). The Arrow side needs
no pyspark, so the decode core can run (and be tested) without Spark.
"""

from __future__ import annotations

from functools import cache
from typing import Any

import pyarrow as pa

from spark_udfs.package import SHIPPED, codecs

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


def schema_json(name: str, package: str = SHIPPED) -> dict[str, Any]:
    """The Spark JSON schema of message ``name`` (``StructType.fromJson`` form)."""
    schemas = codecs(package).schemas
    try:
        return schemas[name]
    except KeyError:
        known = ", ".join(sorted(schemas))
        raise KeyError(f"no message named {name!r} in {package}; known: {known}") from None


def folder(name: str, package: str = SHIPPED) -> str:
    """The spec folder (topic family) of a message."""
    return codecs(package).folders[name]


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
def message_arrow_type(name: str, package: str = SHIPPED) -> pa.StructType:
    result: pa.StructType = arrow_type(schema_json(name, package))
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


def message_schema(name: str, with_metadata: bool = False, package: str = SHIPPED) -> Any:
    """The ``StructType`` of message ``name`` (every field nullable).

    ``with_metadata=True`` keeps each field's ``attr`` and ``kafkaType`` metadata; UDF return
    types are declared without it.
    """
    from pyspark.sql.types import StructType

    schema = schema_json(name, package)
    return StructType.fromJson(schema if with_metadata else _plain(schema))


def spark_type(json_type: Any) -> Any:
    """Any Spark JSON type (a dict or an atomic name) as a pyspark ``DataType``."""
    from pyspark.sql.types import _parse_datatype_json_value

    return _parse_datatype_json_value(json_type)
