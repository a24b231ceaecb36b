"""One table of cases for the version of a user's record, run through every path that reads one.

The rule (``KafkaMessage.given_version`` / ``written_version``, docs/dumps.md "Which version"):
a version a reader is *given* (a topic map's ``version = N``, a column or SQL function's version
argument) must be one the message has; a version *written* with the record (an int16 prefix, a
header holding the plain decimal text of an int16) is read as itself when the message has it,
with the newest when it is newer and the newest is flexible (KIP-915), and is an error
otherwise. Each case says what every path gives: a value (read at a version, newer or not) or
the error's text, the same text on every path (a record's error names its side: ``value: ...``).

The messages are ``tests/cases/payments``: ``PaymentValue`` (versions 0-3, flexible from 2) and
``LedgerEntry`` (1-2, never flexible). The paths: ``dump`` and the Python API
(``tests/test_version_rule.py``), ``kafka-log``'s topic map, the column functions and the SQL
functions (``tests/spark/test_version_rule_spark.py``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any, Final

from codegen.dumps import Header, NewRecord, SegmentWriter

CASES_FOLDER: Final = Path(__file__).resolve().parent / "cases" / "payments"
PACKAGE: Final = "payment_codecs"
HEADER: Final = "schema-version"
SEGMENT: Final = "00000000000000000000.log"
MISSING: Final = object()
"""A header case's record has no header of that name."""

GIVEN, PREFIX, HEADER_TEXT = "given", "prefix", "header"
TOPICS: Final = {  # framing, message -> the topic of its records
    (PREFIX, "PaymentValue"): "payments",
    (PREFIX, "LedgerEntry"): "ledger",
    (HEADER_TEXT, "PaymentValue"): "audit",
}


@dataclass(frozen=True)
class Case:
    """A record's value and how its version is known; what every path gives for it."""

    id: str
    message: str
    framing: str  # GIVEN, PREFIX or HEADER_TEXT
    version: int | None  # the given version or the prefix's int16 (None: a cut prefix)
    header: object = None  # the header's value (bytes, None for a null value, or MISSING)
    read_at: int | None = None  # the version the value is read with; None: an error
    newer: bool = False
    error: str | None = None  # the error's text (a record's: after "value: ")

    @property
    def topic(self) -> str:
        return TOPICS[(self.framing, self.message)]

    @property
    def key(self) -> bytes:
        return self.id.encode()


_PAY = "PaymentValue"
_LEDGER = "LedgerEntry"
_NO_PAY = "PaymentValue has no version {} (valid versions: 0-3)"
_NO_LEDGER = "LedgerEntry has no version {} (valid versions: 1-2)"
_BAD_HEADER = "header 'schema-version' is {!r}, not a version number"

CASES: Final = (
    Case("given-in-range", _PAY, GIVEN, 1, read_at=1),
    Case("given-newest", _PAY, GIVEN, 3, read_at=3),
    Case("given-newer", _PAY, GIVEN, 4, error=_NO_PAY.format(4)),
    Case("given-far-newer", _PAY, GIVEN, 9, error=_NO_PAY.format(9)),
    Case("given-negative", _PAY, GIVEN, -1, error=_NO_PAY.format(-1)),
    Case("given-below-lowest", _LEDGER, GIVEN, 0, error=_NO_LEDGER.format(0)),
    Case("prefix-in-range", _PAY, PREFIX, 0, read_at=0),
    Case("prefix-newest", _PAY, PREFIX, 3, read_at=3),
    Case("prefix-newer", _PAY, PREFIX, 9, read_at=3, newer=True),
    Case("prefix-negative", _PAY, PREFIX, -1, error=_NO_PAY.format(-1)),
    Case(
        "prefix-cut",
        _PAY,
        PREFIX,
        None,
        error="could not read the int16 version prefix (1 byte(s))",
    ),
    Case("prefix-rigid-in-range", _LEDGER, PREFIX, 2, read_at=2),
    Case(
        "prefix-rigid-newer",
        _LEDGER,
        PREFIX,
        3,
        error="version 3 of LedgerEntry is newer than the newest known (2), which is not "
        "flexible, so it cannot be read",
    ),
    Case("prefix-rigid-below-lowest", _LEDGER, PREFIX, 0, error=_NO_LEDGER.format(0)),
    Case("header-in-range", _PAY, HEADER_TEXT, 2, b"2", read_at=2),
    Case("header-newer", _PAY, HEADER_TEXT, 7, b"7", read_at=3, newer=True),
    Case("header-negative", _PAY, HEADER_TEXT, -1, b"-1", error=_NO_PAY.format(-1)),
    Case("header-padded", _PAY, HEADER_TEXT, None, b" 1", error=_BAD_HEADER.format(b" 1")),
    Case("header-zero-padded", _PAY, HEADER_TEXT, None, b"01", error=_BAD_HEADER.format(b"01")),
    Case("header-plus", _PAY, HEADER_TEXT, None, b"+1", error=_BAD_HEADER.format(b"+1")),
    Case("header-trailing", _PAY, HEADER_TEXT, None, b"1\n", error=_BAD_HEADER.format(b"1\n")),
    Case("header-text", _PAY, HEADER_TEXT, None, b"two", error=_BAD_HEADER.format(b"two")),
    Case("header-not-int16", _PAY, HEADER_TEXT, None, b"99999", error=_BAD_HEADER.format(b"99999")),
    Case(
        "header-null",
        _PAY,
        HEADER_TEXT,
        None,
        None,
        error="header 'schema-version' is null: it must name the version",
    ),
    Case(
        "header-missing",
        _PAY,
        HEADER_TEXT,
        None,
        MISSING,
        error="no header 'schema-version' naming the version",
    ),
)
WRITTEN: Final = tuple(c for c in CASES if c.framing != GIVEN)
GIVEN_CASES: Final = tuple(c for c in CASES if c.framing == GIVEN)


