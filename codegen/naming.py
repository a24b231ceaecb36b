"""Python and JSON names for spec names."""

from __future__ import annotations

import keyword
import re

# Names the generated classes define themselves; a field may not take one of them.
RESERVED_ATTRIBUTES = frozenset(
    {"encode", "decode", "read", "to_json", "from_json", "unknown_tags", "copy"}
)

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


def json_name(spec_name: str) -> str:
    """Kafka's JSON key: the spec name with its first letter lower-cased."""
    return spec_name[:1].lower() + spec_name[1:]


def module_name(spec_name: str) -> str:
    return snake_case(spec_name)
