"""Python and JSON names for spec names, and case conversion between them. Stdlib only."""

from __future__ import annotations

import keyword
import re
from typing import Any

# Names the generated classes define themselves; a field may not take one of them.
RESERVED_ATTRIBUTES = frozenset(
    {"encode", "decode", "read", "to_json", "from_json", "unknown_tags", "copy"}
)

# Spec names become module file names, class names and attributes. Kafka's longest name
# has 49 characters; the limit keeps ``<snake_case name>.py`` far below the 255 bytes file
# systems allow for a file name.
MAX_NAME_LENGTH = 100
# Names generated modules import without an underscore; a class of that name would hide them.
MODULE_GLOBALS = frozenset({"Any", "ClassVar", "Self"})

_CLASS_NAME = re.compile(r"[A-Z][A-Za-z0-9]*")
_ACRONYM_END = re.compile(r"([A-Z]+)([A-Z][a-z])")
_WORD_START = re.compile(r"([a-z0-9])([A-Z])")


def snake_case(name: str) -> str:
    """``CommitTimestamp`` -> ``commit_timestamp``; ``TopicID`` -> ``topic_id``."""
    s = _ACRONYM_END.sub(r"\1_\2", name)
    s = _WORD_START.sub(r"\1_\2", s)
    return s.lower()


def attribute_name(spec_name: str) -> str:
    """The Python attribute for a spec field; keywords get a trailing underscore."""
    s = snake_case(spec_name)
    return f"{s}_" if keyword.iskeyword(s) else s


def camel_case(attribute: str) -> str:
    """A Python attribute under Kafka's JSON style: ``leader_epoch`` -> ``leaderEpoch`` (the
    names the Spark columns have too; docs/naming.md)."""
    head, *rest = attribute.split("_")
    return head + "".join(word[:1].upper() + word[1:] for word in rest)


def camel_keys(d: dict[str, Any]) -> dict[str, Any]:
    """A dict with ``snake_case`` keys (``asdict`` of a dataclass) as JSON's ``camelCase``
    (:func:`camel_case` of each key)."""
    return {camel_case(k): v for k, v in d.items()}


def json_name(spec_name: str) -> str:
    """Kafka's JSON key: the spec name with its first letter lower-cased."""
    return spec_name[:1].lower() + spec_name[1:]


def module_name(spec_name: str) -> str:
    return snake_case(spec_name)


def shown(name: str) -> str:
    """A name as problems print it: long names cut short."""
    return name if len(name) <= 40 else f"{name[:40]}..."


def length_problem(name: str) -> str | None:
    if len(name) > MAX_NAME_LENGTH:
        return (
            f"is {len(name)} characters long; names may have at most {MAX_NAME_LENGTH} "
            "characters (they become file, class and attribute names)"
        )
    return None


def class_name_problem(name: str) -> str | None:
    """Why ``name`` (a message or struct) cannot be a generated class name, or None."""
    too_long = length_problem(name)
    if too_long is not None:
        return too_long
    if not _CLASS_NAME.fullmatch(name):
        return "must start with a capital letter and hold only letters and digits"
    if keyword.iskeyword(name):
        return "is a Python keyword; rename it"
    if name in MODULE_GLOBALS:
        return "is a name the generated module imports; rename it"
    return None
