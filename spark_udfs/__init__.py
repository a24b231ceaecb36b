"""Spark decoding of Kafka messages with kafka-specgen's codecs.

:func:`for_package` binds the column, topic and SQL functions to any generated package;
:mod:`spark_udfs.functions` holds those of the shipped package.
"""

from __future__ import annotations

from types import ModuleType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from spark_udfs.functions import PackageFunctions

__all__ = ["for_package"]


def for_package(package: str | ModuleType) -> PackageFunctions:
    """The Spark functions bound to a generated package (see ``spark_udfs.functions``)."""
    from spark_udfs.functions import for_package as bind

    return bind(package)
