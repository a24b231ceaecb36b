"""Every lint rule: its id, category, severity, what it catches and what to do instead.

The ids are stable: they are what ``--allow``, ``--select``, ``--ignore``, the
``[tool.kafka-specgen.lint]`` table and inline ``// lint: allow RULE -- reason`` comments
name, and what SARIF and JSON output carry. ``docs/lint.md`` documents the same rules with
examples; ``python -m codegen lint --list-rules`` lists them.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass


class Severity(enum.Enum):
    """How bad a finding is; by default only ``BREAKING`` findings make the lint fail."""

    BREAKING = "breaking"
    WARNING = "warning"
    INFO = "info"

    @property
    def rank(self) -> int:
        """Higher is worse: ``--fail-on`` fails on findings of this rank or higher."""
        return {Severity.BREAKING: 2, Severity.WARNING: 1, Severity.INFO: 0}[self]


class Category(enum.Enum):
    """What a rule protects (like buf's WIRE / WIRE_JSON / FILE); ``--select``, ``--ignore`` and
    ``fail-categories`` accept a category for its rules."""

    WIRE = "wire"  # bytes on the wire or stored data that readers no longer read as written
    JSON = "json"  # the JSON form (JsonConverter keys and values: renames, defaults)
    CODE = "code"  # the generated Python API (class, attribute and collection names)
    STYLE = "style"  # what nothing generated depends on: entityType, suppression comments
    INPUT = "input"  # the input cannot be compared at all; never selectable (exit 2)


@dataclass(frozen=True, slots=True)
class Rule:
    id: str
    severity: Severity
    category: Category
    summary: str
    instead: str


_B, _W, _I = Severity.BREAKING, Severity.WARNING, Severity.INFO
_WIRE, _JSON, _CODE, _STYLE = Category.WIRE, Category.JSON, Category.CODE, Category.STYLE

_ALL = (
    # ------------------------------------------------------------------ spec level
    Rule(
        "spec-removed",
        _B,
        _WIRE,
        "A spec in the old set is missing from the new set.",
        "Keep the spec; retire its versions over releases instead of deleting it.",
    ),
    Rule(
        "spec-added",
        _I,
        _WIRE,
        "A spec in the new set has no counterpart in the old set.",
        "Nothing to do; the finding lists new specs for review.",
    ),
    Rule(
        "spec-renamed",
        _W,
        _CODE,
        "Two compared spec files have different names.",
        "Keep the name: it is the generated class and module name.",
    ),
    Rule(
        "spec-type-changed",
        _B,
        _WIRE,
        "The spec's type changed (for example request to response).",
        "Keep the type; add a new spec for a new kind of message.",
    ),
    Rule(
        "api-key-changed",
        _B,
        _WIRE,
        "The apiKey (or coordinator record type id) changed.",
        "Keep the apiKey: it is on the wire and identifies the message.",
    ),
    Rule(
        "flexible-versions-changed",
        _B,
        _WIRE,
        "A version that exists in both specs changed between flexible and non-flexible.",
        "Keep flexibleVersions as it was for existing versions; only new versions may differ.",
    ),
    Rule(
        "highest-version-lowered",
        _B,
        _WIRE,
        "The highest valid version was lowered.",
        "Keep every version that writers may already use.",
    ),
    Rule(
        "lowest-version-lowered",
        _W,
        _WIRE,
        "Versions below the lowest are brought back, and nothing (git history or lock) records "
        "the layout they had.",
        "Check that they have the layout they had; lint with the git history or commit the "
        "lock so that the lint compares them.",
    ),
    Rule(
        "versions-removed",
        _B,
        _WIRE,
        "The lowest valid version was raised, removing versions.",
        "Keep the versions until no writer or stored data uses them, then allow this rule.",
    ),
    Rule(
        "unstable-version-changed",
        _I,
        _WIRE,
        "A version marked latestVersionUnstable (not yet released) changed or went away; "
        "Kafka allows that, so it is a note.",
        "Nothing to do; once the version is stable, its changes are judged as usual.",
    ),
    Rule(
        "version-layout-changed",
        _B,
        _WIRE,
        "The bytes of an existing version changed in a way no field rule names, or a version "
        "brought back has another layout than the one it had (git history or lock).",
        "Keep the layout of every version readers may know; change it in a new version.",
    ),
    # ------------------------------------------------------------------ fields
    Rule(
        "field-type-changed",
        _B,
        _WIRE,
        "A field's type changed in versions both specs have.",
        "Keep the type; add a new field in a new version instead.",
    ),
    Rule(
        "tagged-field-type-changed",
        _B,
        _WIRE,
        "A tagged field's type changed.",
        "Never change a tag's type; use a new tag for the new type.",
    ),
    Rule(
        "field-versions-changed",
        _B,
        _WIRE,
        "A non-tagged field's versions changed inside versions both specs have.",
        "Only extend a field into new versions, or end it before a new version.",
    ),
    Rule(
        "field-added-to-existing-version",
        _B,
        _WIRE,
        "A non-tagged field was added to a version that already exists.",
        "Add it in a new version, or as a tagged field in a flexible version.",
    ),
    Rule(
        "field-removed-from-existing-version",
        _B,
        _WIRE,
        "A non-tagged field was removed from a version that still exists.",
        'End the field before a new version (versions "0-N") instead of deleting it.',
    ),
    Rule(
        "field-tagging-changed",
        _B,
        _WIRE,
        "A field changed between tagged and non-tagged in a version both specs have.",
        "Only make a field tagged from a new version on.",
    ),
    Rule(
        "fields-reordered",
        _B,
        _WIRE,
        "Non-tagged fields present in existing versions were reordered.",
        "Keep the order: it is the wire order.",
    ),
    Rule(
        "field-renamed",
        _B,
        _JSON,
        "Fields of existing versions have other names with the same bytes (paired by their "
        "place in the layout, or by tag): JSON keys and attributes change.",
        "Keep the names; if no one uses the JSON form or the API, allow this rule with a reason.",
    ),
    Rule(
        "struct-renamed",
        _W,
        _CODE,
        "A struct type was renamed; the generated class name changes.",
        "Keep the struct name.",
    ),
    Rule(
        "nullability-narrowed",
        _B,
        _WIRE,
        "A field is no longer nullable in a version both specs have.",
        "Keep it nullable in existing versions; stop being nullable only in a new version.",
    ),
    Rule(
        "nullability-widened",
        _B,
        _WIRE,
        "A field became nullable in an existing version; old readers reject the null.",
        "Make it nullable only from a new version on.",
    ),
    Rule(
        "default-changed",
        _B,
        _JSON,
        "A non-tagged field's default changed: what readers fill in for versions without the "
        "field (the bytes stay the same).",
        "Keep the default: readers of versions without the field fill it in.",
    ),
    Rule(
        "tagged-default-changed",
        _B,
        _WIRE,
        "A tagged field's default changed; omitted values now mean something else.",
        "Keep the default: a tagged field equal to its default is not written at all.",
    ),
    Rule(
        "tag-changed",
        _B,
        _WIRE,
        "A tagged field's tag number changed.",
        "Keep the tag number; it is on the wire.",
    ),
    Rule(
        "tag-reused",
        _B,
        _WIRE,
        "A tag number now belongs to another field, also when the tag was retired in an "
        "earlier commit (the lock and the git history remember it).",
        "Never reuse a tag; take the next free tag number.",
    ),
    Rule(
        "tagged-field-removed",
        _W,
        _WIRE,
        "A tagged field was removed; its tag must never be used again.",
        "Keep the field and stop setting it (a tagged field at its default is not written): "
        "tags stay contiguous, so a deleted tag's number is the next one a field takes.",
    ),
    Rule(
        "field-flexible-versions-changed",
        _B,
        _WIRE,
        "A field's own flexibleVersions override changed in existing versions.",
        "Keep the override; its encoding is on the wire.",
    ),
    Rule(
        "ignorable-changed",
        _W,
        _CODE,
        "A field's ignorable flag changed.",
        "Check writers: ignorable decides whether unsupported values are dropped or rejected.",
    ),
    Rule(
        "map-key-changed",
        _W,
        _CODE,
        "A field's mapKey flag changed (API and equality change).",
        "Keep mapKey unless every user of the generated API is updated.",
    ),
    Rule(
        "entity-type-changed",
        _W,
        _STYLE,
        "A field's entityType changed.",
        "Keep entityType; tools and ACL logic depend on it.",
    ),
    # ------------------------------------------------------------------ coordinator records
    Rule(
        "coordinator-key-flexible",
        _B,
        _WIRE,
        "A coordinator record key became flexible.",
        "Keys are never flexible: their bytes identify the record for compaction.",
    ),
    Rule(
        "coordinator-key-changed",
        _B,
        _WIRE,
        "A coordinator record key gained, lost or changed fields.",
        "Add a new record type with a new key instead.",
    ),
    Rule(
        "coordinator-value-not-flexible",
        _B,
        _WIRE,
        "Fields were added to a coordinator value that has no flexible version yet.",
        "First release a flexible version with the same fields, then add tagged fields.",
    ),
    Rule(
        "coordinator-value-untagged-change",
        _B,
        _WIRE,
        "A new coordinator value version changes non-tagged fields; KIP-915 readers parse "
        "future versions as their highest known one and misread it.",
        "Add only tagged fields to coordinator values.",
    ),
    Rule(
        "coordinator-value-made-flexible",
        _I,
        _WIRE,
        "A coordinator value gained its first flexible version; readers before KIP-915 "
        "cannot read it.",
        "Keep writing the highest non-flexible version until a tagged field is needed.",
    ),
    Rule(
        "record-type-added",
        _I,
        _WIRE,
        "A new coordinator record type; readers older than KIP-915 fail on it and newer ones "
        "skip it, so a downgrade loses these records.",
        "Write the new records only once downgrading past this release is ruled out.",
    ),
    Rule(
        "record-type-removed",
        _B,
        _WIRE,
        "A coordinator record type is gone; stored records of that type cannot be read.",
        "Keep the key and value specs while stored data may contain the type.",
    ),
    Rule(
        "coordinator-model-changed",
        _I,
        _WIRE,
        "A record spec moved between the data model (type id = key version) and the "
        "coordinator-key/coordinator-value model (type id = apiKey).",
        "Nothing to do when the wire layout is the same, as checked.",
    ),
    # ------------------------------------------------------------------ memory of retired uses
    Rule(
        "field-name-reused",
        _B,
        _JSON,
        "A field takes the name of a retired field of its struct with another type.",
        "Give the new field another name, or bring the old field back with its type.",
    ),
    Rule(
        "api-key-reused",
        _B,
        _WIRE,
        "A spec takes a retired apiKey that another message had.",
        "Never reuse an apiKey; take one no spec has ever had.",
    ),
    Rule(
        "record-type-reused",
        _B,
        _WIRE,
        "A coordinator record type id that a retired record key had now belongs to another key.",
        "Never reuse a record type id; take one no record has ever had.",
    ),
    Rule(
        "lock-outdated",
        _B,
        _WIRE,
        "The lock file misses uses the specs have, or lost uses the old lock held.",
        "Run `kafka-specgen lint --write-lock PATH` and commit the lock with the specs.",
    ),
    # ------------------------------------------------------------------ suppressions
    Rule(
        "suppression-without-reason",
        _W,
        _STYLE,
        "An inline suppression gives no reason, so it is ignored.",
        "Write `// lint: allow RULE -- why this is fine`.",
    ),
    Rule(
        "suppression-unknown-rule",
        _W,
        _STYLE,
        "An inline suppression names a rule that does not exist.",
        "Use a rule id from `python -m codegen lint --list-rules` (or docs/lint.md).",
    ),
)

RULES: dict[str, Rule] = {rule.id: rule for rule in _ALL}

# Not rules one can select, ignore or allow: the reasons a comparison cannot run. They show
# up as findings only so that JSON, GitHub and SARIF output carry them (exit status 2).
INPUT_RULES: dict[str, Rule] = {
    rule.id: rule
    for rule in (
        Rule(
            "invalid-spec",
            _B,
            Category.INPUT,
            "A spec does not load or build, or the specs cannot be read.",
            "Fix the spec error; the message says where and what.",
        ),
        Rule(
            "different-messages",
            _B,
            Category.INPUT,
            "The two compared spec files are different messages (name and apiKey or type differ).",
            "Compare two versions of the same spec, or two folders (specs are paired by name).",
        ),
    )
}

CATEGORIES = tuple(c.value for c in Category if c is not Category.INPUT)

# Which categories fail the lint (``fail-categories``, ``--fail-categories``): a preset, nested
# like buf's WIRE, WIRE_JSON and FILE, or categories named one by one.
PRESETS: dict[str, tuple[Category, ...]] = {
    "wire": (Category.WIRE,),
    "wire-json": (Category.WIRE, Category.JSON),
    "all": (Category.WIRE, Category.JSON, Category.CODE, Category.STYLE),
}
DEFAULT_FAIL_CATEGORIES = frozenset(PRESETS["wire"])


def categories_named(names: tuple[str, ...]) -> frozenset[Category] | str:
    """The categories that presets and category names stand for, or the first unknown name."""
    found: set[Category] = set()
    for name in names:
        if name in PRESETS:
            found.update(PRESETS[name])
        elif name in CATEGORIES:
            found.add(Category(name))
        else:
            return name
    return frozenset(found)


def rule(rule_id: str) -> Rule:
    return RULES[rule_id] if rule_id in RULES else INPUT_RULES[rule_id]


def rules_matching(name: str) -> list[str]:
    """The rule ids a name selects: one rule id, or every rule of a category."""
    if name in RULES:
        return [name]
    return [r.id for r in RULES.values() if r.category.value == name and name in CATEGORIES]
