"""Which old field is which new field.

Kafka's checker pairs fields only by position and never compares names, so a rename
passes and a tagged field added in the middle is compared with an unrelated field. Here
fields are paired in three passes, each only among fields the earlier passes left over:

1. by name (the same field, whatever else changed);
2. tagged fields by tag number, when the type is the same (a renamed tagged field);
3. non-tagged fields by position among the non-tagged fields, when their versions
   overlap (a renamed field).

What is left is old-only (removed) or new-only (added).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from codegen.lint.model import LField, LStruct
from codegen.versions import VersionRange


class Domain(enum.Enum):
    OLD_ONLY = "old-only"
    BOTH = "both"
    NEW_ONLY = "new-only"


class PairedBy(enum.Enum):
    NAME = "name"
    TAG = "tag"
    POSITION = "position"
    NOTHING = "nothing"


@dataclass(frozen=True, slots=True)
class FieldPair:
    old: LField | None
    new: LField | None
    paired_by: PairedBy

    @property
    def domain(self) -> Domain:
        if self.old is None:
            return Domain.NEW_ONLY
        if self.new is None:
            return Domain.OLD_ONLY
        return Domain.BOTH

    @property
    def renamed(self) -> bool:
        return self.old is not None and self.new is not None and self.old.name != self.new.name


def effective_range(versions: VersionRange, scope: VersionRange) -> VersionRange:
    """The versions of ``versions`` that exist in ``scope``; the same rule for old and new."""
    return versions.intersect(scope)


def _untagged(fields: tuple[LField, ...]) -> list[LField]:
    return [f for f in fields if not f.ir.is_tagged]


def pair_fields(old: LStruct, new: LStruct) -> list[FieldPair]:
    """Pairs in new-spec order, then the old-only fields in old-spec order."""
    new_by_name = {f.name: f for f in new.fields}
    partner: dict[int, tuple[LField, PairedBy]] = {}  # new index -> (old field, how)
    taken_old: set[int] = set()

    for f in old.fields:
        match = new_by_name.get(f.name)
        if match is not None:
            partner[match.index] = (f, PairedBy.NAME)
            taken_old.add(f.index)

    new_by_tag = {f.ir.tag: f for f in new.fields if f.ir.is_tagged and f.index not in partner}
    for f in old.fields:
        if f.index in taken_old or not f.ir.is_tagged:
            continue
        match = new_by_tag.get(f.ir.tag)
        # A tag on a field of another type is a reused tag, not a renamed field.
        if (
            match is not None
            and match.index not in partner
            and match.ir.type.spec_text == f.ir.type.spec_text
        ):
            partner[match.index] = (f, PairedBy.TAG)
            taken_old.add(f.index)

    old_untagged, new_untagged = _untagged(old.fields), _untagged(new.fields)
    for position, f in enumerate(old_untagged):
        if f.index in taken_old or position >= len(new_untagged):
            continue
        match = new_untagged[position]
        if match.index not in partner and match.ir.versions.overlaps(f.ir.versions):
            partner[match.index] = (f, PairedBy.POSITION)
            taken_old.add(f.index)

    pairs: list[FieldPair] = []
    for f in new.fields:
        if f.index in partner:
            old_field, how = partner[f.index]
            pairs.append(FieldPair(old_field, f, how))
        else:
            pairs.append(FieldPair(None, f, PairedBy.NOTHING))
    pairs.extend(
        FieldPair(f, None, PairedBy.NOTHING) for f in old.fields if f.index not in taken_old
    )
    return pairs
