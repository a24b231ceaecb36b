"""Fuzzing the spec reader, the validator and the lint: bad input is a spec error, never a crash.

The reader and validator (``specfile`` -> ``spec`` -> ``ir``) may only report
:class:`~codegen.errors.SpecErrors`; the lint may only report findings (exit 0 or 1) or
invalid input (:class:`~codegen.lint.InvalidSpecs`, exit 2); a spec the validator accepts
renders into Python that compiles. Inputs are shipped specs with their text or their
structure mutated, spec-like structures built from the spec keys, and arbitrary JSON. The
number of examples comes from the profiles in ``conftest.py``.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from codegen.emit import render_message, template_environment
from codegen.errors import ProblemLog, SpecErrors
from codegen.ir_build import build_messages
from codegen.lint import InvalidSpecs, lint, set_from_texts
from codegen.lint.command import lint_command
from codegen.lint.report import RENDERERS
from codegen.spec import spec_from_source
from codegen.specfile import blank_comments

pytestmark = pytest.mark.fuzz

ROOT = Path(__file__).resolve().parents[2]
SEED_FILES = [
    ROOT / "message_specs" / "consumer_offsets" / "OffsetCommitValue.json",
    ROOT / "message_specs" / "consumer_offsets" / "GroupMetadataValue.json",
    ROOT / "message_specs" / "consumer_offsets" / "ShareGroupCurrentMemberAssignmentValue.json",
    ROOT / "message_specs" / "kraft_control" / "LeaderChangeMessage.json",
    ROOT / "tests" / "cases" / "tagged_demo" / "TaggedDemo.json",
]
SEEDS = {path.name: path.read_text(encoding="utf-8") for path in SEED_FILES}

TEMPLATES = template_environment()
fuzz_settings = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])

# --------------------------------------------------------------------------- strategies

# Characters that matter to JSON with comments, plus some that matter to names and files.
PUNCTUATION = '{}[]":,/*\\\n 0-+.eE'
chunks = st.text(alphabet=st.sampled_from(list(PUNCTUATION)), max_size=6) | st.text(max_size=6)
chunks |= st.sampled_from(
    ["//", "/*", "*/", "\\u", "\\ud800", "null", "true", "1e999", "9" * 5000, "[" * 80]
)

versions: st.SearchStrategy[Any] = st.one_of(
    st.sampled_from(["0", "0+", "1+", "2+", "0-3", "1-2", "3-1", "none", "", "x", "-1"]),
    st.integers(-2, 40),
    st.just("99999999999999999999"),
)
names = st.sampled_from(
    ["A", "Topic", "TopicId", "TopicID", "Item", "Demo", "None", "True", "ClassVar", "Encode"]
)
names |= st.text(max_size=8) | st.just("A" + "b" * 150)
types = st.sampled_from(
    [
        "int8", "int16", "int32", "int64", "uint16", "uint32", "float64", "bool", "uuid",
        "string", "bytes", "records", "[]int32", "[]string", "[]Item", "Item", "[]", "[][]int32",
        "Missing", "[]records", "None",
    ]
)  # fmt: skip
types |= st.text(max_size=6)
flags = st.booleans() | st.sampled_from(["true", "false", "yes", 1])
defaults = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=6)
defaults |= st.sampled_from(["", "null", "0x10", "-0x80", "010", "AAAAAAAAAAAAAAAAAAAAAA", "nan"])
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=6),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner),
    max_leaves=8,
)


def _field(children: st.SearchStrategy[Any] | None) -> st.SearchStrategy[dict[str, Any]]:
    nested = {} if children is None else {"fields": st.lists(children, max_size=3)}
    return st.fixed_dictionaries(
        {"name": names, "type": types},
        optional={
            **nested,
            "versions": versions,
            "nullableVersions": versions,
            "taggedVersions": versions,
            "tag": st.integers(-2, 4) | st.sampled_from(["0", "-1", "x"]),
            "default": defaults,
            "mapKey": flags,
            "ignorable": flags,
            "zeroCopy": flags,
            "flexibleVersions": versions,
            "entityType": st.sampled_from(["topicName", "brokerId", "groupId", "unknown", "x"]),
            "about": st.text(max_size=10),
            "bogus": json_values,
        },
    )


fields = st.recursive(_field(None), _field, max_leaves=6)
structs = st.fixed_dictionaries(
    {"name": names, "versions": versions, "fields": st.lists(fields, max_size=3)}
)
spec_like = st.fixed_dictionaries(
    {
        "name": names,
        "type": st.sampled_from(
            ["data", "request", "response", "header", "metadata", "coordinator-key", "x"]
        ),
        "validVersions": versions,
    },
    optional={
        "apiKey": st.integers(-1, 40000),
        "flexibleVersions": versions,
        "deprecatedVersions": versions,
        "latestVersionUnstable": flags,
        "listeners": st.sampled_from(["broker", ["controller"], ["nope"]]),
        "fields": st.lists(fields, max_size=4),
        "commonStructs": st.lists(structs, max_size=2),
    },
)


@st.composite
def mutated_text(draw: st.DrawFn, text: str) -> str:
    """``text`` with a few slices deleted, replaced, duplicated or inserted."""
    for _ in range(draw(st.integers(1, 4))):
        start = draw(st.integers(0, len(text)))
        end = draw(st.integers(start, min(len(text), start + 12)))
        op = draw(st.sampled_from(["delete", "replace", "insert", "duplicate"]))
        if op == "delete":
            text = text[:start] + text[end:]
        elif op == "replace":
            text = text[:start] + draw(chunks) + text[end:]
        elif op == "insert":
            text = text[:start] + draw(chunks) + text[start:]
        else:
            text = text[:end] + text[start:end] + text[end:]
    return text


def _containers(value: Any, found: list[Any]) -> list[Any]:
    if isinstance(value, (dict, list)):
        found.append(value)
        for child in value.values() if isinstance(value, dict) else value:
            _containers(child, found)
    return found


SPEC_KEYS = {
    "name": names,
    "type": types,
    "versions": versions,
    "validVersions": versions,
    "flexibleVersions": versions,
    "nullableVersions": versions,
    "taggedVersions": versions,
    "tag": st.integers(-1, 4),
    "default": defaults,
    "mapKey": flags,
    "ignorable": flags,
    "entityType": st.sampled_from(["topicName", "brokerId", "unknown"]),
    "fields": st.lists(fields, max_size=2),
}


# Values a spec author would plausibly write: most mutated specs stay valid, so the lint
# compares them instead of stopping at a spec error.
PLAUSIBLE_KEYS = {
    "name": st.sampled_from(["Topic", "TopicName", "Partitions", "Extra", "MemberId"]),
    "type": st.sampled_from(["int32", "int64", "string", "bytes", "uuid", "bool", "[]int32"]),
    "versions": st.sampled_from(["0+", "1+", "2+", "3+"]),
    "validVersions": st.sampled_from(["0-3", "0-4", "0-5", "1-4"]),
    "flexibleVersions": st.sampled_from(["none", "0+", "3+", "4+"]),
    "nullableVersions": st.sampled_from(["0+", "3+"]),
    "taggedVersions": st.sampled_from(["3+", "4+"]),
    "tag": st.integers(0, 3),
    "default": st.sampled_from(["", "0", "-1", "null", "true"]),
    "ignorable": st.booleans(),
    "about": st.text(max_size=5),
}


@st.composite
def mutated_value(
    draw: st.DrawFn, value: Any, keys: dict[str, st.SearchStrategy[Any]] = SPEC_KEYS
) -> Any:
    """A deep copy of a spec value with a few keys set, removed or list items shuffled."""
    value = json.loads(json.dumps(value))
    for _ in range(draw(st.integers(1, 3))):
        target = draw(st.sampled_from(_containers(value, [])))
        if isinstance(target, dict):
            key = draw(st.sampled_from(sorted({*target, *keys})))
            if key in target and draw(st.booleans()):
                del target[key]
            else:
                target[key] = draw(keys.get(key, json_values))
        elif target:
            i = draw(st.integers(0, len(target) - 1))
            op = draw(st.sampled_from(["delete", "duplicate", "move"]))
            item = target.pop(i) if op != "duplicate" else target[i]
            if op != "delete":
                target.insert(draw(st.integers(0, len(target))), item)
    return value


seed_names = st.sampled_from(sorted(SEEDS))


# --------------------------------------------------------------------------- reader + validator


def check_spec_text(text: str) -> None:
    """Read, check and build one spec as validate does (a spec with schema problems is still
    checked by the semantic rules); only SpecErrors may come out."""
    log = ProblemLog()
    spec = spec_from_source(text, Path("Fuzz.json"), log, lenient=True)
    build_messages([] if spec is None else [spec], log)
    try:
        log.raise_if_any()
    except SpecErrors as exc:
        assert exc.problems, "a spec error lists its problems"
        for problem in exc.problems:
            assert str(problem).startswith(f"Fuzz.json:{problem.line}: $")
        event("spec errors")
    else:
        event("valid")


@fuzz_settings
@given(data=st.data(), name=seed_names)
def test_reader_on_mutated_spec_text(data: st.DataObject, name: str) -> None:
    check_spec_text(data.draw(mutated_text(SEEDS[name])))


@fuzz_settings
@given(data=st.data(), name=seed_names, indent=st.none() | st.integers(0, 2))
def test_reader_on_mutated_spec_structure(
    data: st.DataObject, name: str, indent: int | None
) -> None:
    value = json.loads(blank_comments(SEEDS[name]))
    check_spec_text(json.dumps(data.draw(mutated_value(value)), indent=indent))


@fuzz_settings
@given(spec=spec_like, indent=st.none() | st.integers(0, 2))
def test_reader_on_spec_like_structures(spec: dict[str, Any], indent: int | None) -> None:
    check_spec_text(json.dumps(spec, indent=indent))


@fuzz_settings
@given(value=json_values, depth=st.integers(0, 100))
def test_reader_on_arbitrary_json(value: Any, depth: int) -> None:
    check_spec_text("[" * depth + json.dumps(value) + "]" * depth)


@fuzz_settings
@given(data=st.data(), name=seed_names)
def test_accepted_specs_render_to_python_that_compiles(data: st.DataObject, name: str) -> None:
    """What the validator accepts, the templates turn into valid Python (before ruff)."""
    seed = json.loads(blank_comments(SEEDS[name]))
    text = data.draw(
        mutated_text(SEEDS[name])
        | st.builds(json.dumps, mutated_value(seed, PLAUSIBLE_KEYS), indent=st.just(2))
    )
    log = ProblemLog()
    spec = spec_from_source(text, Path("fuzz") / name, log)
    messages = build_messages([] if spec is None else [spec], log)
    if log.problems or not messages:
        event("not accepted")
        return
    event("rendered")
    for message in messages:
        compile(render_message(TEMPLATES, message, name), name, "exec")


# --------------------------------------------------------------------------- lint


def check_lint(old: dict[str, str], new: dict[str, str]) -> None:
    """Lint two in-memory spec sets: findings in every report format, or invalid input."""
    try:
        old_set, new_set = set_from_texts("old", old), set_from_texts("new", new)
    except InvalidSpecs as exc:
        assert exc.problems
        event("exit 2")
        return
    result = lint(old_set, new_set)
    for render in RENDERERS.values():
        assert isinstance(render(result, True), str)
    assert result.exit_code in (0, 1)
    event(f"exit {result.exit_code}")


@fuzz_settings
@given(data=st.data(), name=seed_names)
def test_lint_on_mutated_spec_structure(data: st.DataObject, name: str) -> None:
    old = json.loads(blank_comments(SEEDS[name]))
    new = data.draw(mutated_value(old, data.draw(st.sampled_from([SPEC_KEYS, PLAUSIBLE_KEYS]))))
    texts = {name: json.dumps(old, indent=2)}, {name: json.dumps(new, indent=2)}
    if data.draw(st.booleans()):
        texts = texts[1], texts[0]
    check_lint(*texts)


@fuzz_settings
@given(data=st.data(), name=seed_names)
def test_lint_command_on_mutated_spec_text(data: st.DataObject, name: str) -> None:
    new_text = data.draw(mutated_text(SEEDS[name]))
    with tempfile.TemporaryDirectory() as tmp:
        for side, text in (("old", SEEDS[name]), ("new", new_text)):
            (Path(tmp) / side).mkdir()
            (Path(tmp) / side / name).write_text(text, encoding="utf-8", errors="surrogatepass")
        result = CliRunner().invoke(lint_command, [f"{tmp}/old", f"{tmp}/new"])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    assert result.exit_code in (0, 1, 2), result.output
    event(f"exit {result.exit_code}")
