"""Golden files: what the generator writes for the specs under tests/cases, to the byte.

Run with ``UPDATE_GOLDEN=1`` to rewrite tests/golden after an intended change, then review
the diff. Missing, changed and extra files all fail.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from codegen.emit import write_package

CASES = Path(__file__).parent / "cases"
GOLDEN = Path(__file__).parent / "golden"
CASE_NAMES = sorted(p.name for p in CASES.iterdir() if p.is_dir())


@pytest.mark.parametrize("case", CASE_NAMES)
def test_generated_code_matches_golden(case: str, tmp_path: Path) -> None:
    out = tmp_path / case
    write_package([CASES / case], out)
    golden = GOLDEN / case
    if os.environ.get("UPDATE_GOLDEN"):
        golden.mkdir(parents=True, exist_ok=True)
        for stale in golden.glob("*.py"):
            stale.unlink()
        for path in out.glob("*.py"):
            (golden / path.name).write_text(path.read_text())
    written = {p.name: p.read_text() for p in out.glob("*.py")}
    expected = {p.name: p.read_text() for p in golden.glob("*.py")}
    assert sorted(written) == sorted(expected), "files differ from tests/golden"
    for name, text in written.items():
        assert text == expected[name], f"{case}/{name} differs from its golden file"


@pytest.fixture(scope="module")
def tagged_demo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ModuleType]:
    root = tmp_path_factory.mktemp("hexcases")
    write_package([CASES / "tagged_demo"], root / "hexcase_tagged_demo")
    sys.path.insert(0, str(root))
    try:
        yield importlib.import_module("hexcase_tagged_demo.tagged_demo")
    finally:
        sys.path.remove(str(root))


def annotated_hex(path: Path) -> bytes:
    """Hex bytes, ``#`` starting a comment that runs to the end of the line."""
    digits = "".join(line.split("#", 1)[0] for line in path.read_text().splitlines())
    return bytes.fromhex(digits)


SAMPLES = sorted((CASES / "tagged_demo" / "samples").glob("v*.hex"))


@pytest.mark.parametrize("sample", SAMPLES, ids=[p.stem for p in SAMPLES])
def test_annotated_hex_fixture(sample: Path, tagged_demo: ModuleType) -> None:
    version = int(sample.stem[1:])
    data = annotated_hex(sample)
    cls = tagged_demo.TaggedDemo
    decoded = cls.decode(data, version)
    expected = json.loads(sample.with_suffix(".expected").read_text())
    assert decoded.to_json(version) == expected
    assert decoded.encode(version) == data
    assert cls.from_json(expected, version).encode(version) == data


@pytest.mark.parametrize("sample", SAMPLES, ids=[p.stem for p in SAMPLES])
def test_every_truncation_is_a_decode_error(sample: Path, tagged_demo: ModuleType) -> None:
    from codegen.runtime.errors import DecodeError

    version = int(sample.stem[1:])
    data = annotated_hex(sample)
    for cut in range(len(data)):
        with pytest.raises(DecodeError) as info:
            tagged_demo.TaggedDemo.decode(data[:cut], version)
        assert info.value.message == "TaggedDemo"
        assert 0 <= info.value.offset <= cut
