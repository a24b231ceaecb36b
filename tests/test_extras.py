"""Optional dependencies: a command whose extra is not installed says which one to install.

Each case runs ``python -m codegen`` in a subprocess where some libraries cannot be imported
(``sys.modules[name] = None`` makes ``import name`` raise ModuleNotFoundError), as in an
environment that installed ``kafka-specgen`` without that extra.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from codegen.extras import EXTRA_MODULES

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
    assert {"dump", "groups", "lag", "downgrade-check", "transactions", "tiered"} <= set(listed)
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


# ------------------------------------------------------------------ every command, every library

DUMP = ROOT / "tests" / "data" / "forensics" / "aibulb"
TIERED = ROOT / "tests" / "data" / "tiered"


def _wide_segment(folder: Path) -> Path:
    """A plain topic's segment whose values are East Asian wide text: the table measures them
    with rich."""
    from codegen.dumps.writer import SegmentWriter

    partition = folder / "wide-0"
    partition.mkdir()
    with SegmentWriter(partition / "00000000000000000000.log") as writer:
        writer.write_batch([(b"k", "幅の広い文字".encode())], timestamp=1_700_000_000_000)
    return partition


Command = tuple[tuple[str, ...], list[str], subprocess.CompletedProcess[str]]


@pytest.fixture(scope="module")
def commands(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Command]]:
    """Each command a user runs: the extras it needs, its arguments (outputs relative to the
    folder it runs in) and what it answers with every library installed."""
    folder = tmp_path_factory.mktemp("commands")
    specs = str(ROOT / "message_specs")
    html = ["--format", "html", "--output", "report.html"]
    table: dict[str, tuple[tuple[str, ...], list[str]]] = {
        "dump jsonl": (("dumps",), ["dump", str(DUMP), "--format", "jsonl"]),
        "dump table": (("dumps",), ["dump", str(_wide_segment(folder)), "--format", "table"]),
        "dump dump-log": (("dumps",), ["dump", str(DUMP / "my-topic-0"), "--format", "dump-log"]),
        "groups": (("dumps",), ["groups", str(DUMP)]),
        "lag": (("dumps",), ["lag", str(DUMP), "--format", "jsonl"]),
        "groups html": (("dumps", "report"), ["groups", str(DUMP), *html]),
        "lag html": (("dumps", "report"), ["lag", str(DUMP), *html]),
        "transactions": (("dumps",), ["transactions", str(DUMP)]),
        "tiered": (("dumps",), ["tiered", str(TIERED / "logs"), str(TIERED / "remote")]),
        "tiered html": (("dumps",), ["tiered", str(TIERED / "logs"), *html]),
        "downgrade-check": (("dumps",), ["downgrade-check", str(DUMP), "--to", "3.9"]),
        "lint": (("generator",), ["lint", specs, specs]),
        "validate": (("generator",), ["validate", "--specs", specs]),
        "generate": (("generator",), ["generate", "--specs", str(SPECS), "--out", "out"]),
    }
    answers = {
        name: (needs, args, _codegen_without("_none_", *args, cwd=folder))
        for name, (needs, args) in table.items()
    }
    return folder, answers


def _extras_modules() -> list[tuple[str, str]]:
    return sorted({(e, m) for e, ms in EXTRA_MODULES.items() if e != "spark" for m in ms})


@pytest.mark.parametrize(("extra", "module"), _extras_modules())
def test_each_library_hidden_in_each_command(
    extra: str, module: str, commands: tuple[Path, dict[str, Command]]
) -> None:
    """Without one library, every command that imports it says in one line which extra to
    install (exit status 1); one that runs without it gives the same answer as with it."""
    folder, answers = commands
    for name, (needs, args, full) in answers.items():
        hidden = _codegen_without(module, *args, cwd=folder)
        assert "Traceback" not in hidden.stderr, (name, hidden.stderr)
        if (hidden.returncode, _untimed(hidden.stdout)) == (full.returncode, _untimed(full.stdout)):
            continue  # it does not need the library (or has a path without it)
        owner = next((e for e in needs if module in EXTRA_MODULES[e]), None)
        owner = owner or next(e for e, ms in EXTRA_MODULES.items() if module in ms)
        command = args[0] + (" --format html" if owner == "report" else "")
        assert (hidden.returncode, hidden.stdout) == (1, ""), (name, hidden.stderr)
        assert hidden.stderr == (
            f"Error: python -m codegen {command} needs the {owner} extra: "
            f"pip install 'kafka-specgen[{owner}]' ({module} is not installed)\n"
        ), name


def _untimed(text: str) -> str:
    return re.sub(r"\bin [0-9.]+ ?m?s\b", "in (time)", text)


def test_extras_name_the_libraries_pyproject_installs() -> None:
    """``EXTRA_MODULES`` (what the guard names) is what pyproject.toml's extras install, and
    ``all`` is every command's extras: all but Spark."""
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]

    def modules(extra: str) -> set[str]:
        """The libraries ``extra`` names itself (``kafka-specgen[...]`` entries left out)."""
        names = (re.split(r"[\[<>=! ]", r, maxsplit=1)[0] for r in extras[extra])
        return {n.replace("-", "_") for n in names if n != "kafka-specgen"}

    for extra, names in EXTRA_MODULES.items():
        assert modules(extra) == set(names), extra
    assert extras["all"] == ["kafka-specgen[generator,dumps,report]"]
