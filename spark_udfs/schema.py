"""Spark types of the generated messages (``StructType`` from a package's ``_spark_schemas``).

The Arrow types of the same schemas, which the decode core uses, are in
:mod:`codegen.columnar.schema` (no pyspark there).
"""

from __future__ import annotations

from typing import Any

from codegen.columnar.package import SHIPPED
from codegen.columnar.schema import schema_json

__all__ = ["message_schema", "spark_type"]


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
