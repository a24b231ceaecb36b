"""An independent judgement of whether a spec change breaks the wire or stored data.

Written apart from the lint on purpose: it reads the specs' raw JSON (no IR, nothing of
``codegen.lint``) and builds each version's byte layout the way Kafka's generator writes it,
so a wrong lint rule cannot agree with itself. A change of one spec breaks when:

* a released version both releases define has another layout: the non-tagged fields in order
  (type, nullability, compact or not, nested structs the same way), the flexible header, and
  the tagged fields both sides have (type, nullability, default); names do not enter it;
* a released version is gone (the spec, or versions below or above), or comes back with
  another layout than an earlier release gave it;
* the spec's apiKey or type changes (moving a coordinator record between the data model and
  the coordinator-key/-value model is no change when the record type's layouts match);
* a coordinator value gains a version that KIP-915 readers, which parse newer versions as
  their highest one, would misread (other non-tagged fields, or tags after a non-flexible
  version).

A version is released unless it is the newest version of a request marked
``latestVersionUnstable`` (or that version of the response with its apiKey).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from codegen.specfile import read_spec_file

PRIMITIVES = {
    "bool": "false",
    "int8": "0",
    "int16": "0",
    "uint16": "0",
    "int32": "0",
    "uint32": "0",
    "int64": "0",
    "float64": "0.0",
    "string": "",
    "uuid": "AAAAAAAAAAAAAAAAAAAAAA",
    "bytes": "",
    "records": "",
}
TOP = 32767
RECORD_TYPES = {"data", "coordinator-key", "coordinator-value"}

Spec = Mapping[str, Any]


def versions(text: str | None) -> range:
    if text is None or text == "none":
        return range(0)
    if text.endswith("+"):
        return range(int(text[:-1]), TOP + 1)
    low, _, high = text.partition("-")
    return range(int(low), int(high or low) + 1)


def valid(spec: Spec) -> set[int]:
    return set(versions(spec.get("validVersions")))


def _default(field: Spec, kind: str) -> str:
    text = field.get("default")
    if text is None:
        return PRIMITIVES.get(kind, "")
    try:
        return str(int(str(text), 0))
    except ValueError:
        return str(text)


def _field(field: Spec, version: int, flexible: bool, common: Mapping[str, Spec]) -> Any:
    kind = field["type"]
    array = kind.startswith("[]")
    element = kind[2:] if array else kind
    if element in PRIMITIVES:
        body: Any = "bytes" if element == "records" else element
    else:
        struct_fields = field.get("fields") or common[element]["fields"]
        body = _struct(struct_fields, version, flexible, common)
    overrides = field.get("flexibleVersions")
    lengths = array or element in ("string", "bytes", "records")
    compact = lengths and flexible and (overrides is None or version in versions(overrides))
    nullable = version in versions(field.get("nullableVersions"))
    return ("[]" if array else "", body, nullable, compact)


def _struct(
    fields: Iterable[Spec], version: int, flexible: bool, common: Mapping[str, Spec]
) -> Any:
    mandatory = []
    tagged = {}
    for field in fields:
        if version not in versions(field.get("versions")):
            continue
        shape = _field(field, version, flexible, common)
        if version in versions(field.get("taggedVersions")):
            kind = field["type"]
            tagged[field["tag"]] = (shape, _default(field, kind))
        else:
            mandatory.append(shape)
    return (tuple(mandatory), tagged)


def layout(spec: Spec, version: int) -> Any:
    flexible = version in versions(spec.get("flexibleVersions"))
    common = {s["name"]: s for s in spec.get("commonStructs", [])}
    return (flexible, _struct(spec["fields"], version, flexible, common))


def _plain(fields: Iterable[Any]) -> Any:
    """Non-tagged fields without tags (nested ones included) and without compact lengths."""
    return tuple(
        (array, body if isinstance(body, str) else _plain(body[0]), nullable)
        for array, body, nullable, _ in fields
    )


def _same(a: Any, b: Any) -> bool:
    """Struct shapes: the same non-tagged fields, and equal tags where both have one."""
    (a_fields, a_tags), (b_fields, b_tags) = a, b
    if len(a_fields) != len(b_fields):
        return False
    for x, y in zip(a_fields, b_fields, strict=True):
        if not _same_field(x, y):
            return False
    return all(
        _same_field(a_tags[t][0], b_tags[t][0]) and a_tags[t][1] == b_tags[t][1]
        for t in a_tags.keys() & b_tags.keys()
    )


def _same_field(x: Any, y: Any) -> bool:
    if x[0] != y[0] or x[2:] != y[2:] or isinstance(x[1], str) != isinstance(y[1], str):
        return False
    return x[1] == y[1] if isinstance(x[1], str) else _same(x[1], y[1])


def same_layout(a: Any, b: Any) -> bool:
    return a[0] == b[0] and _same(a[1], b[1])


# --------------------------------------------------------------------------- releases


def load_release(root: Path) -> dict[str, tuple[Spec, str]]:
    """``name -> (spec, folder)`` of every spec below ``root`` that has versions."""
    found: dict[str, tuple[Spec, str]] = {}
    for path in sorted(root.rglob("*.json")):
        spec = read_spec_file(path).value
        if isinstance(spec, dict) and valid(spec):
            found[spec["name"]] = (spec, path.parent.relative_to(root).as_posix())
    return found


def unreleased(release: Mapping[str, tuple[Spec, str]]) -> dict[str, set[int]]:
    newest = {
        spec.get("apiKey"): max(valid(spec))
        for spec, _ in release.values()
        if spec["type"] == "request" and spec.get("latestVersionUnstable")
    }
    found: dict[str, set[int]] = {}
    for name, (spec, _) in release.items():
        if spec["type"] in ("request", "response") and spec.get("apiKey") in newest:
            found[name] = {newest[spec.get("apiKey")]} & valid(spec)
    return found


def _role(name: str, spec: Spec, release: Mapping[str, tuple[Spec, str]]) -> str:
    if spec["type"] in ("coordinator-key", "coordinator-value"):
        return spec["type"].removeprefix("coordinator-")
    if spec["type"] != "data":
        return ""
    folder = release[name][1]
    for suffix, partner, role in (("Key", "Value", "key"), ("Value", "Key", "value")):
        other = name[: -len(suffix)] + partner if name.endswith(suffix) else None
        if other is not None and other in release and release[other][1] == folder:
            return role
    return ""


def _key_versions(spec: Spec) -> list[tuple[int, int]]:
    """``(record type id, key version)``: a data key at version = id, a coordinator key at 0."""
    if spec["type"] == "coordinator-key":
        return [(spec["apiKey"], 0)]
    return [(v, v) for v in sorted(valid(spec))]


def _record_keys(
    release: Mapping[str, tuple[Spec, str]],
) -> dict[tuple[str, int], tuple[Spec, int]]:
    keys: dict[tuple[str, int], tuple[Spec, int]] = {}
    for name, (spec, folder) in release.items():
        if _role(name, spec, release) == "key":
            for type_id, at in _key_versions(spec):
                keys[(folder, type_id)] = (spec, at)
    return keys


def _kip915_breaks(old: Spec, new: Spec) -> bool:
    """KIP-915 readers parse a version newer than theirs as their highest one."""
    highest = max(valid(old))
    old_flexible, (old_fields, _) = layout(old, highest)
    for version in sorted(v for v in valid(new) if v > highest):
        _, (fields, tags) = layout(new, version)
        if _plain(fields) != _plain(old_fields) or (tags and not old_flexible):
            return True
    return False


def breaks(
    name: str,
    old_release: Mapping[str, tuple[Spec, str]],
    new_release: Mapping[str, tuple[Spec, str]],
    history: Mapping[tuple[str, int], list[Any]],
) -> bool:
    """Whether the change of spec ``name`` from ``old_release`` to ``new_release`` breaks."""
    old, _ = old_release[name]
    released = valid(old) - unreleased(old_release).get(name, set())
    if name not in new_release:
        return bool(released)
    new, _ = new_release[name]
    role = _role(name, old, old_release)
    moved = old["type"] != new["type"] and {old["type"], new["type"]} <= RECORD_TYPES
    if moved and role == "key":
        # each record type of the key keeps its key layout, whichever key spec has it now
        keys = _record_keys(new_release)
        folder = old_release[name][1]
        for type_id, at in _key_versions(old):
            now = keys.get((folder, type_id))
            if now is None or not same_layout(layout(old, at), layout(now[0], now[1])):
                return True
        return False
    if not moved and (old["type"] != new["type"] or old.get("apiKey") != new.get("apiKey")):
        return True
    if released - valid(new):
        return True
    for version in sorted(released & valid(new)):
        if not same_layout(layout(old, version), layout(new, version)):
            return True
    for version in sorted(valid(new) - valid(old)):
        earlier = history.get((name, version), [])
        if earlier and not any(same_layout(e, layout(new, version)) for e in earlier):
            return True
    return role == "value" and _kip915_breaks(old, new)


def remember(
    release: Mapping[str, tuple[Spec, str]], history: dict[tuple[str, int], list[Any]]
) -> None:
    """Add the layouts of ``release``'s released versions to ``history``."""
    not_yet = unreleased(release)
    for name, (spec, _) in release.items():
        for version in sorted(valid(spec) - not_yet.get(name, set())):
            shape = layout(spec, version)
            known = history.setdefault((name, version), [])
            if shape not in known:
                known.append(shape)
