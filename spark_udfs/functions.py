"""Column and DataFrame functions: ``decode_<message>``, topic decoders, SQL registration.

``decode_<message>(col, version=None, mode="FAILFAST", position=None)`` exists for every
generated message (``decode_offset_commit_value``, ``decode_group_metadata_value``, ...), looked
up by this module's ``__getattr__`` from ``generated.MESSAGES``; :func:`decode_message` is the
same by spec name.

Topic functions (``decode_consumer_offsets``, ``decode_transaction_state``,
``decode_share_group_state``, ``decode_cluster_metadata``) take a DataFrame with binary key and
value columns (the ``kafka-log`` data source, Spark's Kafka source, or a Parquet copy) and add
``recordType``, ``recordName``, ``decodedKey``, ``decodedValue``, ``valueVersion``,
``isTombstone``, ``isNewerVersion`` (and ``_decode_error`` in PERMISSIVE mode).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import cache
from typing import TYPE_CHECKING

from generated import MESSAGES
from spark_udfs.options import Mode
from spark_udfs.topics import TOPICS, topic_arrow_type
from spark_udfs.udfs import message_udf, topic_udf

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

__all__ = [
    "POSITION_COLUMNS",
    "decode_cluster_metadata",
    "decode_consumer_offsets",
    "decode_message",
    "decode_share_group_state",
    "decode_topic",
    "decode_transaction_state",
    "message_function_names",
    "register_sql_functions",
]

POSITION_COLUMNS = ("topic", "partition", "offset")
"""Columns that, when the input has them, name a malformed record's position in FAILFAST."""


def _col(c: Column | str) -> Column:
    from pyspark.sql import functions as F

    return F.col(c) if isinstance(c, str) else c


def decode_message(
    name: str,
    col: Column | str,
    version: int | None = None,
    mode: str | Mode = Mode.FAILFAST,
    position: Sequence[Column | str] | None = None,
) -> Column:
    """Decode the binary column ``col`` as message ``name`` (a spec name).

    ``version=None`` reads the version from the bytes (int16 prefix of coordinator values and
    consumer-protocol data; the record type prefix of coordinator keys, which are version 0;
    the frame of metadata records); a given version means the bytes are the bare message.
    FAILFAST (default) returns the message struct and raises
    :class:`~spark_udfs.errors.MalformedKafkaRecordError` on a malformed record, naming the
    ``position`` columns' values (for example ``["partition", "offset"]``) when given;
    PERMISSIVE returns ``struct<decoded, _decode_error>`` with ``decoded`` null on failure.
    """
    parsed = Mode.parse(mode)
    pos = tuple(position or ())
    names = tuple(p if isinstance(p, str) else f"position{i}" for i, p in enumerate(pos))
    udf = message_udf(name, version, parsed, names)
    return udf(_col(col), *(_col(p) for p in pos))  # type: ignore[no-any-return]


@cache
def _module_to_message() -> dict[str, str]:
    return {f"decode_{MESSAGES[n].__module__.rsplit('.', 1)[1]}": n for n in MESSAGES}


def message_function_names() -> list[str]:
    """``decode_<module>`` for every generated message."""
    return sorted(_module_to_message())


def _message_function(name: str) -> Callable[..., Column]:
    def decode(
        col: Column | str,
        version: int | None = None,
        mode: str | Mode = Mode.FAILFAST,
        position: Sequence[Column | str] | None = None,
    ) -> Column:
        return decode_message(name, col, version=version, mode=mode, position=position)

    decode.__name__ = f"decode_{MESSAGES[name].__module__.rsplit('.', 1)[1]}"
    decode.__doc__ = f"Decode a binary column as {name}; see :func:`decode_message`."
    return decode


def __getattr__(attr: str) -> Callable[..., Column]:
    name = _module_to_message().get(attr) if attr.startswith("decode_") else None
    if name is None:
        raise AttributeError(f"module {__name__!r} has no attribute {attr!r}")
    return _message_function(name)


def __dir__() -> list[str]:
    return sorted([*globals(), *message_function_names()])


# ------------------------------------------------------------------------------------ topics


def decode_topic(
    family: str,
    df: DataFrame,
    key: str = "key",
    value: str = "value",
    mode: str | Mode = Mode.FAILFAST,
) -> DataFrame:
    """Add the decoded columns of topic ``family`` (a :data:`~spark_udfs.topics.TOPICS` name).

    Every input row gives exactly one output row. The ``isControl`` column, when present (the
    ``kafka-log`` source has it), keeps control records (transaction markers) from being decoded.
    """
    from pyspark.sql import functions as F

    parsed = Mode.parse(mode)
    if family not in TOPICS:
        raise ValueError(f"unknown topic family {family!r}; known: {', '.join(TOPICS)}")
    columns = set(df.columns)
    positions = tuple(c for c in POSITION_COLUMNS if c in columns)
    control = F.col("isControl") if "isControl" in columns else F.lit(False)
    udf = topic_udf(family, parsed, positions)
    tmp = "__decoded_topic"
    out = df.withColumn(tmp, udf(F.col(key), F.col(value), control, *map(F.col, positions)))
    fields = [f.name for f in topic_arrow_type(family, parsed == Mode.PERMISSIVE)]
    kept = [F.col(f"`{c}`") for c in df.columns if c not in fields]
    return out.select(*kept, *(F.col(f"{tmp}.{f}").alias(f) for f in fields))


def decode_consumer_offsets(
    df: DataFrame, key: str = "key", value: str = "value", mode: str | Mode = Mode.FAILFAST
) -> DataFrame:
    """Decode ``__consumer_offsets`` records (offsets, classic and consumer-protocol groups)."""
    return decode_topic("consumer_offsets", df, key, value, mode)


def decode_transaction_state(
    df: DataFrame, key: str = "key", value: str = "value", mode: str | Mode = Mode.FAILFAST
) -> DataFrame:
    """Decode ``__transaction_state`` records."""
    return decode_topic("transaction_state", df, key, value, mode)


def decode_share_group_state(
    df: DataFrame, key: str = "key", value: str = "value", mode: str | Mode = Mode.FAILFAST
) -> DataFrame:
    """Decode ``__share_group_state`` records."""
    return decode_topic("share_group_state", df, key, value, mode)


def decode_cluster_metadata(
    df: DataFrame, key: str = "key", value: str = "value", mode: str | Mode = Mode.FAILFAST
) -> DataFrame:
    """Decode ``__cluster_metadata`` records (log segments and ``.checkpoint`` snapshots)."""
    return decode_topic("cluster_metadata", df, key, value, mode)


# ------------------------------------------------------------------------------------ SQL


def register_sql_functions(
    spark: SparkSession, mode: str | Mode = Mode.FAILFAST, messages: bool = True
) -> list[str]:
    """Register the decoders as SQL functions; returns their names.

    Topic decoders take ``(key, value, isControl)`` and return a struct: ``SELECT d.* FROM
    (SELECT decode_consumer_offsets(key, value, isControl) AS d FROM t)`` (pass ``false`` when
    the table has no control flag). With ``messages=True`` every
    ``decode_<message>(value)`` is registered too (version from the bytes).
    """
    parsed = Mode.parse(mode)
    names: list[str] = []
    for family in TOPICS:
        spark.udf.register(f"decode_{family}", topic_udf(family, parsed))
        names.append(f"decode_{family}")
    if messages:
        for fn, name in sorted(_module_to_message().items()):
            spark.udf.register(fn, message_udf(name, None, parsed))
            names.append(fn)
    return names
