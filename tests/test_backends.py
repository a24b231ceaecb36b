"""The backend seam: which backend serves the generated readers, how it is chosen, how it falls
back, and proof that the run under test really uses the one it claims.

Values and errors of the two backends are compared in tests/test_native_engine.py; the codec
tests (marker ``codec``) run once per backend in ``make test``.
"""

from __future__ import annotations

import os
import subprocess
import sys
import types
import warnings
from pathlib import Path
from typing import Any

import pytest

import generated
from codegen import runtime
from codegen.runtime import backends
from generated.offset_commit_value import OffsetCommitValue

ROOT = Path(__file__).resolve().parent.parent


def _python(code: str, **env: str) -> subprocess.CompletedProcess[str]:
    environment = {k: v for k, v in os.environ.items() if k != "SPECGEN_BACKEND"}
    environment["PYTHONPATH"] = str(ROOT)
    environment.update(env)
    return subprocess.run(
        [sys.executable, "-W", "always", "-c", code],
        cwd=ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def _all_shipped() -> list[Any]:
    return [generated.MESSAGES[name] for name in generated.MESSAGES]


def test_the_run_uses_the_backend_it_claims() -> None:
    """Under ``SPECGEN_REQUIRE_NATIVE`` (CI) every shipped reader is the engine's, unless the
    run asked for the pure backend: a silent fallback cannot pass as native."""
    asked = os.environ.get("SPECGEN_BACKEND", "auto")
    classes = _all_shipped()
    if asked == "pure":
        assert runtime.backend() == "pure"
        for cls in classes:
            for v in cls.VALID_VERSIONS.versions():
                assert isinstance(cls.reader(v), types.FunctionType)
                assert isinstance(cls.row_reader(v), types.FunctionType)
        return
    if backends.native_problem() is not None:
        if os.environ.get("SPECGEN_REQUIRE_NATIVE"):
            pytest.fail(f"SPECGEN_REQUIRE_NATIVE is set, but {backends.native_problem()}")
        pytest.skip(str(backends.native_problem()))
    assert runtime.backend() == "native"
    engine = backends.native_engine()
    assert engine is not None
    for cls in classes:
        for v in cls.VALID_VERSIONS.versions():
            reader, row_reader = cls.reader(v), cls.row_reader(v)
            assert type(reader) is engine.Reader and type(row_reader) is engine.Reader
            assert reader.direct_slots, (cls.__name__, v)
            assert (reader.message, reader.version) == (cls.SPEC_NAME, v)


def test_use_backend_switches_loaded_and_later_loaded_classes() -> None:
    if backends.native_problem() is not None:
        pytest.skip(str(backends.native_problem()))
    data = OffsetCommitValue(offset=3, metadata="m").encode(3)
    try:
        assert runtime.use_backend("pure") == "pure"
        assert isinstance(OffsetCommitValue.reader(3), types.FunctionType)
        pure = (OffsetCommitValue.decode(data, 3), OffsetCommitValue.decode_row(data, 3))
        assert runtime.use_backend("native") == "native"
        assert not isinstance(OffsetCommitValue.reader(3), types.FunctionType)
        native = (OffsetCommitValue.decode(data, 3), OffsetCommitValue.decode_row(data, 3))
        assert native == pure
        with pytest.raises(runtime.BackendError, match="backend 'fast': expected one of"):
            runtime.use_backend("fast")
    finally:
        runtime.use_backend(None)


def test_environment_variable_chooses_the_backend() -> None:
    code = "import generated.offset_commit_value as m; from codegen.runtime import backend; "
    code += "print(backend(), type(m.OffsetCommitValue.reader(3)).__name__)"
    pure = _python(code, SPECGEN_BACKEND="pure")
    assert (pure.returncode, pure.stdout.strip(), pure.stderr) == (0, "pure function", "")
    bad = _python(code, SPECGEN_BACKEND="fastest")
    assert bad.returncode == 1
    assert (
        "BackendError: SPECGEN_BACKEND='fastest': expected one of auto, native, pure" in bad.stderr
    )


BLOCK_ENGINE = "import sys; sys.modules['codegen.native._engine'] = None\n"


def test_without_the_engine_auto_falls_back_and_says_so_once() -> None:
    code = BLOCK_ENGINE + (
        "import generated.offset_commit_value as a, generated.offset_commit_key as b\n"
        "from codegen.runtime import backend\n"
        "print(backend(), a.OffsetCommitValue.decode(a.OffsetCommitValue(offset=9).encode(3), 3).offset)\n"
    )
    done = _python(code)
    assert (done.returncode, done.stdout.strip()) == (0, "pure 9")
    warned = [line for line in done.stderr.splitlines() if "NativeFallbackWarning" in line]
    assert len(warned) == 1, done.stderr
    assert (
        "kafka-specgen reads with the pure-Python backend: the native engine is not built"
        in (warned[0])
    )
    assert "python -m codegen.native.build" in warned[0]


def test_without_the_engine_native_is_an_error_that_says_what_to_do() -> None:
    done = _python(BLOCK_ENGINE + "import generated.offset_commit_value", SPECGEN_BACKEND="native")
    assert done.returncode == 1
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith(
        "codegen.runtime.backends.BackendError: SPECGEN_BACKEND=native, but the native engine "
        "is not built"
    ), last


def test_tables_the_engine_refuses_fall_back_to_the_pure_readers() -> None:
    """A package generated by another kafka-specgen (another table format) still reads."""
    if backends.native_problem() is not None:
        pytest.skip(str(backends.native_problem()))

    class Other(OffsetCommitValue):
        __slots__ = ()

    Other._READERS = OffsetCommitValue._PURE_READERS
    Other._ROW_READERS = OffsetCommitValue._PURE_ROW_READERS
    magic, _, name, version, structs = OffsetCommitValue._NATIVE_TABLES[3]
    tables = {3: (magic, 99, name, version, structs)}
    saved = backends._warned
    backends._warned = False
    try:
        runtime.use_backend("auto")
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            backends.install(Other, {"OffsetCommitValue": Other}, tables)
        (warning,) = caught
        assert issubclass(warning.category, runtime.NativeFallbackWarning)
        assert "Other's layout tables do not suit this engine (layout table format 99" in str(
            warning.message
        )
        assert Other._READERS is OffsetCommitValue._PURE_READERS
        with pytest.raises(runtime.BackendError, match="the native engine refuses its tables"):
            runtime.use_backend("native")
    finally:
        runtime.use_backend(None)
        backends._warned = saved
        backends._installed.discard(Other)
