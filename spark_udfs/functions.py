"""Column and DataFrame functions: ``decode_<message>``, topic decoders, SQL registration.

``decode_<message>(col, version=None, mode="FAILFAST", position=None)`` exists for every
generated message (``decode_offset_commit_value``, ``decode_group_metadata_value``, ...), looked
up by this module's ``__getattr__`` from the shipped package's ``MESSAGES``; :func:`decode_message`
is the same by spec name.

Topic functions (``decode_consumer_offsets``, ``decode_transaction_state``,
``decode_share_group_state``, ``decode_cluster_metadata``, ``decode_remote_log_metadata``) take
a DataFrame with binary key and
value columns (the ``kafka-log`` data source, Spark's Kafka source, or a Parquet copy) and add
``recordType``, ``recordName``, ``decodedKey``, ``decodedValue``, ``valueVersion``,
``isTombstone``, ``isNewerVersion`` (and ``_decode_error`` in PERMISSIVE mode).

The module-level functions decode with the shipped ``generated`` package; :func:`for_package`
gives the same functions bound to any other generated package (a user's own specs, or another
Kafka release's).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import cache
from types import ModuleType
from typing import TYPE_CHECKING, Any

from codegen.columnar.decode import needs_version
from codegen.columnar.package import SHIPPED, codecs, package_name
from codegen.columnar.topics import TOPICS, topic_arrow_type
from spark_udfs.options import Mode
from spark_udfs.schema import message_schema
from spark_udfs.udfs import message_udf, sql_message_udf, topic_udf
from spark_udfs.user_topics import RECORD_KEYS

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

__all__ = [
    "POSITION_COLUMNS",
    "PackageFunctions",
    "decode_cluster_metadata",
    "decode_consumer_offsets",
    "decode_message",
    "decode_remote_log_metadata",
    "decode_share_group_state",
    "decode_topic",
    "decode_transaction_state",
    "flat",
    "for_package",
    "message_function_names",
    "register_sql_functions",
]

POSITION_COLUMNS = ("topic", "partition", "offset")
"""Columns that, when the input has them, name a malformed record's position in FAILFAST."""

FLAT_KEEP = ("topic", "partition", "offset", "timestamp")
"""The input columns :func:`flat` keeps by default, after the record's own fields: where the
record is (its topic, partition and offset) and its timestamp."""


def _col(c: Column | str) -> Column:
    from pyspark.sql import functions as F

    return F.col(c) if isinstance(c, str) else c


