"""The layout-table format's numbers are defined once (codegen/native/table_format.py): the
engine's header is generated from them, kept current by ``python -m codegen check``, and the
engine built from it reads the tables the generator writes."""

from __future__ import annotations

from pathlib import Path

import pytest

from codegen import emit
from codegen.native import table_format

ROOT = Path(__file__).resolve().parents[1]
SPECS = ROOT / "message_specs"


def test_the_committed_header_is_the_rendered_one() -> None:
    assert emit.ENGINE_HEADER == ROOT / emit.ENGINE_HEADER_LABEL
    assert emit.ENGINE_HEADER.read_text(encoding="utf-8") == emit.render_engine_header()


def test_the_header_names_every_number_of_the_format() -> None:
    text = emit.render_engine_header()
    assert f'#define MAGIC "{table_format.MAGIC}"' in text
    assert f"#define FORMAT_VERSION {table_format.FORMAT_VERSION}" in text
    for prefix, numbers in (
        ("OP_", table_format.OPCODES),
        ("F_", table_format.FLAGS),
        ("DEF_", table_format.DEFAULT_KINDS),
    ):
        for name, value in numbers.items():
            assert f"    {prefix}{name} = {value},\n" in text
    assert list(table_format.OPCODES.values()) == list(range(1, len(table_format.OPCODES) + 1))


def test_the_built_engine_reads_this_format() -> None:
    from codegen.runtime import backends

    engine = backends.native_engine()
    if engine is None:
        pytest.skip("the native engine is not built")
    assert engine.FORMAT_VERSION == table_format.FORMAT_VERSION


def test_generate_writes_and_check_reports_the_header_of_the_shipped_package(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Only for the package shipped with the engine: writing another leaves the header alone."""
    header = tmp_path / "native" / "table_format.h"
    header.parent.mkdir()
    shipped = tmp_path / "generated"
    monkeypatch.setattr(emit, "ENGINE_HEADER", header)
    monkeypatch.setattr(emit, "SHIPPED_OUT", shipped)
    emit.write_package([SPECS], tmp_path / "other")
    assert not header.exists()
    emit.write_package([SPECS], shipped)
    assert header.read_text(encoding="utf-8") == emit.render_engine_header()
    assert emit.check_package([SPECS], shipped).clean
    header.write_text(header.read_text(encoding="utf-8").replace("OP_ARRAY = 12", "OP_ARRAY = 13"))
    drift = emit.check_package([SPECS], shipped)
    assert drift.changed == [emit.ENGINE_HEADER_LABEL]
    assert list(drift.lines()) == [f"changed: {emit.ENGINE_HEADER_LABEL}"]
