"""A codec package generated from a newer coordinator spec set, and a dump only it can read.

``tests/data/newer_coordinator`` (see its README) adds a record type (``TransactionAudit``,
apiKey 1) and a value version (``TransactionLogValue`` v2, with ``CoordinatorEpoch``) to copies
of the shipped ``transaction_state`` specs.
"""

from __future__ import annotations

import importlib
import struct
import sys
from pathlib import Path
from types import ModuleType

from codegen.dumps import SegmentWriter

SPECS = Path(__file__).resolve().parent / "data" / "newer_coordinator"
PACKAGE = "newer_codecs"
"""The name the package is generated under (unique to these tests)."""

AUDIT_TYPE = 1
TRANSACTIONAL_ID = "tx-1"
COORDINATOR_EPOCH = 5


def generate(parent: Path) -> Path:
    """Generate the package into ``parent / PACKAGE``; returns ``parent``."""
    from codegen.emit import write_package

    write_package([SPECS], parent / PACKAGE)
    return parent


def import_package(parent: Path) -> ModuleType:
    if str(parent) not in sys.path:
        sys.path.insert(0, str(parent))
    return importlib.import_module(PACKAGE)


def records(package: ModuleType) -> list[tuple[bytes, bytes]]:
    """(key, value) of a TransactionLog record at value version 2 and of a TransactionAudit."""
    messages = package.MESSAGES
    log_key = messages["TransactionLogKey"](transactional_id=TRANSACTIONAL_ID)
    log_value = messages["TransactionLogValue"](
        producer_id=42, producer_epoch=3, transaction_timeout_ms=60_000,
        coordinator_epoch=COORDINATOR_EPOCH,
    )  # fmt: skip
    audit_key = messages["TransactionAuditKey"](transactional_id=TRANSACTIONAL_ID)
    audit_value = messages["TransactionAuditValue"](producer_id=42, action="fenced", operator="ops")
    return [
        (struct.pack(">h", 0) + log_key.encode(0), struct.pack(">h", 2) + log_value.encode(2)),
        (
            struct.pack(">h", AUDIT_TYPE) + audit_key.encode(0),
            struct.pack(">h", 0) + audit_value.encode(0),
        ),
    ]


def write_dump(folder: Path, package: ModuleType) -> Path:
    """A ``__transaction_state-0`` partition folder below ``folder`` holding :func:`records`."""
    partition = folder / "__transaction_state-0"
    partition.mkdir(parents=True)
    with SegmentWriter(partition / "00000000000000000000.log") as writer:
        writer.write_batch(records(package))
    return partition
