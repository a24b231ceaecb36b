"""``arrow_udf`` builders around the decode core.

A UDF's closure holds plain data only (package and message name, version, mode, a token); the
decoders are
built on the worker on first use (module-level caches in :mod:`codegen.columnar.decode`), so nothing
that cannot be pickled travels with a UDF. The executors need this package and the codec package
importable (a wheel, or ``SparkContext.addPyFile``; see docs/spark.md).
"""

from __future__ import annotations

import uuid
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from codegen.columnar.decode import decode_message_array, needs_version
from codegen.columnar.package import SHIPPED
from codegen.columnar.schema import DECODE_ERROR, message_arrow_type
from codegen.columnar.topics import decode_topic_arrays, topic_arrow_type
from spark_udfs.errors import MalformedKafkaRecordError
from spark_udfs.options import Mode
from spark_udfs.schema import message_schema

__all__ = [
    "message_return_type",
    "message_udf",
    "sql_message_udf",
    "topic_return_type",
    "topic_udf",
]

DECODED = "decoded"
"""In PERMISSIVE mode a message column is ``struct<decoded: message, _decode_error: string>``."""

# Rows seen so far per (UDF token, stage, partition, attempt): the position of a record in its
# Spark partition when the input has no Kafka position columns.
_ROWS_SEEN: dict[tuple[str, int, int, int], int] = {}


def _task_key(token: str) -> tuple[str, int, int, int]:
    from pyspark import TaskContext

    ctx = TaskContext.get()
    if ctx is None:
        return (token, -1, -1, -1)
    return (token, ctx.stageId(), ctx.partitionId(), ctx.attemptNumber())


def _position(
    row: int, positions: tuple[tuple[str, pa.Array], ...], seen: int, key: tuple[str, int, int, int]
) -> str:
    if positions:
        return ", ".join(f"{name} {col[row].as_py()}" for name, col in positions)
    where = f"row {seen + row} of Spark partition {key[2]}" if key[2] >= 0 else f"row {row}"
    return where + " (pass position columns to name the Kafka offset)"


def _error_column(errors: dict[int, str], n: int) -> pa.Array:
    if not errors:
        return pa.nulls(n, pa.string())
    out = np.full(n, None, dtype=object)
    for i, reason in errors.items():
        out[i] = reason
    return pa.array(out, pa.string())


def _check(
    errors: dict[int, str], token: str, n: int, positions: tuple[tuple[str, pa.Array], ...]
) -> None:
    key = _task_key(token)
    seen = _ROWS_SEEN.get(key, 0)
    _ROWS_SEEN[key] = seen + n
    if errors:
        first = min(errors)
        raise MalformedKafkaRecordError(_position(first, positions, seen, key), errors[first])


def run_message(
    name: str,
    version: int | str | None,
    mode: str,
    token: str,
    position_names: tuple[str, ...],
    cols: tuple[pa.Array, ...],
    package: str = SHIPPED,
) -> pa.Array:
    """The body of a message UDF (module-level, so it is pickled by reference)."""
    values = cols[0]
    decoded = decode_message_array(values, name, version, package)
    n = len(values)
    if mode == Mode.FAILFAST:
        _check(decoded.errors, token, n, tuple(zip(position_names, cols[1:], strict=True)))
        return decoded.values
    return pa.StructArray.from_arrays(
        [decoded.values, _error_column(decoded.errors, n)], names=[DECODED, DECODE_ERROR]
    )


def run_topic(
    family: str,
    mode: str,
    token: str,
    position_names: tuple[str, ...],
    cols: tuple[pa.Array, ...],
    package: str = SHIPPED,
) -> pa.Array:
    """The body of a topic UDF: ``(key, value, isControl, *positions)``."""
    key, value, control = cols[0], cols[1], cols[2]
    result = decode_topic_arrays(family, key, value, control, package)
    n = len(value)
    permissive = mode == Mode.PERMISSIVE
    if not permissive:
        _check(result.errors, token, n, tuple(zip(position_names, cols[3:], strict=True)))
    typ = topic_arrow_type(family, permissive, package)
    columns = dict(result.columns)
    if permissive:
        columns[DECODE_ERROR] = _error_column(result.errors, n)
    return pa.StructArray.from_arrays([columns[f.name] for f in typ], fields=list(typ))