def sample(module: ModuleType, message: str, version: int) -> Any:
    """The value a case's record holds, as a writer at ``version`` fills it."""
    cls = module.MESSAGES[message]
    if message == _LEDGER:
        return cls(account="acc-1", balance=1200, note="opening" if version >= 2 else "")
    line = cls._STRUCTS["PaymentLine"]
    lines = [line(item="tea", cents=250, tags=["hot", "x"]), line(item="cup", cents=0, tags=[])]
    currency = "USD" if version >= 1 else "EUR"
    return cls(
        amount=250, currency=currency, lines=lines, reference="inv-7" if version >= 3 else None
    )


def body(module: ModuleType, case: Case) -> bytes:
    """The message bytes of a case's value: encoded at the version it is read with (its own, or
    the newest the reader knows for a newer one), else at the message's newest."""
    cls = module.MESSAGES[case.message]
    version = case.read_at if case.read_at is not None else cls.HIGHEST_VERSION
    return sample(module, case.message, version).encode(version)


def value_bytes(module: ModuleType, case: Case) -> bytes:
    """A case's record value as written: the bytes of :func:`body`, behind an int16 prefix."""
    data = body(module, case)
    if case.framing != PREFIX:
        return data
    if case.version is None:
        return b"\x00"  # one byte: no room for the prefix
    return case.version.to_bytes(2, "big", signed=True) + data


def headers(case: Case) -> list[Header]:
    if case.framing != HEADER_TEXT or case.header is MISSING:
        return [Header(b"other", b"1")]
    assert case.header is None or isinstance(case.header, bytes)
    return [Header(b"other", b"1"), Header(HEADER.encode(), case.header)]


def expected_json(module: ModuleType, case: Case) -> dict[str, Any]:
    """The value's JSON (``to_json``) a case that decodes gives on every path."""
    assert case.read_at is not None
    cls = module.MESSAGES[case.message]
    return cls.decode(body(module, case), case.read_at).to_json(case.read_at)  # type: ignore[no-any-return]


def map_text(package: str = PACKAGE) -> str:
    """The topic map of the written cases' topics."""
    return (
        f'package = "{package}"\n[topics]\n'
        '"payments" = { value = { message = "PaymentValue", version = "prefix" } }\n'
        '"ledger" = { value = { message = "LedgerEntry", version = "prefix" } }\n'
        f'"audit" = {{ value = {{ message = "PaymentValue", header = "{HEADER}" }} }}\n'
    )


def given_map_text(case: Case, package: str = PACKAGE) -> str:
    """A topic map giving a case's version to a topic (``given`` cases)."""
    return (
        f'package = "{package}"\n[topics]\n'
        f'"given" = {{ value = {{ message = "{case.message}", version = {case.version} }} }}\n'
    )


def write_case_topics(folder: Path, module: ModuleType) -> Path:
    """A broker folder with a partition per topic of :data:`TOPICS`, a record per written case
    (the case's id as its key, in :data:`CASES` order), ``given-0`` with one record per given
    case (its value at the given version, when the message has it), and ``topics.toml``."""
    logs = folder / "logs"
    by_topic: dict[str, list[NewRecord]] = {}
    for case in WRITTEN:
        record = NewRecord(case.key, value_bytes(module, case), headers=headers(case))
        by_topic.setdefault(case.topic, []).append(record)
    for topic, records in by_topic.items():
        (logs / f"{topic}-0").mkdir(parents=True)
        with SegmentWriter(logs / f"{topic}-0" / SEGMENT) as writer:
            writer.write_batch(records, timestamp=1_700_000_000_000)
    (folder / "topics.toml").write_text(map_text())
    return logs
