"""Spark schemas of every message, derived from the IR.

:func:`spark_type` is the one place where a spec type becomes a Spark type, in the role of Spark's
``SchemaConverters.toSqlType``. The result is Spark's JSON schema form (what
``StructType.fromJson`` reads), rendered as plain data into ``generated/_spark_schemas.py`` so
the Spark layer needs neither pyspark nor the generator to know the shapes.

Type mapping (every field nullable; absent-in-version fields hold their default, as in the codecs):

=========  ==========  ============================================================
spec       Spark       note
=========  ==========  ============================================================
bool       boolean
int8       byte
int16      short
int32      integer
int64      long
uint16     integer     widened: Spark has no unsigned types
uint32     long        widened
float64    double
uuid       string      Kafka's JSON form: 22 base64url characters, no padding
string     string
bytes      binary
records    binary      the raw record-set bytes
[]T        array<T>
Struct     struct<..>
=========  ==========  ============================================================

Structs of a message with flexible versions get one more field, ``_unknown_tagged_fields``
(``map<integer, binary>``): tagged fields the spec does not know, by tag; null when there are none.

Field names are Kafka's JSON names (``json_key``: the spec name with its first letter
lower-cased, ``TopicId`` -> ``topicId``), the keys Kafka's ``JsonConverter`` writes and
``dump`` prints, so one field has one name in every output (``docs/naming.md``).

Field metadata carries what a decoder needs to fill the field from a generated object:
``attr`` (the Python attribute), ``kafkaType`` (the spec type, ``tagged`` for the map) and
``versions`` (the message versions that have the field: ``3+``, ``0-2``; not on the map).
"""

from __future__ import annotations

from typing import Any

from codegen.extras import missing_extra

try:
    import jinja2
except ModuleNotFoundError as exc:  # a runtime-only install: name the extra to add
    raise missing_extra("code generation", "generator", exc) from None

from codegen import __version__
from codegen.ir import Field, FieldType, Message, Struct

__all__ = [
    "SPARK_MODULE",
    "UNKNOWN_TAGS_FIELD",
    "message_schema",
    "render_spark_module",
    "spark_type",
]

SPARK_MODULE = "_spark_schemas.py"
UNKNOWN_TAGS_FIELD = "_unknown_tagged_fields"

_ATOMIC: dict[str, str] = {
    "bool": "boolean",
    "int8": "byte",
    "int16": "short",
    "int32": "integer",
    "int64": "long",
    "uint16": "integer",
    "uint32": "long",
    "float64": "double",
    "uuid": "string",
    "string": "string",
    "bytes": "binary",
    "records": "binary",
}


def spark_type(ftype: FieldType, struct: Struct | None, flexible: bool) -> Any:
    """The Spark JSON type of a spec type (the one mapping function)."""
    if ftype.kind in _ATOMIC:
        return _ATOMIC[ftype.kind]
    if ftype.kind == "array":
        assert ftype.element is not None
        return {
            "type": "array",
            "elementType": spark_type(ftype.element, struct, flexible),
            "containsNull": True,
        }
    if ftype.kind == "struct":
        assert struct is not None
        return struct_schema(struct, flexible)
    raise ValueError(f"no Spark type for {ftype.spec_text}")


def _field(f: Field, flexible: bool) -> dict[str, Any]:
    kind = f.type.element.kind if f.type.kind == "array" and f.type.element else f.type.kind
    return {
        "name": f.json_key,
        "type": spark_type(f.type, f.struct, flexible),
        "nullable": True,
        "metadata": {
            "attr": f.attr,
            "kafkaType": f.type.kind,
            "elementType": kind,
            "versions": str(f.versions),
        },
    }


def struct_schema(struct: Struct, flexible: bool) -> dict[str, Any]:
    fields = [_field(f, flexible) for f in struct.fields]
    if flexible:
        fields.append(
            {
                "name": UNKNOWN_TAGS_FIELD,
                "type": {
                    "type": "map",
                    "keyType": "integer",
                    "valueType": "binary",
                    "valueContainsNull": True,
                },
                "nullable": True,
                "metadata": {"attr": "unknown_tags", "kafkaType": "tagged", "elementType": ""},
            }
        )
    return {"type": "struct", "fields": fields}


def message_schema(message: Message) -> dict[str, Any]:
    """The version-independent Spark schema of a message (all fields of all versions)."""
    return struct_schema(message.root, not message.flexible_versions.empty)


def render_spark_module(env: jinja2.Environment, messages: list[Message]) -> str:
    entries = [
        {
            "name": m.name,
            "schema": message_schema(m),
            "folder": m.source_path.parent.name,
        }
        for m in messages
    ]
    return env.get_template("spark_schemas.py.j2").render(
        entries=entries, spec_count=len(messages), generator_version=__version__
    )
