"""The wire judged by layout: restructures, swaps and renames that keep the bytes, versions not
released yet, versions brought back, and the layout's text form in the lock.

The specs are small copies of the shapes Kafka's history has (AddPartitionsToTxn in 3.5,
StreamsGroupHeartbeatResponse in 4.4, OffsetFetch's case-only rename in 3.7), so these run
without the release corpus of test_kafka_history.py.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from codegen.lint import Category, LintConfig, Severity, lint, set_from_texts
from codegen.lint.layout import FieldLayout, StructLayout, layout_text, parse_layout
from codegen.lint.memory import LOCK_NAME, LayoutUse, lock_text, parse_lock
from codegen.lint.retired import set_memory
from tests.lint.helpers import field, found, message, run

WIRE_JSON = LintConfig(fail_categories=frozenset({Category.WIRE, Category.JSON}))


def _tagged(name: str, tag: int, type: str = "int32") -> dict[str, Any]:
    return field(name, type, "0+", taggedVersions="0+", tag=tag)


def test_a_restructure_that_keeps_the_old_bytes_is_one_json_finding(tmp_path: Path) -> None:
    topics = [field("Name", "string"), field("Partitions", "[]int32")]
    old = message(
        [
            field("TransactionalId", "string"),
            field("ProducerId", "int64"),
            field("Topics", "[]Topic", fields=topics),
        ],
        valid="0-3",
    )
    new = message(
        [
            field("Transactions", "[]Transaction", "4+", fields=[field("Id", "string", "4+")]),
            field("V3AndBelowTransactionalId", "string", "0-3"),
            field("V3AndBelowProducerId", "int64", "0-3"),
            field("V3AndBelowTopics", "[]Topic", "0-3", fields=topics),
        ],
        valid="0-4",
    )
    result = run(tmp_path, old, new)
    assert found(result) == [
        (
            "field-renamed",
            "$.fields[1].name",
            "versions 0-3 keep their bytes; fields renamed for v0-3: TransactionalId -> "
            "V3AndBelowTransactionalId, ProducerId -> V3AndBelowProducerId, Topics -> "
            "V3AndBelowTopics; new field from v4: Transactions; the JSON keys and attributes "
            "of these versions change with the names: keep them, or allow field-renamed where "
            "no one reads the JSON or the API",
        )
    ]
    assert result.exit_code == 0
    assert result.findings[0].category is Category.JSON


def test_a_field_kept_under_a_legacy_name_and_a_wider_one_from_a_new_version(
    tmp_path: Path,
) -> None:
    # 4.4's StreamsGroupHeartbeatResponse: AcceptableRecoveryLag (int32) stays in v0 as
    # AcceptableRecoveryLagLegacy; a new AcceptableRecoveryLag (int64) from v1
    old = message([field("ErrorCode", "int16"), field("Lag")], valid="0")
    new = message(
        [
            field("ErrorCode", "int16"),
            field("LagLegacy", versions="0"),
            field("Lag", "int64", "1+"),
        ],
        valid="0-1",
    )
    assert found(run(tmp_path, old, new)) == [
        (
            "field-renamed",
            "$.fields[1].name",
            "version 0 keeps its bytes; field renamed for v0: Lag -> LagLegacy; new field from "
            "v1: Lag (int64, was int32); the JSON keys and attributes of these versions change "
            "with the names: keep them, or allow field-renamed where no one reads the JSON or "
            "the API",
        )
    ]


def test_a_rename_of_the_first_letter_s_case_is_no_finding(tmp_path: Path) -> None:
    # OffsetFetch's groupId -> GroupId (3.7): the same JSON key and attribute
    old = message([field("groupId", "string"), field("B")])
    new = message([field("GroupId", "string"), field("B")])
    assert found(run(tmp_path, old, new)) == []


def test_fields_that_trade_names_but_keep_their_places_break_the_json_only(
    tmp_path: Path,
) -> None:
    for old_fields, new_fields in (
        ([field("A"), field("B")], [field("B"), field("A")]),
        (
            [field("X"), _tagged("T", 0), _tagged("U", 1)],
            [field("X"), _tagged("T", 1), _tagged("U", 0)],
        ),
    ):
        old, new = message(old_fields, flexible="0+"), message(new_fields, flexible="0+")
        result = run(tmp_path / str(len(old)), old, new)
        (finding,) = result.findings
        assert finding.rule == "field-renamed" and finding.category is Category.JSON
        assert ": A -> B, B -> A;" in finding.message or ": T -> U, U -> T;" in finding.message
        assert result.exit_code == 0
        old_set = set_from_texts("old", {"Sample.json": old})
        new_set = set_from_texts("new", {"Sample.json": new})
        assert lint(old_set, new_set, config=WIRE_JSON).exit_code == 1


def test_a_rename_together_with_a_wire_break(tmp_path: Path) -> None:
    # the layout of versions 0-2 changes (A), and B is paired by its layout, not its position
    old = message([field("A"), field("B", "string"), field("C", "int64")])
    new = message([field("A", "int64"), field("Bee", "string"), field("C", "int64")])
    assert [(r, p) for r, p, _ in found(run(tmp_path, old, new))] == [
        ("field-type-changed", "$.fields[0].type"),
        ("field-renamed", "$.fields[1].name"),
    ]


def test_every_changed_version_is_explained(tmp_path: Path) -> None:
    # an array of structs becomes a struct: no field rule names it, the layout does
    old = message([field("A"), field("S", "[]Item", fields=[field("X")])])
    new = message([field("A"), field("S", "Item", fields=[field("X")])])
    result = run(tmp_path, old, new)
    assert [(f.rule, f.severity) for f in result.findings] == [
        ("field-type-changed", Severity.BREAKING)
    ]
    new_nested = message([field("A"), field("S", "[]Item", fields=[field("X", "int64")])])
    assert found(run(tmp_path / "nested", old, new_nested)) == [
        (
            "field-type-changed",
            "$.fields[1].fields[0].type",
            "field X type changed from int32 to int64; keep the type and add a new field in a "
            "new version instead",
        )
    ]


def _request_and_response(
    request_fields: list[dict[str, Any]],
    response_fields: list[dict[str, Any]],
    valid: str,
    unstable: bool,
) -> dict[str, str]:
    return {
        "SampleRequest.json": message(
            request_fields,
            name="SampleRequest",
            type="request",
            api_key=90,
            valid=valid,
            flexible="0+",
            unstable=unstable,
        ),
        "SampleResponse.json": message(
            response_fields,
            name="SampleResponse",
            type="response",
            api_key=90,
            valid=valid,
            flexible="0+",
        ),
    }


def test_the_unreleased_version_of_a_request_and_its_response(tmp_path: Path) -> None:
    old = _request_and_response([field("A")], [field("E", "int16")], "0-1", unstable=True)
    changed = _request_and_response(
        [field("A"), field("B", versions="1+")],
        [field("E", "int16"), field("F", versions="1+")],
        "0-1",
        unstable=False,
    )
    result = run(tmp_path, old, changed)
    assert [(f.spec, f.rule, f.severity) for f in result.findings] == [
        ("SampleRequest", "unstable-version-changed", Severity.INFO),
        ("SampleResponse", "unstable-version-changed", Severity.INFO),
    ]
    assert result.exit_code == 0
    # released (no flag on the old side): the same change is a wire break
    released = _request_and_response([field("A")], [field("E", "int16")], "0-1", unstable=False)
    assert run(tmp_path / "released", released, changed).exit_code == 1
    # removed before release, version 1 released instead
    gone = _request_and_response([field("A")], [field("E", "int16")], "1", unstable=False)
    assert [f.rule for f in run(tmp_path / "gone", old, gone).findings] == [
        "versions-removed",
        "versions-removed",
    ]  # version 0 was released: only version 1 was not, and it keeps its bytes
    only = _request_and_response([field("A")], [field("E", "int16")], "0", unstable=True)
    later = _request_and_response([field("A")], [field("E", "int16")], "1", unstable=False)
    assert {f.rule for f in run(tmp_path / "only", only, later).findings} == {
        "unstable-version-changed"
    }


def test_a_spec_that_never_released_a_version_goes_as_a_note(tmp_path: Path) -> None:
    old = _request_and_response([field("A")], [field("E", "int16")], "0", unstable=True)
    result = run(tmp_path, old, {"Other.json": message([field("A")], name="Other")})
    rules = [(f.spec, f.rule) for f in result.findings]
    assert ("SampleRequest", "unstable-version-changed") in rules
    assert ("SampleResponse", "unstable-version-changed") in rules
    assert result.exit_code == 0


# --------------------------------------------------------------------------- versions brought back


def test_versions_brought_back_with_the_layout_they_had(tmp_path: Path) -> None:
    full = {"Sample.json": message([field("A"), field("B", "string")], valid="0-3")}
    lock = lock_text(set_memory(set_from_texts("v1", full), "v1"))
    trimmed = {"Sample.json": message([field("A"), field("B", "string")], valid="2-3")}
    old = {**trimmed, LOCK_NAME: lock}
    assert found(run(tmp_path / "same", old, full)) == []
    assert [r for r, _, _ in found(run(tmp_path / "unrecorded", trimmed, full))] == [
        "lowest-version-lowered"
    ]
    other = {"Sample.json": message([field("A", "int64"), field("B", "string")], valid="0-3")}
    result = run(tmp_path / "other", old, other)
    assert "version-layout-changed" in {f.rule for f in result.findings}
    assert result.exit_code == 1


def test_versions_brought_back_against_the_git_history(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from codegen.lint.command import lint_command
    from tests.lint.histories import git, history, put

    full = message([field("A"), field("B", "string")], valid="0-3")
    repo = history(
        tmp_path,
        {"Sample.json": full},
        {"Sample.json": message([field("A"), field("B", "string")], valid="2-3")},
    )
    put(repo, {"Sample.json": message([field("A", "int64"), field("B", "string")], valid="0-3")})
    # versions 2-3 change too (a field-type-changed); versions 0-1 come back changed
    result = CliRunner().invoke(lint_command, ["--no-config", "--git", "HEAD", str(repo / "specs")])
    first = git(repo, "rev-list", "--max-parents=0", "HEAD").strip()[:12]
    assert result.exit_code == 1
    assert (
        f"[version-layout-changed] (wire) versions 0-1 of Sample come back (validVersions 2-3 -> "
        f"0-3) with another layout than in commit {first}: field A was int32 and is int64"
    ) in result.stdout
    put(repo, {"Sample.json": full})
    back = CliRunner().invoke(lint_command, ["--no-config", "--git", "HEAD", str(repo / "specs")])
    assert (back.exit_code, "version-layout-changed" in back.stdout) == (0, False)


# --------------------------------------------------------------------------- the text form

_KINDS = st.sampled_from(["int8", "int16", "int32", "int64", "string", "bytes", "uuid", "bool"])


def _fields(depth: int, flexible: bool) -> st.SearchStrategy[FieldLayout]:
    plain = st.builds(
        FieldLayout,
        kind=_KINDS,
        element=st.none(),
        nullable=st.booleans(),
        compact=st.booleans(),
        struct=st.none(),
    )
    arrays = st.builds(
        FieldLayout,
        kind=st.just("array"),
        element=_KINDS,
        nullable=st.booleans(),
        compact=st.booleans(),
        struct=st.none(),
    )
    if depth == 0:
        return plain | arrays
    nested = _structs(depth - 1, flexible)
    structs = st.builds(
        FieldLayout,
        kind=st.just("struct"),
        element=st.none(),
        nullable=st.booleans(),
        compact=st.just(False),
        struct=nested,
    )
    struct_arrays = st.builds(
        FieldLayout,
        kind=st.just("array"),
        element=st.just("struct"),
        nullable=st.booleans(),
        compact=st.booleans(),
        struct=nested,
    )
    return plain | arrays | structs | struct_arrays


def _tagged_fields(
    depth: int, flexible: bool
) -> st.SearchStrategy[tuple[tuple[int, FieldLayout], ...]]:
    defaults = st.text(max_size=6)
    tagged = _fields(depth, flexible).flatmap(
        lambda f: defaults.map(
            lambda d: FieldLayout(f.kind, f.element, f.nullable, f.compact, f.struct, d)
        )
    )
    return st.lists(tagged, max_size=3).map(lambda fs: tuple(enumerate(fs)))


def _structs(depth: int, flexible: bool) -> st.SearchStrategy[StructLayout]:
    """Nested structs share the message's flexibility, as in :func:`struct_layout`."""
    return st.builds(
        StructLayout,
        flexible=st.just(flexible),
        fields=st.lists(_fields(depth, flexible), max_size=4).map(tuple),
        tagged=_tagged_fields(depth, flexible),
    )


@given(st.booleans().flatmap(lambda flexible: _structs(1, flexible)))
def test_the_text_form_of_a_layout_reads_back(layout: StructLayout) -> None:
    assert parse_layout(layout_text(layout)) == layout


def test_the_lock_keeps_layouts_and_a_format_1_lock_still_reads() -> None:
    specs = set_from_texts("v", {"Sample.json": message([field("A"), field("B", "string")])})
    text = lock_text(set_memory(specs, "v"))
    assert '"layouts": {\n    "0-2": [\n     "{int32, string}"\n    ]\n   }' in text
    memory = parse_lock(text, "lock")
    assert memory.layouts("Sample", 1) == [LayoutUse("Sample", 1, "{int32, string}")]
    old = text.replace('"format": 2', '"format": 1')
    assert parse_lock(old, "lock").layouts("Sample", 1) == memory.layouts("Sample", 1)
