"""Coordinator topics and their record types: for ``__consumer_offsets``,
``__transaction_state`` and ``__share_group_state``, which key and value classes of a codec
package each record type id has (Kafka: one coordinator module per topic, each with its own
record-type enum). The tables are built once from the generated classes (``SPEC_TYPE``
``coordinator-key``/``coordinator-value`` and their ``API_KEY``), grouped by the spec folder
each class was generated from; a type's classes are imported when it is first looked up.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Iterator, Mapping
from functools import cache
from types import ModuleType
from typing import Any, Final

from codegen.dumps.packages import SHIPPED_PACKAGE, package_messages, package_name
from codegen.runtime import KafkaMessage
from codegen.slotted import FrozenSlotted

__all__ = [
    "CONSUMER_OFFSETS",
    "COORDINATOR_TOPICS",
    "SHARE_GROUP_STATE",
    "TRANSACTION_STATE",
    "Reader",
    "RecordType",
    "record_types",
]

CONSUMER_OFFSETS: Final = "__consumer_offsets"
TRANSACTION_STATE: Final = "__transaction_state"
SHARE_GROUP_STATE: Final = "__share_group_state"

COORDINATOR_TOPICS: Final[Mapping[str, str]] = {
    CONSUMER_OFFSETS: "consumer_offsets",
    TRANSACTION_STATE: "transaction_state",
    SHARE_GROUP_STATE: "share_group_state",
}
"""Topic -> the spec folder holding its coordinator's records (Kafka: one coordinator module
per topic, each with its own record-type enum)."""

Reader = Callable[[bytes, int], tuple[Any, int]]

_HEADER_SPEC_PATH: Final = re.compile(r"([A-Za-z0-9_.-]+)[/\\][^/\\\s]+\.json")


class RecordType(FrozenSlotted):
    """One coordinator record type: its id, name and key/value classes."""

    id: int
    name: str
    key_class: type[KafkaMessage]
    value_class: type[KafkaMessage]
    key_reader: Reader
    value_readers: Mapping[int, Reader]
    newest_flexible: int | None
    """The newest value version when the value spec is flexible there (so a newer version can
    be read with it), else None."""

    def value_reader(self, version: int) -> tuple[Reader | None, bool]:
        """The reader for a value version and whether it is a newer-than-spec fallback."""
        reader = self.value_readers.get(version)
        if reader is not None:
            return reader, False
        if self.newest_flexible is not None and version > self.newest_flexible:
            return self.value_readers[self.newest_flexible], True
        return None, False

    def unreadable_version(self, version: int) -> str:
        """The error of a value version no reader takes: the text of the value class's rule
        for a version written with the record (``KafkaMessage.written_version``)."""
        try:
            self.value_class.written_version(version)
        except ValueError as exc:
            return str(exc)
        raise AssertionError(f"version {version} of {self.value_class.SPEC_NAME} is readable")


def _spec_folder(cls: type[KafkaMessage]) -> str | None:
    """The folder the class's spec came from, read from the generated module's header."""
    module = sys.modules.get(cls.__module__)
    path = getattr(module, "__file__", None)
    if not path:
        return None
    with open(path, encoding="utf-8") as fh:
        head = fh.read(600)
    m = _HEADER_SPEC_PATH.search(head)
    return m.group(1) if m else None


def _strip_suffix(name: str, suffix: str) -> str:
    return name[: -len(suffix)] if name.endswith(suffix) else name


def _record_type(api_key: int, kcls: type[KafkaMessage], vcls: type[KafkaMessage]) -> RecordType:
    newest = vcls.HIGHEST_VERSION
    return RecordType(
        id=api_key,
        name=_strip_suffix(kcls.SPEC_NAME, "Key"),
        key_class=kcls,
        value_class=vcls,
        key_reader=kcls._READERS[kcls.LOWEST_VERSION],
        value_readers=dict(vcls._READERS),
        newest_flexible=newest if newest in vcls.FLEXIBLE_VERSIONS else None,
    )


class _LazyRecordTypes(Mapping[int, RecordType]):
    """Record type id -> :class:`RecordType` of one topic, whose key and value classes are
    imported when the type is first looked up: a dump of offset commits needs two modules of
    the package's dozens."""

    def __init__(self, messages: Mapping[str, type[KafkaMessage]]) -> None:
        self._messages = messages
        self._specs: dict[int, tuple[str, str]] = {}  # id -> (key spec, value spec)
        self._resolved: dict[int, RecordType] = {}

    def add(self, api_key: int, key_spec: str, value_spec: str) -> None:
        self._specs[api_key] = (key_spec, value_spec)

    def __getitem__(self, type_id: int) -> RecordType:
        rt = self._resolved.get(type_id)
        if rt is None:
            key_spec, value_spec = self._specs[type_id]
            rt = _record_type(type_id, self._messages[key_spec], self._messages[value_spec])
            self._resolved[type_id] = rt
        return rt

    def get(self, type_id: int, default: Any = None) -> Any:
        rt = self._resolved.get(type_id)
        if rt is not None:
            return rt
        return self[type_id] if type_id in self._specs else default

    def __contains__(self, type_id: object) -> bool:
        return type_id in self._specs

    def __iter__(self) -> Iterator[int]:
        return iter(self._specs)

    def __len__(self) -> int:
        return len(self._specs)


