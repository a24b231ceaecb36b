"""One test per spec rule: the exact ``path:line: $.json.path: message`` a user sees."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from codegen.emit import load_messages, write_package
from codegen.errors import SpecErrors
from codegen.naming import MAX_NAME_LENGTH
from codegen.specfile import MAX_DEPTH, parse_spec_text


def field(name: str = "A", type_: str = "int32", **extra: Any) -> dict[str, Any]:
    return {"name": name, "type": type_, "versions": "0+", **extra}


def spec(*fields: dict[str, Any], **top: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "name": "Demo",
        "type": "data",
        "validVersions": "0-3",
        "flexibleVersions": "2+",
        "fields": list(fields),
    }
    base.update(top)
    return base


def problems(tmp_path: Path, *specs: dict[str, Any] | str) -> list[str]:
    """Write each spec (pretty-printed, one key per line) and return every problem found."""
    for i, s in enumerate(specs):
        text = s if isinstance(s, str) else json.dumps(s, indent=2)
        (tmp_path / f"Spec{i}.json").write_text(text)
    try:
        load_messages([tmp_path])
    except SpecErrors as exc:
        return [str(p).replace(str(tmp_path) + "/", "") for p in exc.problems]
    return []


def one(tmp_path: Path, *specs: dict[str, Any] | str) -> str:
    found = problems(tmp_path, *specs)
    assert len(found) == 1, found
    return found[0]


def after_path(problem: str) -> str:
    """The ``$.json.path: message`` part."""
    return problem.split(": ", 1)[1]


def test_valid_spec_has_no_problems(tmp_path: Path) -> None:
    assert problems(tmp_path, spec(field())) == []


def test_line_numbers_survive_comments(tmp_path: Path) -> None:
    text = (
        '// header\n/* block\n comment */\n{\n  "name": "Demo",\n  "type": "data",\n'
        '  "validVersions": "0",\n  "flexibleVersions": "none",\n  "fields": [\n'
        '    { "name": "A", "type": "int99", "versions": "0+" }\n  ]\n}\n'
    )
    assert one(tmp_path, text) == "Spec0.json:10: $.fields[0].type: unknown type 'int99'"


def test_syntax_error_reports_line_and_column(tmp_path: Path) -> None:
    assert one(tmp_path, '{\n  "name": "Demo",\n  oops\n}') == (
        "Spec0.json:3: $: invalid JSON at column 3: expected a quoted key, found 'o'"
    )


MISSING_BRACE = """\
{
  "name": "Demo",
  "type": "data",
  "validVersions": "0",
  "flexibleVersions": "none",
  "fields": [
    { "name": "A", "type": "int32", "versions": "0+"
    { "name": "B", "type": "int32", "versions": "0+" }
  ]
}
"""


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # The fault is where the } belongs (after "0+" on line 7), not where the parser noticed.
        (
            MISSING_BRACE,
            "Spec0.json:7: $: invalid JSON at column 53: expected ',' or '}' after the value of "
            "'versions', found '{'",
        ),
        (
            MISSING_BRACE.replace('"0+"\n    {', '"0+" },\n    {').replace("\n  ]\n}\n", "\n}\n"),
            "Spec0.json:8: $: invalid JSON at column 55: expected ',' or ']' after element 1 of "
            "the array, found '}'",
        ),
        (
            '{\n  "name": "Demo",\n  "type" "data"\n}',
            "Spec0.json:3: $: invalid JSON at column 9: expected ':' after the key 'type', found '\"'",
        ),
        (
            '{\n  "name": "Demo\n}',
            "Spec0.json:2: $.name: invalid JSON at column 16: a control character (a newline, a "
            "tab) inside a string; write it as \\n or \\t",
        ),
        (
            '{\n  "name": "Demo",\n  "type": "data"',
            "Spec0.json:3: $: invalid JSON at column 17: expected ',' or '}' after the value of "
            "'type', found the end of the file",
        ),
        (
            '{\n  "name": "Demo",\n  /* not closed\n}',
            "Spec0.json:3: $: invalid JSON at column 3: unterminated /* comment",
        ),
    ],
    ids=["missing }", "missing ]", "missing :", "newline in a string", "end of file", "comment"],
)
def test_syntax_errors_point_at_the_fault(tmp_path: Path, text: str, expected: str) -> None:
    assert one(tmp_path, text) == expected


def test_unknown_key(tmp_path: Path) -> None:
    assert after_path(one(tmp_path, spec(field(bogus=1)))) == (
        "$.fields[0]: unknown key: 'bogus' was unexpected"
    )


def test_all_problems_reported_at_once(tmp_path: Path) -> None:
    found = problems(
        tmp_path,
        spec(field("A", "int99"), field("B", "uuid", nullableVersions="0+")),
        spec(field(tag=-1, taggedVersions="2+"), name="Other"),
    )
    assert len(found) == 3, found


RULES: list[tuple[str, dict[str, Any], str]] = [
    (
        "open-ended validVersions",
        spec(field(), validVersions="0+"),
        "$.validVersions: validVersions 0+ is open-ended; a message must name its highest version",
    ),
    (
        "missing fields",
        {k: v for k, v in spec(field()).items() if k != "fields"},
        "$: fields is missing; a message with versions needs a list of fields",
    ),
    (
        "missing flexibleVersions",
        {k: v for k, v in spec(field()).items() if k != "flexibleVersions"},
        "$: flexibleVersions is missing; use 0+ for new messages, or none",
    ),
    (
        "closed flexibleVersions",
        spec(field(), flexibleVersions="1-2"),
        "$.flexibleVersions: flexibleVersions 1-2 is not open-ended; use none or a range ending in +",
    ),
    (
        "latestVersionUnstable on data",
        spec(field(), latestVersionUnstable=True),
        "$.latestVersionUnstable: latestVersionUnstable is only valid for requests",
    ),
    (
        "listeners on data",
        spec(field(), listeners=["broker"]),
        "$.listeners: listeners are only valid for requests",
    ),
    ("request without apiKey", spec(field(), type="request"), "$: a request spec needs an apiKey"),
    (
        "coordinator-key versions",
        spec(field(), type="coordinator-key", apiKey=1, flexibleVersions="none"),
        "$.validVersions: a coordinator-key must have validVersions 0",
    ),
    (
        "coordinator-key flexible",
        spec(field(), type="coordinator-key", apiKey=1, validVersions="0", flexibleVersions="0+"),
        "$.flexibleVersions: a coordinator-key must have flexibleVersions none",
    ),
    ("unknown type", spec(field("A", "int99")), "$.fields[0].type: unknown type 'int99'"),
    (
        "array of arrays",
        spec(field("A", "[][]int32")),
        "$.fields[0].type: cannot parse [][]int32: arrays of arrays are not allowed",
    ),
    (
        "array without element",
        spec(field("A", "[]")),
        "$.fields[0].type: cannot parse the array type []: no element type",
    ),
    (
        "duplicate field",
        spec(field("A"), field("A")),
        "$.fields[1].name: in Demo, field A has a duplicate name; field names must be unique",
    ),
    (
        "python name collision",
        spec(field("TopicId"), field("TopicID")),
        "$.fields[1].name: in Demo, fields TopicId and TopicID both become the Python attribute topic_id",
    ),
    (
        "reserved python name",
        spec(field("Encode")),
        "$.fields[0].name: field Encode would become the attribute encode, which generated classes use for their own API; rename the field",
    ),
    (
        "no versions",
        spec({"name": "A", "type": "int32"}),
        "$.fields[0]: field A has no versions; give versions (or taggedVersions)",
    ),
    (
        "field outside message",
        spec(field("A", versions="5+")),
        "$.fields[0].versions: field A has versions 5+, but its struct exists only in versions 0-3",
    ),
    (
        "nullable int",
        spec(field("A", nullableVersions="0+")),
        "$.fields[0].nullableVersions: type int32 cannot be nullable",
    ),
    (
        "nullable uuid",
        spec(field("A", "uuid", nullableVersions="0+")),
        "$.fields[0].nullableVersions: type uuid cannot be nullable (Kafka's UUID type has no null)",
    ),
    (
        "negative tag",
        spec(field(tag=-1, taggedVersions="2+")),
        "$.fields[0].tag: tags cannot be negative",
    ),
    (
        "tag without taggedVersions",
        spec(field(tag=0)),
        "$.fields[0].tag: a tag is given, so taggedVersions must be given as well",
    ),
    (
        "taggedVersions without tag",
        spec(field(taggedVersions="2+")),
        "$.fields[0].taggedVersions: taggedVersions is given, but no tag",
    ),
    (
        "closed taggedVersions",
        spec(field(tag=0, taggedVersions="2-3")),
        "$.fields[0].taggedVersions: taggedVersions 2-3 is not open-ended; use none or a range ending in +",
    ),
    (
        "taggedVersions outside versions",
        spec(field(versions="3+", tag=0, taggedVersions="2+")),
        "$.fields[0].taggedVersions: taggedVersions 2+ must be a subset of versions 3+",
    ),
    (
        "taggedVersions outside flexible",
        spec(field(tag=0, taggedVersions="1+")),
        "$.fields[0].taggedVersions: taggedVersions 1+ must be inside the message's flexibleVersions 2+",
    ),
    (
        "tagged map key",
        spec(
            field("Items", "[]Item", fields=[field("K", mapKey=True, tag=0, taggedVersions="2+")])
        ),
        "$.fields[0].fields[0].mapKey: a tagged field cannot be a map key",
    ),
    (
        "tagged records",
        spec(field("R", "records", tag=0, taggedVersions="2+", nullableVersions="0+")),
        "$.fields[0].tag: a records field cannot be tagged",
    ),
    (
        "partly nullable tagged",
        spec(field("S", "string", tag=0, taggedVersions="2+", nullableVersions="3+")),
        "$.fields[0].nullableVersions: nullableVersions 3+ covers only part of taggedVersions 2+; either all tagged versions are nullable or none",
    ),
    (
        "duplicate tag",
        spec(field("A", tag=0, taggedVersions="2+"), field("B", tag=0, taggedVersions="2+")),
        "$.fields[1].tag: in Demo, field B has a duplicate tag 0 (also used by A); tags must be unique",
    ),
    (
        "tags not contiguous",
        spec(field("A", tag=0, taggedVersions="2+"), field("B", tag=2, taggedVersions="2+")),
        "$.fields[1].tag: in Demo, the tags are not contiguous: use tag 1 before any higher tag",
    ),
    (
        "top-level mapKey",
        spec(field(mapKey=True)),
        "$.fields[0].mapKey: mapKey cannot be set on top-level fields",
    ),
    (
        "flexibleVersions override on int",
        spec(field(flexibleVersions="none")),
        "$.fields[0].flexibleVersions: only string and bytes fields can override flexibleVersions",
    ),
    (
        "flexibleVersions override outside",
        spec(field("S", "string", flexibleVersions="1+")),
        "$.fields[0].flexibleVersions: flexibleVersions 1+ must be inside the message's flexibleVersions 2+",
    ),
    (
        "zeroCopy on string",
        spec(field("S", "string", zeroCopy=True)),
        "$.fields[0].zeroCopy: only bytes fields can use zeroCopy",
    ),
    (
        "entityType mismatch",
        spec(field("A", entityType="topicName")),
        "$.fields[0].entityType: entityType topicName needs type string, not int32",
    ),
    (
        "bad int default",
        spec(field(default="x")),
        "$.fields[0].default: invalid default 'x' for int32",
    ),
    (
        "int default out of range",
        spec(field("A", "int8", default="300")),
        "$.fields[0].default: invalid default '300' for int8: out of range -128..127",
    ),
    (
        "leading zero default",
        spec(field(default="010")),
        "$.fields[0].default: invalid default '010' for int32: leading zeros are ambiguous",
    ),
    (
        "bool default",
        spec(field("A", "bool", default="yes")),
        "$.fields[0].default: invalid default 'yes' for bool: use true or false",
    ),
    (
        "uuid default",
        spec(field("A", "uuid", default="abc")),
        "$.fields[0].default: invalid default 'abc' for uuid: expected 22 base64url characters",
    ),
    (
        "float default",
        spec(field("A", "float64", default="fast")),
        "$.fields[0].default: invalid default 'fast' for float64",
    ),
    (
        "bytes default",
        spec(field("A", "bytes", default="00")),
        "$.fields[0].default: the only valid default for a bytes field is empty or null",
    ),
    (
        "array default",
        spec(field("A", "[]int32", default="1")),
        "$.fields[0].default: the only valid default for a array field is the empty array or null",
    ),
    (
        "null default not nullable",
        spec(field("S", "string", default="null", nullableVersions="1+")),
        "$.fields[0].default: null cannot be the default of S: it is not nullable in all of its versions 0+",
    ),
    (
        "fields on int",
        spec(field(fields=[field("B")])),
        "$.fields[0].fields: field A of type int32 cannot have fields",
    ),
    (
        "unknown struct",
        spec(field("A", "Missing")),
        "$.fields[0].type: no struct named Missing: define its fields inline or in commonStructs",
    ),
    (
        "inline struct twice",
        spec(field("A", "S", fields=[field("X")]), field("B", "S", fields=[field("Y")])),
        "$.fields[1].type: struct S is specified twice (first at $.fields[0])",
    ),
    (
        "common struct redefined inline",
        spec(
            field("A", "C", fields=[field("X")]),
            commonStructs=[{"name": "C", "versions": "0+", "fields": [field("X")]}],
        ),
        "$.fields[0].type: C is a common struct and cannot be specified again inline",
    ),
    (
        "common struct twice",
        spec(
            field("A", "C"),
            commonStructs=[{"name": "C", "versions": "0+", "fields": [field("X")]}] * 2,
        ),
        "$.commonStructs[1].name: common struct C is specified twice",
    ),
    (
        "struct named like message",
        spec(field("A", "Demo", fields=[field("X")])),
        "$.fields[0].type: struct Demo has the same name as its message",
    ),
]


@pytest.mark.parametrize(("rule", "bad", "expected"), RULES, ids=[r[0] for r in RULES])
def test_rule(tmp_path: Path, rule: str, bad: dict[str, Any], expected: str) -> None:
    assert after_path(one(tmp_path, bad)) == expected


def test_spec_without_versions_is_skipped_like_kafka(tmp_path: Path) -> None:
    removed = {k: v for k, v in spec().items() if k != "fields"}
    removed["validVersions"] = "none"
    (tmp_path / "Removed.json").write_text(json.dumps(removed))
    assert load_messages([tmp_path]) == []


def test_duplicate_spec_name(tmp_path: Path) -> None:
    found = problems(tmp_path, spec(field()), spec(field()))
    assert [after_path(p) for p in found] == [
        "$.name: spec name Demo is already used by Spec0.json"
    ]


def test_duplicate_api_key_in_one_folder(tmp_path: Path) -> None:
    a = spec(field(), name="A", type="metadata", apiKey=3)
    b = spec(field(), name="B", type="metadata", apiKey=3)
    assert [after_path(p) for p in problems(tmp_path, a, b)] == [
        "$.apiKey: apiKey 3 is already used by the metadata A"
    ]


def test_same_api_key_in_two_folders_is_fine(tmp_path: Path) -> None:
    for sub, name in (("x", "A"), ("y", "B")):
        (tmp_path / sub).mkdir()
        (tmp_path / sub / f"{name}.json").write_text(
            json.dumps(spec(field(), name=name, type="metadata", apiKey=3))
        )
    assert len(load_messages([tmp_path])) == 2


# --------------------------------------------------------------------------- nesting depth


def test_nesting_deeper_than_the_limit_is_a_spec_error(tmp_path: Path) -> None:
    # 3,000 open brackets: the reader stops at its limit instead of overflowing the stack.
    deep = '{"a":\n' + "[" * 3000
    path = "$.a" + "[0]" * (MAX_DEPTH - 1)
    assert one(tmp_path, deep) == (
        f"Spec0.json:2: {path}: objects and arrays nested deeper than {MAX_DEPTH} levels; "
        "Kafka specs nest only a few levels"
    )


def test_number_too_long_for_int_is_a_spec_error(tmp_path: Path) -> None:
    huge = "9" * 5000  # more digits than Python converts to an int by default
    assert one(tmp_path, f'{{\n  "name": "Demo",\n  "apiKey": {huge}\n}}') == (
        "Spec0.json:3: $.apiKey: invalid JSON at column 13: number with 5000 characters is too long"
    )


def test_lone_surrogate_is_a_spec_error(tmp_path: Path) -> None:
    # \ud800 alone is no character: the generated module could not be written as UTF-8.
    text = json.dumps(spec(field(about="x\ud800y")), indent=2)
    assert one(tmp_path, text) == (
        "Spec0.json:11: $.fields[0].about: invalid JSON at column 16: \\ud800 is half of a UTF-16 "
        "surrogate pair, not a character"
    )


def test_nesting_up_to_the_limit_is_read() -> None:
    at_limit = "[" * MAX_DEPTH + "]" * MAX_DEPTH
    value = parse_spec_text(at_limit, Path("x.json")).value
    for _ in range(MAX_DEPTH - 1):
        value = value[0]
    assert value == []


# --------------------------------------------------------------------------- names


LONG = "A" + "b" * 299  # a file name of 300+ characters cannot be written

NAME_RULES: list[tuple[str, dict[str, Any], str]] = [
    (
        "message name too long",
        spec(field(), name=LONG),
        "$.name: message name Abbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb... is 300 characters "
        "long; names may have at most 100 characters (they become file, class and attribute "
        "names)",
    ),
    (
        "field name too long",
        spec(field(LONG)),
        "$.fields[0].name: field name Abbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb... is 300 "
        "characters long; names may have at most 100 characters (they become file, class and "
        "attribute names)",
    ),
    (
        "inline struct name too long",
        spec(field("A", f"[]{LONG}", fields=[field("X")])),
        "$.fields[0].type: struct name Abbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb... is 300 "
        "characters long; names may have at most 100 characters (they become file, class and "
        "attribute names)",
    ),
    (
        "message name is a keyword",
        spec(field(), name="None"),
        "$.name: message name None is a Python keyword; rename it",
    ),
    (
        "inline struct name is a keyword",
        spec(field("A", "True", fields=[field("X")])),
        "$.fields[0].type: struct name True is a Python keyword; rename it",
    ),
    (
        "common struct name shadows an import",
        spec(
            field("A", "ClassVar"),
            commonStructs=[{"name": "ClassVar", "versions": "0+", "fields": [field("X")]}],
        ),
        "$.commonStructs[0].name: struct name ClassVar is a name the generated module imports; "
        "rename it",
    ),
    (
        "common struct name not a class name",
        spec(commonStructs=[{"name": "lower", "versions": "0+", "fields": [field("X")]}]),
        "$.commonStructs[0].name: struct name lower must start with a capital letter and hold "
        "only letters and digits",
    ),
    (
        "field name not an identifier",
        spec(field("Topic-Id")),
        "$.fields[0].name: 'Topic-Id' is not a field name (a letter, then letters and digits)",
    ),
    (
        "message name not an identifier",
        spec(field(), name="Demo Value"),
        "$.name: 'Demo Value' is not a message name (a capital letter, then letters and digits)",
    ),
]


@pytest.mark.parametrize(("rule", "bad", "expected"), NAME_RULES, ids=[r[0] for r in NAME_RULES])
def test_name_rule(tmp_path: Path, rule: str, bad: dict[str, Any], expected: str) -> None:
    assert after_path(one(tmp_path, bad)) == expected


def test_longest_allowed_name_generates(tmp_path: Path) -> None:
    name = "A" + "b" * (MAX_NAME_LENGTH - 1)
    (tmp_path / "specs").mkdir()
    (tmp_path / "specs" / "Long.json").write_text(json.dumps(spec(field(name), name=name)))
    written = write_package([tmp_path / "specs"], tmp_path / "out")
    assert tmp_path / "out" / f"{name.lower()}.py" in written


# --------------------------------------------------------------------------- all at once


def test_schema_and_semantic_problems_of_one_spec_in_one_run(tmp_path: Path) -> None:
    """A version range of the wrong form (a schema problem) does not hide the spec's semantic
    problems: all come in the same run, each once."""
    broken = spec(
        field("A", versions="0-x"),
        field("B", "uuid", nullableVersions="0+"),
        field("C", tag=0, taggedVersions="1+"),
        field("D", "string", zeroCopy=True),
        field("E", versions="5+"),
    )
    assert [after_path(p) for p in problems(tmp_path, broken)] == [
        "$.fields[0].versions: '0-x' is not a version range (none, N, A-B or A+)",
        "$.fields[1].nullableVersions: type uuid cannot be nullable (Kafka's UUID type has no null)",
        "$.fields[2].taggedVersions: taggedVersions 1+ must be inside the message's flexibleVersions 2+",
        "$.fields[3].zeroCopy: only bytes fields can use zeroCopy",
        "$.fields[4].versions: field E has versions 5+, but its struct exists only in versions 0-3",
    ]
    # Fixing the range leaves exactly the semantic problems: none was missed or invented.
    (tmp_path / "Spec0.json").unlink()
    broken["fields"][0]["versions"] = "0+"
    assert len(problems(tmp_path, broken)) == 4


def test_a_value_of_the_wrong_type_does_not_cause_follow_up_problems(tmp_path: Path) -> None:
    # tag "x" is left out of the model: "taggedVersions is given, but no tag" would follow from
    # it, so that field's other problems wait; other fields are still checked.
    found = problems(
        tmp_path,
        spec(field("A", tag="x", taggedVersions="2+"), field("B", "int99"), apiKey="one"),
    )
    assert [after_path(p) for p in found] == [
        "$.fields[0].tag: 'x' is not valid under any of the given schemas",
        "$.fields[1].type: unknown type 'int99'",
        "$.apiKey: 'one' is not of type 'integer'",
    ]


def test_a_spec_the_model_cannot_read_reports_its_schema_problems(tmp_path: Path) -> None:
    # A field without its type cannot be modelled: the schema's problem alone, no crash.
    without_type = spec(field("A"), field("B", "int99"))
    del without_type["fields"][0]["type"]
    assert [after_path(p) for p in problems(tmp_path, without_type)] == [
        "$.fields[0]: 'type' is a required property",
    ]


def test_a_spec_with_schema_problems_is_never_generated(tmp_path: Path) -> None:
    specs = tmp_path / "specs"
    specs.mkdir()
    (specs / "Demo.json").write_text(json.dumps(spec(field(versions="0-x"))))
    with pytest.raises(SpecErrors):
        write_package([specs], tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_a_struct_named_like_a_row_type_is_a_spec_error(tmp_path: Path) -> None:
    # The module defines DemoRow, the row type of Demo: a struct of that name would replace it.
    nested = field("Rows", "DemoRow", fields=[field("X")])
    assert after_path(one(tmp_path, spec(nested))) == (
        "$.fields[0].type: struct DemoRow has the name of Demo's row type, which the module "
        "defines; rename the struct"
    )
