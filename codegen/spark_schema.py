"""Spark schemas (and vectorizable wire layouts) of every message, derived from the IR.

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
``attr`` (the Python attribute) and ``kafkaType`` (the spec type, ``tagged`` for the map).
"""

from __future__ import annotations

import base64
import uuid
from typing import Any

from codegen.extras import missing_extra

try:
    import jinja2
except ModuleNotFoundError as exc:  # a runtime-only install: name the extra to add
    raise missing_extra("code generation", "generator", exc) from None

from codegen import __version__
from codegen.ir import EmptyArray, EmptyStruct, Field, FieldType, Message, Struct
from codegen.layout import StructLayout, message_layouts

__all__ = [
    "SPARK_MODULE",
    "UNKNOWN_TAGS_FIELD",
    "message_schema",
    "render_spark_module",
    "spark_type",
    "vector_layouts",
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
_VECTOR_FIXED = frozenset(
    {"bool", "int8", "int16", "int32", "int64", "uint16", "uint32", "float64"}
)


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
        "metadata": {"attr": f.attr, "kafkaType": f.type.kind, "elementType": kind},
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


def _simple_default(value: object) -> bool:
    if isinstance(value, EmptyArray | EmptyStruct):
        return False
    return value is None or isinstance(value, bool | int | float | str | bytes | uuid.UUID)


def _spark_value(value: object) -> object:
    """A default in the form the Spark column holds (uuid as Kafka's JSON text)."""
    if isinstance(value, uuid.UUID):
        return base64.urlsafe_b64encode(value.bytes).decode("ascii").rstrip("=")
    return value


def _vector_items(layout: StructLayout, index: dict[str, int]) -> list[Any] | None:
    """``[kind, field index, nullable]`` per wire value, or None when not vectorizable.

    Kinds: the fixed numbers, ``string`` (int16 length), ``compact_string`` (uvarint length)
    and, last in flexible versions, ``tags`` (the tagged-field section; field index -1).
    """
    items: list[Any] = []
    for step in layout.steps:
        if step.kind == "run":
            for item in step.items:
                if item.role == "length":
                    continue
                if item.role != "value" or item.field.type.kind not in _VECTOR_FIXED:
                    return None
                items.append([item.field.type.kind, index[item.field.name], False])
        elif step.kind == "string" and step.field is not None:
            kind = "compact_string" if step.compact else "string"
            items.append([kind, index[step.field.name], step.nullable])
        else:
            return None
    if layout.flexible:
        items.append(["tags", -1, False])
    return items


def vector_layouts(message: Message) -> dict[int, dict[str, Any]]:
    """Per version: the root's wire values in order and the defaults of fields not read.

    Only versions made of fixed-width numbers and strings are listed. The Spark layer decodes
    those with numpy, when every length fits the fast case (an int16, or a one-byte uvarint)
    and a flexible version has no tagged fields (the known ones take their defaults); it
    reads every other version, and every other row, with the generated ``read``.
    """
    root = message.root
    index = {f.name: i for i, f in enumerate(root.fields)}
    out: dict[int, dict[str, Any]] = {}
    for layout in message_layouts(message).layouts(root):
        items = _vector_items(layout, index)
        unread = [*layout.absent, *(t.field for t in layout.tagged)]
        if items is None or not all(_simple_default(f.default) for f in unread):
            continue
        defaults = [[index[f.name], _spark_value(f.default)] for f in unread]
        if not message.flexible_versions.empty:
            defaults.append([len(root.fields), None])  # no tagged section: no unknown tags
        for v in layout.versions:
            out[v] = {"items": items, "defaults": defaults}
    return out


def render_spark_module(env: jinja2.Environment, messages: list[Message]) -> str:
    entries = [
        {
            "name": m.name,
            "schema": message_schema(m),
            "folder": m.source_path.parent.name,
            "layouts": vector_layouts(m),
        }
        for m in messages
    ]
    return env.get_template("spark_schemas.py.j2").render(
        entries=entries, spec_count=len(messages), generator_version=__version__
    )
