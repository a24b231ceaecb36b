"""Differential-test oracle: Apache Kafka's own generated classes, driven from Python.

Run ``tests/oracle/fetch.sh`` once to fetch the pinned release and build the harness.
"""

from .client import (
    FETCH_COMMAND,
    KAFKA_VERSION,
    KafkaOracle,
    OracleError,
    OracleUnavailableError,
    cache_dir,
    missing_reason,
    project_root,
)

__all__ = [
    "FETCH_COMMAND",
    "KAFKA_VERSION",
    "KafkaOracle",
    "OracleError",
    "OracleUnavailableError",
    "cache_dir",
    "missing_reason",
    "project_root",
]
