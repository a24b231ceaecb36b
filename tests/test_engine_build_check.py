"""A compiled module of the engine built from other C sources than those beside it does not
load: :class:`codegen.native.EngineBuildMismatch`, naming the rebuild (an engine left stale by
a pull gave wrong answers, not an error: ``group 'my-app' has no committed offset``)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from importlib.machinery import EXTENSION_SUFFIXES
from pathlib import Path

import pytest

from codegen import native
from codegen.native import EngineBuildMismatch, sources_digest

SECOND = 1_000_000_000  # ns


def _folder(tmp_path: Path, source_at: int, built_at: int | None) -> Path:
    """A folder with one C source and (built_at not None) a module file, of those times."""
    (tmp_path / "part.h").write_text("/* a part */\n")
    os.utime(tmp_path / "part.h", ns=(source_at, source_at))
    if built_at is not None:
        built = tmp_path / ("_records" + EXTENSION_SUFFIXES[0])
        built.write_bytes(b"\0")
        os.utime(built, ns=(built_at, built_at))
    return tmp_path


@pytest.fixture(autouse=True)
def _fresh_times(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(native, "_newest_sources", {})


def test_a_module_built_from_other_sources_is_refused_with_the_fix(tmp_path: Path) -> None:
    folder = _folder(tmp_path, source_at=2000 * SECOND, built_at=1000 * SECOND)
    with pytest.raises(EngineBuildMismatch, match=r"python -m codegen\.native\.build") as info:
        native._check_build("_records", "0" * 64, str(folder))
    assert "_records" in str(info.value) and "000000000000" in str(info.value)
    assert isinstance(info.value, RuntimeError) and not isinstance(info.value, ImportError)


def test_a_module_of_these_sources_loads_though_they_are_newer(tmp_path: Path) -> None:
    folder = _folder(tmp_path, source_at=2000 * SECOND, built_at=1000 * SECOND)
    native._check_build("_records", sources_digest(folder) or "", str(folder))


def test_a_module_without_a_file_beside_the_sources_is_held_to_them(tmp_path: Path) -> None:
    folder = _folder(tmp_path, source_at=1000 * SECOND, built_at=None)
    with pytest.raises(EngineBuildMismatch):
        native._check_build("_records", "", str(folder))


def test_sources_no_newer_than_the_module_are_not_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The sources are hashed only where one is newer than the module: the start-up of every
    command pays a listing of the folder, not a hash of its sources."""
    folder = _folder(tmp_path, source_at=1000 * SECOND, built_at=2000 * SECOND)
    monkeypatch.setattr(native, "sources_digest", lambda _: pytest.fail("sources hashed"))
    native._check_build("_records", "0" * 64, str(folder))


def test_a_folder_without_sources_has_nothing_to_check(tmp_path: Path) -> None:
    native._check_build("_records", "0" * 64, str(tmp_path))


REPORTS_ANOTHER = """
import codegen.native as native
folder = native.__path__[0]
native._newest_sources[folder] = 1 << 62  # every source newer than the modules
native.sources_digest = lambda _: "f" * 64  # and not what they were built from
try:
    import codegen.native.{module}
except native.EngineBuildMismatch as exc:
    print("refused:", exc)
"""


@pytest.mark.parametrize("module", ["_engine", "_records", "_jsontext"])
def test_each_built_module_checks_its_digest_as_it_loads(module: str) -> None:
    """Each compiled module's init calls the check with the digest compiled into it."""
    if native.engine() is None:
        pytest.skip("the engine is not built here")
    done = subprocess.run(
        [sys.executable, "-c", REPORTS_ANOTHER.format(module=module)],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert re.match(
        rf"refused: the native engine's {module} was built from other C sources than those in "
        r".+ \(built from [0-9a-f]{12}, the sources are ffffffffffff\): rebuild it with "
        r"`python -m codegen\.native\.build`",
        done.stdout,
    ), done.stdout
