"""How ``dump`` prints a user topic's records (:mod:`codegen.dumps.user_topics`): the fields of a
jsonl line and the ``key:``/``payload:`` texts of ``--format dump-log``. The outputs layer, next
to ``codegen.dumps.command`` and ``codegen.dumps.dumplog_json``, which call these."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from codegen.dumps.decoded import ERROR
from codegen.dumps.user_topics import UserRecord, version_of
from codegen.runtime import KafkaMessage

__all__ = ["user_dump_log_texts", "user_record_json"]


def _side_json(
    obj: dict[str, Any],
    name: str,
    mapped: bool,
    message: KafkaMessage | None,
    version: int,
    data: bytes | None,
    plain: Callable[[str, bytes | None], dict[str, Any]],
) -> None:
    if mapped:
        obj[f"{name}Version"] = version if version >= 0 else None
        obj[name] = None if message is None else message.to_json(version_of(message, version))
    else:
        obj.update(plain(name, data))


def user_record_json(
    rec: UserRecord, plain: Callable[[str, bytes | None], dict[str, Any]]
) -> dict[str, Any]:
    """The jsonl fields of a decoded (or tombstone) user record after its position and kind:
    ``keyVersion``/``key`` and ``valueVersion``/``value`` for a side the map names (the
    message's JSON, Kafka's JsonConverter form), ``plain(side, bytes)`` for the others."""
    obj: dict[str, Any] = {"recordType": None, "recordName": rec.name}
    key = rec.key if isinstance(rec.key, KafkaMessage) else None
    _side_json(obj, "key", rec.key_mapped, key, rec.key_version, rec.key_bytes, plain)
    _side_json(obj, "value", rec.value_mapped, rec.value, rec.value_version, rec.value_bytes, plain)
    if rec.newer_than_spec:
        obj["isNewerVersion"] = True
    return obj


def user_dump_log_texts(rec: UserRecord) -> tuple[str | None, str | None]:
    """The ``key:`` and ``payload:`` texts of ``dump --format dump-log``: a side the map names
    as its message's JSON, the others as UTF-8 text (Kafka's StringDecoder); a record that did
    not decode as ``Error at offset O, skipping. <reason>`` in place of the payload."""
    from codegen.dumps.dumplog_json import jackson_json  # which imports this module

    def text(mapped: bool, message: Any, version: int, data: bytes | None) -> str | None:
        if data is None:
            return None
        if mapped and message is not None:
            return jackson_json(message.to_json(version_of(message, version)))
        return data.decode("utf-8", "replace")

    if rec.kind == ERROR:
        key = None if rec.key_bytes is None else rec.key_bytes.decode("utf-8", "replace")
        return key, f"Error at offset {rec.offset}, skipping. {rec.error}"
    return (
        text(rec.key_mapped, rec.key, rec.key_version, rec.key_bytes),
        text(rec.value_mapped, rec.value, rec.value_version, rec.value_bytes),
    )