class PackageFunctions:
    """The column, topic and SQL functions of one generated package.

    ``decode_<message>`` attributes exist for every message of the package; see
    :func:`for_package`. Only the package's name travels with a UDF: each executor imports the
    package itself, so it must be installed there (a wheel) or shipped with ``addPyFile``.
    """

    def __init__(self, package: str) -> None:
        self.package = package
        self.messages = codecs(package).messages  # fails early on a package that is none
        self._functions = {
            f"decode_{self.messages[n].__module__.rsplit('.', 1)[1]}": n for n in self.messages
        }

    def __repr__(self) -> str:
        return f"for_package({self.package!r})"

    def message_function_names(self) -> list[str]:
        """``decode_<module>`` for every message of the package."""
        return sorted(self._functions)

    def schema(self, name: str) -> Any:
        """The Spark ``StructType`` of message ``name``."""
        return message_schema(name, package=self.package)

    def decode_message(
        self,
        name: str,
        col: Column | str,
        version: int | str | None = None,
        mode: str | Mode = Mode.FAILFAST,
        position: Sequence[Column | str] | None = None,
    ) -> Column:
        """Decode the binary column ``col`` as message ``name`` (a spec name).

        ``version=None`` reads the version from the bytes (int16 prefix of coordinator values
        and consumer-protocol data; the record type prefix of coordinator keys, which are
        version 0; the frame of metadata records); a given version means the bytes are the bare
        message; ``"prefix"`` means an int16 version comes first. A message whose bytes carry
        no version (a ``data`` message of several versions) needs one: without it the call
        raises ValueError, as nothing tells which version the bytes are. FAILFAST (default)
        returns the message struct and raises
        :class:`~spark_udfs.errors.MalformedKafkaRecordError` on a malformed record, naming the
        ``position`` columns' values (for example ``["partition", "offset"]``) when given;
        PERMISSIVE returns ``struct<decoded, _decode_error>`` with ``decoded`` null on failure.
        """
        parsed = Mode.parse(mode)
        if name not in self.messages:
            known = ", ".join(sorted(self.messages))
            raise ValueError(f"no message named {name!r} in {self.package}; known: {known}")
        _check_version(self.messages[name], version, self.package, self._function_name(name))
        pos = tuple(position or ())
        names = tuple(p if isinstance(p, str) else f"position{i}" for i, p in enumerate(pos))
        udf = message_udf(name, version, parsed, names, self.package)
        return udf(_col(col), *(_col(p) for p in pos))  # type: ignore[no-any-return]

    def _function_name(self, name: str) -> str:
        return f"decode_{self.messages[name].__module__.rsplit('.', 1)[1]}"

    def _message_function(self, name: str) -> Callable[..., Column]:
        def decode(
            col: Column | str,
            version: int | str | None = None,
            mode: str | Mode = Mode.FAILFAST,
            position: Sequence[Column | str] | None = None,
        ) -> Column:
            return self.decode_message(name, col, version=version, mode=mode, position=position)

        decode.__name__ = f"decode_{self.messages[name].__module__.rsplit('.', 1)[1]}"
        decode.__doc__ = f"Decode a binary column as {name}; see :func:`decode_message`."
        return decode

    def __getattr__(self, attr: str) -> Callable[..., Column]:
        name = self.__dict__.get("_functions", {}).get(attr)
        if name is None:
            raise AttributeError(f"{self!r} has no attribute {attr!r}")
        return self._message_function(name)

    def __dir__(self) -> list[str]:
        return sorted([*super().__dir__(), *self._functions])

    def topic_families(self) -> list[str]:
        """The topic families the package has specs of."""
        return [f for f, topic in TOPICS.items() if topic.has_specs(self.package)]

    def decode_topic(
        self,
        family: str,
        df: DataFrame,
        key: str = "key",
        value: str = "value",
        mode: str | Mode = Mode.FAILFAST,
    ) -> DataFrame:
        """Add the decoded columns of topic ``family`` (a
        :data:`~codegen.columnar.topics.TOPICS` name).

        Every input row gives exactly one output row. The ``isControl`` column, when present
        (the ``kafka-log`` source has it), keeps control records (transaction markers) from
        being decoded.
        """
        from pyspark.sql import functions as F

        parsed = Mode.parse(mode)
        if family not in TOPICS:
            raise ValueError(f"unknown topic family {family!r}; known: {', '.join(TOPICS)}")
        if not TOPICS[family].has_specs(self.package):
            raise ValueError(
                f"package {self.package!r} has no specs of topic family {family!r}; "
                f"it has: {', '.join(self.topic_families()) or 'none'}"
            )
        columns = set(df.columns)
        positions = tuple(c for c in POSITION_COLUMNS if c in columns)
        control = F.col("isControl") if "isControl" in columns else F.lit(False)
        udf = topic_udf(family, parsed, positions, self.package)
        tmp = "__decoded_topic"
        out = df.withColumn(tmp, udf(F.col(key), F.col(value), control, *map(F.col, positions)))
        permissive = parsed == Mode.PERMISSIVE
        fields = [f.name for f in topic_arrow_type(family, permissive, self.package)]
        kept = [F.col(f"`{c}`") for c in df.columns if c not in fields]
        return out.select(*kept, *(F.col(f"{tmp}.{f}").alias(f) for f in fields))

    def decode_consumer_offsets(
        self,
        df: DataFrame,
        key: str = "key",
        value: str = "value",
        mode: str | Mode = Mode.FAILFAST,
    ) -> DataFrame:
        """Decode ``__consumer_offsets`` records (offsets, classic and consumer-protocol groups)."""
        return self.decode_topic("consumer_offsets", df, key, value, mode)

    def decode_transaction_state(
        self,
        df: DataFrame,
        key: str = "key",
        value: str = "value",
        mode: str | Mode = Mode.FAILFAST,
    ) -> DataFrame:
        """Decode ``__transaction_state`` records."""
        return self.decode_topic("transaction_state", df, key, value, mode)

    def decode_share_group_state(
        self,
        df: DataFrame,
        key: str = "key",
        value: str = "value",
        mode: str | Mode = Mode.FAILFAST,
    ) -> DataFrame:
        """Decode ``__share_group_state`` records."""
        return self.decode_topic("share_group_state", df, key, value, mode)

    def decode_cluster_metadata(
        self,
        df: DataFrame,
        key: str = "key",
        value: str = "value",
        mode: str | Mode = Mode.FAILFAST,
    ) -> DataFrame:
        """Decode ``__cluster_metadata`` records (log segments and ``.checkpoint`` snapshots)."""
        return self.decode_topic("cluster_metadata", df, key, value, mode)

    def decode_remote_log_metadata(
        self,
        df: DataFrame,
        key: str = "key",
        value: str = "value",
        mode: str | Mode = Mode.FAILFAST,
    ) -> DataFrame:
        """Decode ``__remote_log_metadata`` records (tiered storage's segment states)."""
        return self.decode_topic("remote_log_metadata", df, key, value, mode)

    def register_sql_functions(
        self, spark: SparkSession, mode: str | Mode = Mode.FAILFAST, messages: bool = True
    ) -> list[str]:
        """Register the decoders as SQL functions; returns their names.

        Topic decoders (of the families the package has specs of) take ``(key, value,
        isControl)`` and return a struct: ``SELECT d.* FROM (SELECT
        decode_consumer_offsets(key, value, isControl) AS d FROM t)`` (pass ``false`` when the
        table has no control flag). With ``messages=True`` every ``decode_<message>(value,
        version, mode)`` is registered too, a SQL function Spark checks the arguments of:
        ``version`` (INT) is the version of the bytes (optional, NULL by default, for messages
        whose bytes carry it; required for a ``data`` message of several versions), ``mode``
        (``'FAILFAST'`` or ``'PERMISSIVE'``, default the registered ``mode``) what a row that
        does not decode gives. The registered ``mode`` sets the result's shape: the message
        struct, or ``struct<decoded, _decode_error>`` for PERMISSIVE; a PERMISSIVE row of a
        FAILFAST-shaped function is a null struct (as ``from_avro``'s modes). Wrong arguments
        fail with Spark's own errors (``WRONG_NUM_ARGS``, ``CAST_INVALID_INPUT``, and
        ``USER_RAISED_EXCEPTION`` naming the modes for an unknown mode).
        """
        parsed = Mode.parse(mode)
        names: list[str] = []
        for family in self.topic_families():
            spark.udf.register(f"decode_{family}", topic_udf(family, parsed, package=self.package))
            names.append(f"decode_{family}")
        if messages:
            for fn, name in sorted(self._functions.items()):
                _register_sql_message(spark, fn, name, parsed, self.package)
                names.append(fn)
        return names


