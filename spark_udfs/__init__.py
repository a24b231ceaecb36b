"""Spark decoding of Kafka messages with kafka-specgen's codecs.

:func:`for_package` binds the column, topic and SQL functions to any generated package;
:mod:`spark_udfs.functions` holds those of the shipped package.

Imports inside this package's functions are made on first use, for one reason: importing a
``spark_udfs`` module loads no pyspark (the ``spark`` extra) until a
function that builds a Spark plan runs; a function Spark runs in its Python workers imports there
what it runs. None dodges an import cycle: the ``acyclic`` contract in ``pyproject.toml`` covers
``spark_udfs`` and counts imports inside functions too.
"""

from __future__ import annotations

from types import ModuleType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Sequence

    from pyspark.sql import DataFrame

    from spark_udfs.functions import PackageFunctions

__all__ = ["flat", "for_package"]


def for_package(package: str | ModuleType) -> PackageFunctions:
    """The Spark functions bound to a generated package (see ``spark_udfs.functions``)."""
    from spark_udfs.functions import for_package as bind

    return bind(package)


def flat(df: DataFrame, record: str, keep: Sequence[str] | None = None) -> DataFrame:
    """One record type's key and value fields as top-level columns (see
    ``spark_udfs.functions.flat``)."""
    from spark_udfs.functions import FLAT_KEEP
    from spark_udfs.functions import flat as flatten

    return flatten(df, record, FLAT_KEEP if keep is None else keep)
