"""Optional dependencies: a command whose extra is not installed says which one to install.

Each case runs ``python -m codegen`` in a subprocess where some libraries cannot be imported
(``sys.modules[name] = None`` makes ``import name`` raise ModuleNotFoundError), as in an
environment that installed ``kafka-specgen`` without that extra.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SPECS = ROOT / "message_specs" / "consumer_offsets"

RUN_WITHOUT = """\
import sys
for name in sys.argv[1].split(","):
    sys.modules[name] = None
sys.argv = ["codegen", *sys.argv[2:]]
from codegen.__main__ import main
main()
"""


def _codegen_without(missing: str, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", RUN_WITHOUT, missing, *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
    )


@pytest.mark.parametrize("missing", ["jinja2", "jsonschema", "ruff", "click"])
def test_generate_without_the_generator_extra(missing: str, tmp_path: Path) -> None:
    proc = _codegen_without(
        missing, "generate", "--specs", str(SPECS), "--out", "out", cwd=tmp_path
    )
    assert (proc.returncode, proc.stdout) == (1, "")
    assert proc.stderr == (
        "Error: python -m codegen generate needs the generator extra: "
        f"pip install 'kafka-specgen[generator]' ({missing} is not installed)\n"
    )
    assert not (tmp_path / "out").exists()


def test_dump_without_the_dumps_extra(tmp_path: Path) -> None:
    proc = _codegen_without("crc32c", "dump", "x.log", "--format", "jsonl", cwd=tmp_path)
    assert proc.returncode == 1
    assert proc.stderr == (
        "Error: python -m codegen dump needs the dumps extra: "
        "pip install 'kafka-specgen[dumps]' (crc32c is not installed)\n"
    )


def test_help_lists_a_command_whose_extra_is_missing(tmp_path: Path) -> None:
    proc = _codegen_without("crc32c,pyarrow", "--help", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    listed = [line.split()[0] for line in proc.stdout.split("Commands:")[1].splitlines() if line]
    assert {"dump", "groups", "lag", "downgrade-check", "transactions"} <= set(listed)
    proc = _codegen_without("crc32c", "dump", "--help", cwd=tmp_path)
    assert (proc.returncode, proc.stdout.split()[:1]) == (0, ["Usage:"])
    assert "python -m codegen dump needs the dumps extra" in proc.stdout


def test_generator_runs_without_the_dumps_extra(tmp_path: Path) -> None:
    proc = _codegen_without(
        "crc32c,lz4,zstandard,cramjam,rich",
        "generate",
        "--specs",
        str(SPECS),
        "--out",
        "out",
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "out" / "offset_commit_value.py").is_file()
    assert (tmp_path / "out" / "py.typed").is_file()


def test_library_import_names_the_extra() -> None:
    code = "import sys; sys.modules['lz4'] = None; import codegen.dumps"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 1
    assert proc.stderr.splitlines()[-1] == (
        "codegen.extras.MissingExtraError: decoding Kafka log segments needs the dumps extra: "
        "pip install 'kafka-specgen[dumps]' (lz4 is not installed)"
    )
