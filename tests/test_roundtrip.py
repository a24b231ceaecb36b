"""Round trips of generated codecs over whole spec corpora, with hypothesis-drawn instances.

For every spec of the pinned Kafka 4.4.0 release (every spec inside its jars, unpacked by
``make setup``: see ``tests/corpus.py``; these cases carry the ``oracle`` marker) and of our own
``message_specs``, and for every valid version:
encode -> decode -> encode gives the same bytes and an equal object, decoding consumes every
byte, the row reader gives the decoded object's values, to_json -> from_json gives an equal object, and unknown tagged fields survive.

Each corpus is generated into its own package in the session's tmp dir (spec names repeat
between corpora). ``SPECGEN_EXAMPLES`` sets the examples per (message, version) (default 4).
"""

from __future__ import annotations

import importlib
import json
from pathlib import Path
from typing import Any

import pytest
from corpus import SHIPPED_SPECS, CorpusMissingError, corpus_settings, kafka_specs, version_params
from hypothesis import HealthCheck, given
from strategies import comparable_json, has_unknown_tags, instances, json_view, plain_row, row_of

from codegen.emit import load_messages
from codegen.ir import Message

KAFKA = "kafka_4_4_0"
CORPORA: dict[str, Path] = {"message_specs": SHIPPED_SPECS}
KAFKA_MISSING: CorpusMissingError | None = None
try:
    CORPORA[KAFKA] = kafka_specs()
except CorpusMissingError as error:
    KAFKA_MISSING = error
SETTINGS = corpus_settings("SPECGEN_EXAMPLES", 4, HealthCheck.filter_too_much)
MESSAGES = {name: load_messages([path]) for name, path in sorted(CORPORA.items())}


def _marks(corpus: str) -> list[pytest.MarkDecorator]:
    return [pytest.mark.oracle] if corpus == KAFKA else []


PAIRS = [
    p
    for corpus, messages in MESSAGES.items()
    for p in version_params(corpus, messages, _marks(corpus))
]


@pytest.mark.oracle
def test_the_kafka_corpus_is_here() -> None:
    """Without the release's specs the oracle-marked cases above are not even listed."""
    if KAFKA_MISSING is not None:
        raise KAFKA_MISSING
    assert len(MESSAGES[KAFKA]) > 250


def _package(codec_package: Any, corpus: str) -> Any:
    return codec_package(f"rt_{corpus}", [CORPORA[corpus]])


@pytest.mark.parametrize("corpus", [pytest.param(c, marks=_marks(c)) for c in sorted(MESSAGES)])
def test_every_module_imports(corpus: str, codec_package: Any) -> None:
    package = _package(codec_package, corpus)
    names = sorted(m.name for m in MESSAGES[corpus])
    assert sorted(package.MESSAGES) == names
    for name in names:
        cls = package.MESSAGES[name]
        assert name == cls.SPEC_NAME


@pytest.mark.parametrize(("corpus", "message", "version"), PAIRS)
def test_roundtrip(corpus: str, message: Message, version: int, codec_package: Any) -> None:
    package = _package(codec_package, corpus)
    module = importlib.import_module(f"{package.__name__}.{message.module}")
    cls = getattr(module, message.name)
    flexible = version in message.flexible_versions

    @SETTINGS
    @given(instances(message, module, version))
    def check(obj: Any) -> None:
        data = obj.encode(version)
        decoded, end = cls.read(data, 0, version)
        assert end == len(data), "decode left bytes over"
        assert decoded == obj
        assert decoded.encode(version) == data
        assert cls.decode(data, version) == obj
        assert plain_row(cls.decode_row(data, version)) == row_of(decoded)
        # Offsets other than 0: read from inside a larger buffer.
        again, end = cls.read(b"\x00\x01\x02" + data + b"\xff", 3, version)
        assert (again, end) == (obj, 3 + len(data))
        if has_unknown_tags(obj, message, version):
            assert flexible
            assert has_unknown_tags(decoded, message, version)

        tree = obj.to_json(version)
        text = json.dumps(tree)  # real JSON text, as a tool would print it
        back = cls.from_json(json.loads(text), version)
        view = json_view(obj, message, version)
        assert back == view
        # Not always ``tree``: like Kafka, a tagged struct holding unknown tags is not default,
        # so it is printed, but its unknown tags do not survive JSON.
        assert comparable_json(back.to_json(version)) == comparable_json(view.to_json(version))

    check()

    # A deterministic unknown tag at the top level (strategies add them at every level).
    if flexible:
        obj = cls()
        known = [f.tag for f in message.root.fields if f.tag is not None]
        first = max(known) + 1 if known else 0
        obj.unknown_tags = {first: b"\x01\x02\x03", first + 200: b""}
        data = obj.encode(version)
        assert cls.decode(data, version).unknown_tags == obj.unknown_tags
        assert cls.decode(data, version).encode(version) == data