def _check_version(cls: Any, version: int | str | None, package: str, function: str) -> None:
    """A version that cannot decode ``cls`` fails when the column is built, not per row."""
    name = cls.SPEC_NAME
    if version is None:
        if needs_version(name, package):
            raise ValueError(
                f"{function}: {name} is a data message whose bytes carry no version, and it has "
                f"versions {cls.VALID_VERSIONS}: give the version of the bytes ({function}(col, "
                f'version={cls.HIGHEST_VERSION})), version="prefix" when an int16 version comes '
                "first, or read the topic with kafka-log's topics option (a topic map, "
                'docs/dumps.md "Your own topics")'
            )
        return
    if version == "prefix":
        return
    if isinstance(version, bool) or not isinstance(version, int):
        raise ValueError(f'{function}: version must be a number or "prefix", got {version!r}')
    try:
        cls.given_version(version)  # the one rule of a given version (codegen.runtime)
    except ValueError as exc:
        raise ValueError(f"{function}: {exc}") from None


_SQL_MESSAGE = (
    "CREATE OR REPLACE TEMPORARY FUNCTION {fn}(value BINARY, version INT{default}, "
    "mode STRING DEFAULT '{mode}') "
    "RETURN CASE WHEN upper(mode) IN ('FAILFAST', 'PERMISSIVE') "
    "THEN {impl}(value, version, upper(mode)) "
    "ELSE raise_error(concat('{fn}: unknown mode ', coalesce(mode, 'NULL'), "
    "': use FAILFAST or PERMISSIVE')) END"
)