def message_return_type(name: str, mode: Mode, package: str = SHIPPED) -> Any:
    """The Spark type a message UDF returns in ``mode``."""
    from pyspark.sql.types import StringType, StructField, StructType

    schema = message_schema(name, package=package)
    if mode == Mode.FAILFAST:
        return schema
    return StructType(
        [StructField(DECODED, schema, True), StructField(DECODE_ERROR, StringType(), True)]
    )


def run_sql_message(
    name: str, mode: str, token: str, cols: tuple[pa.Array, ...], package: str = SHIPPED
) -> pa.Array:
    """The body of a SQL message function: ``(value, version, mode)``, the version and mode
    per row (null version: from the bytes, as the message's framing says). Rows whose mode is
    FAILFAST raise on a decode error; the others are null in the registered ``mode``'s shape
    (with the reason in ``_decode_error`` when that is PERMISSIVE)."""
    values, versions, modes = cols
    n = len(values)
    given = versions.to_pylist()
    decoded_values: pa.Array | None = None
    errors: dict[int, str] = {}
    for version in dict.fromkeys(given):
        rows = np.array([v == version for v in given], np.bool_)
        if version is None and needs_version(name, package):
            for i in np.nonzero(rows)[0].tolist():
                if values[i].is_valid:
                    errors[i] = f"the version of {name} is null: give the version of the bytes"
            part = pa.nulls(n, message_arrow_type(name, package))
        else:
            decoded = decode_message_array(values, name, version, package)
            part = decoded.values
            errors.update({i: e for i, e in decoded.errors.items() if rows[i]})
        if decoded_values is None or rows.all():
            decoded_values = part
        else:
            decoded_values = pc.if_else(pa.array(rows), part, decoded_values)
    assert decoded_values is not None or n == 0
    if decoded_values is None:
        decoded_values = pa.nulls(0, message_arrow_type(name, package))
    row_modes = modes.to_pylist()
    strict = {i: e for i, e in errors.items() if row_modes[i] == Mode.FAILFAST}
    _check(strict, token, n, ())
    if mode == Mode.FAILFAST:
        return decoded_values
    return pa.StructArray.from_arrays(
        [decoded_values, _error_column(errors, n)], names=[DECODED, DECODE_ERROR]
    )


def sql_message_udf(name: str, mode: Mode, package: str = SHIPPED) -> Any:
    """The ``arrow_udf`` behind a SQL message function: ``(value, version, mode)``."""
    from pyspark.sql.pandas.functions import arrow_udf

    token = uuid.uuid4().hex
    mode_text = str(mode)

    def decode_message_sql(*cols: pa.Array) -> pa.Array:
        return run_sql_message(name, mode_text, token, cols, package)

    decode_message_sql.__name__ = f"decode_{name}"
    return_type = message_return_type(name, mode, package)
    return arrow_udf(decode_message_sql, returnType=return_type)  # type: ignore[call-overload]


def topic_return_type(family: str, mode: Mode, package: str = SHIPPED) -> Any:
    from pyspark.sql.pandas.types import from_arrow_type

    return from_arrow_type(topic_arrow_type(family, mode == Mode.PERMISSIVE, package))


def message_udf(
    name: str,
    version: int | str | None,
    mode: Mode,
    position_names: tuple[str, ...] = (),
    package: str = SHIPPED,
) -> Any:
    """An ``arrow_udf`` decoding message ``name``; arguments: value, then position columns."""
    from pyspark.sql.pandas.functions import arrow_udf

    message_arrow_type(name, package)  # fail early on an unknown name
    token = uuid.uuid4().hex
    mode_text = str(mode)

    def decode_message(*cols: pa.Array) -> pa.Array:
        return run_message(name, version, mode_text, token, position_names, cols, package)

    decode_message.__name__ = f"decode_{name}"
    return_type = message_return_type(name, mode, package)
    return arrow_udf(decode_message, returnType=return_type)  # type: ignore[call-overload]


def topic_udf(
    family: str, mode: Mode, position_names: tuple[str, ...] = (), package: str = SHIPPED
) -> Any:
    """An ``arrow_udf`` decoding a topic family; arguments: key, value, isControl, positions."""
    from pyspark.sql.pandas.functions import arrow_udf

    token = uuid.uuid4().hex
    mode_text = str(mode)

    def decode_topic(*cols: pa.Array) -> pa.Array:
        return run_topic(family, mode_text, token, position_names, cols, package)

    decode_topic.__name__ = f"decode_{family}"
    return_type = topic_return_type(family, mode, package)
    return arrow_udf(decode_topic, returnType=return_type)  # type: ignore[call-overload]