_RECORD_SPEC_TYPES: Final = ("coordinator-key", "coordinator-value")


@cache
def _all_record_types(package: str = SHIPPED_PACKAGE) -> Mapping[str, Mapping[int, RecordType]]:
    messages = package_messages(package)
    kinds = getattr(messages, "kinds", None)
    if kinds is None:  # a package generated before its index named the kinds
        return _imported_record_types(messages)
    keys: dict[tuple[str, int], str] = {}
    values: dict[tuple[str, int], str] = {}
    for spec, kind in kinds.items():
        if kind.spec_type in _RECORD_SPEC_TYPES and kind.api_key is not None:
            target = keys if kind.spec_type == "coordinator-key" else values
            target[(kind.folder, kind.api_key)] = spec
    tables: dict[str, _LazyRecordTypes] = {}
    for (folder, api_key), key_spec in sorted(keys.items()):
        value_spec = values.get((folder, api_key))
        if value_spec is not None:
            tables.setdefault(folder, _LazyRecordTypes(messages)).add(api_key, key_spec, value_spec)
    return tables


def _imported_record_types(
    messages: Mapping[str, type[KafkaMessage]],
) -> Mapping[str, Mapping[int, RecordType]]:
    """The tables from the classes themselves (each module imported)."""
    keys: dict[tuple[str, int], type[KafkaMessage]] = {}
    values: dict[tuple[str, int], type[KafkaMessage]] = {}
    for spec in messages:
        cls = messages[spec]
        if cls.SPEC_TYPE not in _RECORD_SPEC_TYPES or cls.API_KEY is None:
            continue
        folder = _spec_folder(cls)
        if folder is None:
            continue
        target = keys if cls.SPEC_TYPE == "coordinator-key" else values
        target[(folder, cls.API_KEY)] = cls
    tables: dict[str, dict[int, RecordType]] = {}
    for (folder, api_key), kcls in sorted(keys.items()):
        vcls = values.get((folder, api_key))
        if vcls is not None:
            tables.setdefault(folder, {})[api_key] = _record_type(api_key, kcls, vcls)
    return tables


def record_types(
    topic: str, package: str | ModuleType = SHIPPED_PACKAGE
) -> Mapping[int, RecordType]:
    """Record type id -> :class:`RecordType` for a coordinator topic (KeyError if not one)."""
    folder = COORDINATOR_TOPICS[topic]
    return _all_record_types(package_name(package)).get(folder, {})