def _register_sql_message(
    spark: SparkSession, fn: str, name: str, mode: Mode, package: str
) -> None:
    """``fn(value, version, mode)``: a SQL function (Spark checks its arguments) over the
    ``arrow_udf`` ``__kafka_specgen_<fn>``."""
    impl = f"__kafka_specgen_{fn}"
    spark.udf.register(impl, sql_message_udf(name, mode, package))
    default = "" if needs_version(name, package) else " DEFAULT NULL"
    spark.sql(_SQL_MESSAGE.format(fn=fn, default=default, mode=mode, impl=impl))


@cache
def _bound(package: str) -> PackageFunctions:
    return PackageFunctions(package)


def for_package(package: str | ModuleType) -> PackageFunctions:
    """The functions of this module bound to a generated package (a module or its dotted name).

    ``for_package("mypkg").decode_my_message(col)`` decodes with ``mypkg``'s codecs; the package
    must be importable on the driver and on every executor.
    """
    return _bound(package_name(package))


_SHIPPED = _bound(SHIPPED)


def decode_message(
    name: str,
    col: Column | str,
    version: int | None = None,
    mode: str | Mode = Mode.FAILFAST,
    position: Sequence[Column | str] | None = None,
) -> Column:
    """Decode the binary column ``col`` as message ``name``; see
    :meth:`PackageFunctions.decode_message` (the shipped package)."""
    return _SHIPPED.decode_message(name, col, version=version, mode=mode, position=position)


def message_function_names() -> list[str]:
    """``decode_<module>`` for every generated message."""
    return _SHIPPED.message_function_names()


def __getattr__(attr: str) -> Callable[..., Column]:
    if attr.startswith("decode_") and attr in _SHIPPED._functions:
        return _SHIPPED._message_function(_SHIPPED._functions[attr])
    raise AttributeError(f"module {__name__!r} has no attribute {attr!r}")


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
    """Add the decoded columns of topic ``family`` (a
        :data:`~codegen.columnar.topics.TOPICS` name).

    Every input row gives exactly one output row. The ``isControl`` column, when present (the
    ``kafka-log`` source has it), keeps control records (transaction markers) from being decoded.
    """
    return _SHIPPED.decode_topic(family, df, key, value, mode)


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


def decode_remote_log_metadata(
    df: DataFrame, key: str = "key", value: str = "value", mode: str | Mode = Mode.FAILFAST
) -> DataFrame:
    """Decode ``__remote_log_metadata`` records (tiered storage's segment states)."""
    return decode_topic("remote_log_metadata", df, key, value, mode)


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
    return _SHIPPED.register_sql_functions(spark, mode, messages)


# ------------------------------------------------------------------------------------ flat


