"""Arrow types of the generated messages (from a package's ``_spark_schemas``).

The schemas are plain data emitted by the generator (in Spark's JSON form, the form
``StructType.fromJson`` reads); this module turns them into ``pa.DataType``s for the columnar
decoder. No pyspark here: ``spark_udfs.schema`` makes Spark types of the same schemas.
"""

from __future__ import annotations

from functools import cache
from typing import Any

import pyarrow as pa

from codegen.columnar.package import SHIPPED, codecs

__all__ = [
    "DECODE_ERROR",
    "arrow_type",
    "folder",
    "message_arrow_type",
    "schema_json",
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
