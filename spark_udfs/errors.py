"""Errors of the Spark layer."""

from __future__ import annotations

__all__ = ["MalformedKafkaRecordError"]


class MalformedKafkaRecordError(ValueError):
    """A record that does not decode, in FAILFAST mode.

    ``position`` says where the record is (Kafka topic, partition and offset when the input has
    them, otherwise the Spark task partition and the row within it); ``reason`` is the codec's
    error (message, version, field path and byte offset).
    """

    error_class = "MALFORMED_KAFKA_RECORD"

    def __init__(self, position: str, reason: str) -> None:
        self.position = position
        self.reason = reason
        super().__init__(
            f"[{self.error_class}] Malformed Kafka record at {position}: {reason}. "
            "To get a null struct and the reason in the _decode_error column instead, "
            "set mode='PERMISSIVE'."
        )

    def __reduce__(self) -> tuple[type[MalformedKafkaRecordError], tuple[str, str]]:
        return (type(self), (self.position, self.reason))
