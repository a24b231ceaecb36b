"""The index of a generated package: spec name -> class, each module imported on first use.
Stdlib only."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from importlib import import_module

from codegen.runtime.messages import KafkaMessage


@dataclass(frozen=True, slots=True)
class MessageKind:
    """What a spec is, known without importing its module: its class's ``SPEC_TYPE`` and
    ``API_KEY``, and the folder its spec came from (the topic family, ``consumer_offsets``)."""

    spec_type: str
    api_key: int | None
    folder: str


class MessageIndex(Mapping[str, type[KafkaMessage]]):
    """Spec name -> generated class, importing each module on first use.

    ``kinds`` (spec name -> ``(SPEC_TYPE, API_KEY, folder)``) lets a reader pick the classes
    it needs, such as one topic's record types, without importing the others; packages
    generated before it was written have none (:attr:`kinds` is then None).
    """

    def __init__(
        self,
        package: str,
        modules: Mapping[str, str],
        kinds: Mapping[str, tuple[str, int | None, str]] | None = None,
    ) -> None:
        self._package = package
        self._modules = dict(modules)
        self._loaded: dict[str, type[KafkaMessage]] = {}
        self._kinds = None if kinds is None else {n: MessageKind(*k) for n, k in kinds.items()}

    @property
    def kinds(self) -> Mapping[str, MessageKind] | None:
        """Spec name -> :class:`MessageKind` of every spec, or None (an older package)."""
        return self._kinds

    def __getitem__(self, name: str) -> type[KafkaMessage]:
        cls = self._loaded.get(name)
        if cls is None:
            module = import_module(f"{self._package}.{self._modules[name]}")
            cls = getattr(module, name)
            self._loaded[name] = cls
        return cls

    def __iter__(self) -> Iterator[str]:
        return iter(self._modules)

    def __len__(self) -> int:
        return len(self._modules)
