"""The numbers of the layout-table format the engine reads (``codegen.native_tables`` builds
the tables): its magic and version, one opcode per wire shape, the op flags and the kinds of
defaults. Stdlib only.

The engine's C names for them (``table_format.h``) are generated from this module by
``python -m codegen generate`` and checked by ``python -m codegen check``; the jsonl printer's
plans (``codegen.dumps.json_text``) read tables with them too.
"""

from __future__ import annotations

from typing import Final

__all__ = [
    "ARRAY",
    "BOOL",
    "BYTES",
    "COMPACT",
    "DEFAULT_KINDS",
    "DEFAULT_LIST",
    "DEFAULT_STRUCT",
    "DEFAULT_UUID",
    "DEFAULT_VALUE",
    "FLAGS",
    "FLOAT64",
    "FORMAT_VERSION",
    "INT8",
    "INT16",
    "INT32",
    "INT64",
    "MAGIC",
    "NULLABLE",
    "OPCODES",
    "STRING",
    "STRUCT",
    "TAGGED_MARKER",
    "UINT16",
    "UINT32",
    "UUID",
]

MAGIC: Final = "kafka-specgen-native"
FORMAT_VERSION: Final = 1

# Opcodes: one per wire shape. Records are read as bytes.
INT8, INT16, INT32, INT64, UINT16, UINT32, FLOAT64, BOOL, UUID = range(1, 10)
STRING, BYTES, ARRAY, STRUCT = range(10, 14)
OPCODES: Final = {
    "INT8": INT8,
    "INT16": INT16,
    "INT32": INT32,
    "INT64": INT64,
    "UINT16": UINT16,
    "UINT32": UINT32,
    "FLOAT64": FLOAT64,
    "BOOL": BOOL,
    "UUID": UUID,
    "STRING": STRING,
    "BYTES": BYTES,
    "ARRAY": ARRAY,
    "STRUCT": STRUCT,
}
"""Every opcode by name, in order (the fixed-width ones first, up to ``UUID``)."""

# Op flags.
COMPACT: Final = 1  # uvarint length + 1 (flexible versions), else a fixed-width length
NULLABLE: Final = 2  # a negative length (or struct marker) is None
TAGGED_MARKER: Final = 4  # a nullable struct in the tagged section: uvarint marker, no path segment
FLAGS: Final = {"COMPACT": COMPACT, "NULLABLE": NULLABLE, "TAGGED_MARKER": TAGGED_MARKER}

# Default kinds.
DEFAULT_VALUE: Final = 0  # an immutable value, shared
DEFAULT_UUID: Final = 1  # uuid.UUID(int=default)
DEFAULT_LIST: Final = 2  # a new empty list
DEFAULT_STRUCT: Final = 3  # a new instance of the class named by default
DEFAULT_KINDS: Final = {
    "VALUE": DEFAULT_VALUE,
    "UUID": DEFAULT_UUID,
    "LIST": DEFAULT_LIST,
    "STRUCT": DEFAULT_STRUCT,
}
