"""A package shipped to Spark's workers in a zip (``spark_udfs.session.build_package_zip``)
uses the compiled engine installed there when it was built from the same C sources.

Python imports no compiled module from a zip, and ``addPyFile`` puts the zip ahead of the
workers' installed packages: without this, a shipped zip hid the engine installed on every
worker. Each case imports the zip's copy in a fresh interpreter, the zip first on
``sys.path`` and this checkout (its built engine) after it, as a worker's path is.
tests/spark/test_spark.py's local cluster checks the same on real Spark workers.
"""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

import codegen
from codegen import native
from codegen.native import SHIPPED_DIGEST, sources_digest
from spark_udfs.session import build_package_zip

pytest.importorskip("pyarrow")

ROOT = Path(codegen.__file__).resolve().parent.parent

AS_A_WORKER = """
import importlib, json, sys
sys.path[:0] = [sys.argv[1]]
sys.path.append(sys.argv[2])  # the installed copy, after the zip
import codegen.native as native
from codegen.runtime import backends
from spark_udfs.workers import native_problem

def origin(name):
    try:
        return importlib.import_module(name).__file__
    except ImportError:
        return None

print(json.dumps({
    "package": native.__file__,
    "engine": origin("codegen.native._engine"),
    "records": origin("codegen.native._records"),
    "backend": backends.backend(),
    "problem": native_problem(),
}))
"""


def _as_a_worker(zip_path: Path, cwd: Path) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "-c", AS_A_WORKER, str(zip_path), str(ROOT)],
        cwd=cwd,
        env={"PATH": "/usr/bin:/bin", "SPECGEN_BACKEND": "auto"},
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    seen: dict[str, object] = json.loads(done.stdout.splitlines()[-1])
    return seen


@pytest.fixture(scope="module")
def shipped(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if native.engine() is None:
        pytest.skip("the engine is not built here")
    return build_package_zip(tmp_path_factory.mktemp("ship") / "kafka_specgen.zip")


def test_the_built_modules_carry_the_digest_of_their_sources() -> None:
    digest = sources_digest(ROOT / "codegen" / "native")
    assert digest is not None and len(digest) == 64
    from codegen.native import _engine, _jsontext, _records

    for module in (_engine, _records, _jsontext):
        assert digest == module.SOURCES_DIGEST, module.__name__


def test_the_zip_carries_the_digest_of_the_driver_s_sources(shipped: Path) -> None:
    with zipfile.ZipFile(shipped) as zf:
        assert zf.read(f"codegen/native/{SHIPPED_DIGEST}").decode().strip() == sources_digest(
            ROOT / "codegen" / "native"
        )
        assert not [n for n in zf.namelist() if n.endswith((".so", ".c", ".h"))]


def test_a_shipped_zip_uses_the_installed_engine_built_from_its_sources(
    shipped: Path, tmp_path: Path
) -> None:
    seen = _as_a_worker(shipped, tmp_path)
    assert str(seen["package"]).startswith(str(shipped) + "/")  # the zip's copy runs
    installed = str(ROOT / "codegen" / "native") + "/"
    assert str(seen["engine"]).startswith(installed), seen
    assert str(seen["records"]).startswith(installed), seen
    assert (seen["backend"], seen["problem"]) == ("native", None)


def test_an_installed_engine_of_other_sources_is_not_used(shipped: Path, tmp_path: Path) -> None:
    other = tmp_path / "other.zip"
    with zipfile.ZipFile(shipped) as src, zipfile.ZipFile(other, "w") as dst:
        for item in src.infolist():
            data = src.read(item)
            if item.filename.endswith(SHIPPED_DIGEST):
                data = b"0" * 64 + b"\n"  # as a zip of another version would say
            dst.writestr(item, data)
    seen = _as_a_worker(other, tmp_path)
    assert (seen["engine"], seen["records"], seen["backend"]) == (None, None, "pure")
    problem = str(seen["problem"])
    assert "was not built from the shipped package's C sources" in problem, problem
    assert str(ROOT / "codegen" / "native") in problem