def _capitalized(name: str) -> str:
    return name[:1].upper() + name[1:]


def _key_members(df: DataFrame, record: str, key_members: list[str]) -> list[str]:
    """The ``decodedKey`` members of the records named ``record``: an internal topic's
    ``<record>Key``, or the key messages the topic map pairs with a user topic's value message
    (the ``decodedKey`` column's metadata, set by ``kafka-log``)."""
    paired = df.schema["decodedKey"].metadata.get(RECORD_KEYS, {}).get(record, [])
    found = [m for m in paired if m in key_members]
    if f"{record}Key" in key_members:
        found.insert(0, f"{record}Key")
    return found


def flat(df: DataFrame, record: str, keep: Sequence[str] = FLAT_KEEP) -> DataFrame:
    """The records named ``record`` (a ``recordName``: ``OffsetCommit``, ``TopicRecord``, a
    user topic's value message) with their key's and value's fields as top-level columns, for a
    readable ``show()``.

    ``df`` is decoded records: a topic function's output or ``kafka-log`` with ``decode`` or a
    topic map. The key is the record type's ``<record>Key`` for internal topics, the map's key
    message for a user topic. Columns: the key's fields, the value's fields (a name the key
    already has becomes ``value<Name>``), then the ``keep`` columns of ``df`` that exist (a name
    the record's fields already have becomes ``record<Name>``: ``recordOffset`` is the log
    offset, ``recordTopic`` the topic). ``_unknown_tagged_fields`` is left out; tombstones keep
    their key and have null value fields. ``flat(co, "OffsetCommit")`` gives ``group, topic,
    partition, offset, leaderEpoch, metadata, commitTimestamp, expireTimestamp, topicId,
    recordTopic, recordPartition, recordOffset, timestamp``.
    """
    from pyspark.sql import functions as F
    from pyspark.sql.types import StructType

    if "recordName" not in df.columns or "decodedValue" not in df.columns:
        raise ValueError(
            "flat needs decoded records (recordName, decodedValue): pass the output of a topic "
            "function (decode_consumer_offsets, ...) or of kafka-log with decode=true or a "
            "topic map (topics)"
        )
    unions: dict[str, StructType] = {}
    for union in ("decodedKey", "decodedValue"):
        if union in df.columns:
            typ = df.schema[union].dataType
            assert isinstance(typ, StructType)
            unions[union] = typ
    key_members = unions.get("decodedKey", StructType()).fieldNames()
    value_members = unions["decodedValue"].fieldNames()
    keys = _key_members(df, record, key_members) if key_members else []
    value = next((m for m in (f"{record}Value", record) if m in value_members), None)
    if not keys and value is None:
        known = {m[: -len("Key")] for m in key_members} | {
            m for m in value_members if not m.endswith("Value")
        }
        raise ValueError(
            f"flat: no record named {record!r} in these columns; known: {', '.join(sorted(known))}"
        )
    columns: list[Column] = []
    taken: set[str] = set()
    sides = [("decodedKey", m, "key") for m in keys]
    if value is not None:
        sides.append(("decodedValue", value, "value"))
    for union, member, prefix in sides:
        struct = unions[union][member].dataType
        assert isinstance(struct, StructType)
        for name in struct.fieldNames():
            if name.startswith("_"):
                continue
            alias = name
            if alias in taken:
                alias = f"{prefix}{_capitalized(name)}"
            if alias in taken:  # a second key message with the same field
                alias = f"{member[:1].lower()}{member[1:]}{_capitalized(name)}"
            taken.add(alias)
            columns.append(F.col(f"{union}.`{member}`.`{name}`").alias(alias))
    for name in keep:
        if name in df.columns:
            alias = f"record{_capitalized(name)}" if name in taken else name
            taken.add(alias)
            columns.append(F.col(f"`{name}`").alias(alias))
    return df.filter(F.col("recordName") == record).select(*columns)
