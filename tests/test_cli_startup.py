"""What a command imports: only its own module, and never pandas.

Interpreter start-up and imports are part of every command's cost (issue 27: the command line
at the engine's speed). Each case runs ``python -m codegen`` in a subprocess and lists the
modules it imported by the time it exits, so an eager import added anywhere on a command's path
shows here.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from test_forensics_transactions import write_cluster

from codegen.cli import SUBCOMMANDS, cli, load_subcommand
from codegen.dumps.coordinator import COORDINATOR_TOPICS
from spark_udfs.synth import write_consumer_offsets

RUN_AND_LIST_MODULES = """\
import atexit, gc, json, os, sys
listing = sys.argv[1]
def _listed():
    with open(listing, "w") as out:
        pool = None
        if "pyarrow" in sys.modules:
            pool = sys.modules["pyarrow"].default_memory_pool().backend_name
        listed = {"modules": sorted(sys.modules), "frozen": gc.get_freeze_count(), "pool": pool}
        listed["blas_threads"] = os.environ.get("OPENBLAS_NUM_THREADS")
        json.dump(listed, out)
atexit.register(_listed)
sys.argv = ["codegen", *sys.argv[2:]]
from codegen.__main__ import main
main()
"""

COMMAND_MODULES = {sub.module for sub in SUBCOMMANDS.values()}
COORDINATOR_FOLDERS = set(COORDINATOR_TOPICS.values())
HEAVY = {"pandas", "numpy", "pyarrow", "jsonschema", "jinja2", "rich", "orjson", "generated"}
# crc32c's __init__ imports importlib.metadata (and email) for its __version__: the dump
# path loads its C function alone. pyarrow.acero imports pyarrow.dataset (Table.group_by
# imports it): the views group rows by key codes of their own.
NEVER_ON_THE_DUMP_PATH = [
    "pandas",
    "crc32c",
    "importlib.metadata",
    "pyarrow.acero",
    "pyarrow.dataset",
]


@pytest.fixture(scope="module")
def dump(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    folder = tmp_path_factory.mktemp("dump")
    write_consumer_offsets(folder, records=300, partitions=1, groups=4)
    yield folder


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_cluster(tmp_path_factory.mktemp("cluster"))


def _run(tmp_path: Path, *args: str, ok: tuple[int, ...] = (0,)) -> dict[str, Any]:
    """What the command imported by its exit and how many objects it froze for it."""
    listing = tmp_path / "modules.json"
    proc = subprocess.run(
        [sys.executable, "-c", RUN_AND_LIST_MODULES, str(listing), *args],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode in ok, proc.stderr[-3000:]
    listed: dict[str, Any] = json.loads(listing.read_text())
    return listed


def _imported(tmp_path: Path, *args: str, ok: tuple[int, ...] = (0,)) -> set[str]:
    return set(_run(tmp_path, *args, ok=ok)["modules"])


def _top(modules: set[str]) -> set[str]:
    return {m.partition(".")[0] for m in modules}


def test_help_imports_no_command_module(tmp_path: Path) -> None:
    modules = _imported(tmp_path, "--help")
    assert not modules & COMMAND_MODULES
    assert not _top(modules) & HEAVY
    assert "codegen.lint" not in modules and "codegen.dumps" not in modules


def test_dump_help_imports_the_command_and_not_its_loop_or_printers(tmp_path: Path) -> None:
    # dump --help needs the command's options only: its loop (codegen.dumps.run) and the
    # printers it pulls in (orjson among them) came onto this path once, for about 4 % more
    # instructions of --help (callgrind: 382 M -> 399 M).
    modules = _imported(tmp_path, "dump", "--help")
    assert "codegen.dumps.command" in modules
    for name in [
        "codegen.dumps.run",
        "codegen.dumps.jsonl",
        "codegen.dumps.table",
        "codegen.dumps.dumplog_json",
        "codegen.dumps.views",
        "codegen.forensics",
        "codegen.lint",
        *HEAVY,
        *NEVER_ON_THE_DUMP_PATH,
    ]:
        assert not {m for m in modules if m == name or m.startswith(f"{name}.")}, name


def test_help_lists_every_command_with_its_own_summary() -> None:
    # The list of --help comes from SUBCOMMANDS' summaries: they must say what the commands'
    # own help says first.
    for name, sub in SUBCOMMANDS.items():
        command = load_subcommand(name)
        assert command.name == name
        first = (command.help or "").split("\n\n")[0]
        assert " ".join(first.split()) == sub.summary, name
    assert set(SUBCOMMANDS) <= set(cli.list_commands(None))  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("args", "ok", "not_imported"),
    [
        # numpy.ma (pa.array of a numpy array) and dateutil (pyarrow inferring a Python
        # value's type): 62 M instructions the views' floor does not pay; the user topics'
        # decoders (UserRecord's dataclass, 6 M) for a topic map's topics only
        (
            ["dump", "{dump}", "-q", "--compacted"],
            (0,),
            [
                "codegen.forensics",
                "codegen.lint",
                "numpy.ma",
                "dateutil",
                "codegen.dumps.user_topics",
                # the map's model and parser, for a map only (17 M instructions)
                "codegen.dumps.topic_map",
            ],
        ),
        (
            ["dump", "{dump}", "-q", "--format", "jsonl"],
            (0,),
            [
                "codegen.forensics",
                "pyarrow",
                "codegen.dumps.user_topics",
                "codegen.dumps.topic_map",
            ],
        ),
        # the HTML report (and its plotting) for --format html only
        (
            ["groups", "{dump}", "--format", "jsonl"],
            (0,),
            [
                "codegen.lint",
                "codegen.dumps.command",
                "codegen.forensics.report",
                "numpy.ma",
                "dateutil",
                # the cluster's metadata, read for a share group's topic names only
                "codegen.forensics.cluster",
            ],
        ),
        # downgrade's live records (views.live, forensics.loaded) for downgrade-check only
        (
            ["lag", "{dump}", "--format", "jsonl"],
            (0,),
            [
                "codegen.lint",
                "codegen.dumps.command",
                "codegen.forensics.report",
                "codegen.forensics.coordinator_partitions",
                "codegen.dumps.views.live",
                # pa.array of a numpy array imports it (44 M instructions)
                "numpy.ma",
                # the groups' replay (--as-of's parser is the inputs')
                "codegen.forensics.groups",
                "codegen.forensics.group_timelines",
                "codegen.forensics.cluster",
            ],
        ),
        # the groups' replay and the share readers it brings
        # (34 M of 1.51 G instructions on the broker run's logs)
        (
            ["transactions", "{cluster}", "--format", "jsonl"],
            (0, 1),
            ["codegen.lint", "codegen.dumps.command", "codegen.forensics.groups"],
        ),
        (
            ["downgrade-check", "{dump}", "--to", "3.9", "--format", "json"],
            (0, 1, 3),
            ["codegen.lint", "codegen.dumps.command", "codegen.forensics.groups"],
        ),
        (
            ["dump", "{segment}", "-q", "--format", "dump-log"],
            (0,),
            ["codegen.forensics", "pyarrow"],
        ),
        (["lint", "--help"], (0,), ["codegen.dumps", "codegen.forensics", "pyarrow", "crc32c"]),
    ],
    ids=[
        "dump --compacted",
        "dump jsonl",
        "groups",
        "lag",
        "transactions",
        "downgrade-check",
        "dump-log",
        "lint",
    ],
)
def test_a_command_imports_its_own_module_only_and_never_pandas(
    tmp_path: Path,
    dump: Path,
    cluster: Path,
    args: list[str],
    ok: tuple[int, ...],
    not_imported: list[str],
) -> None:
    segment = dump / "__consumer_offsets-0" / "00000000000000000000.log"
    argv = [a.format(dump=dump, segment=segment, cluster=cluster) for a in args]
    modules = _imported(tmp_path, *argv, ok=ok)
    assert SUBCOMMANDS[argv[0]].module in modules
    for name in [*not_imported, *NEVER_ON_THE_DUMP_PATH]:
        assert not {m for m in modules if m == name or m.startswith(f"{name}.")}, name


def test_the_crc32c_function_loaded_alone_is_the_package_s() -> None:
    import crc32c

    from codegen.dumps.batches import CRC32C

    data = b"123456789"
    assert CRC32C(data) == crc32c.crc32c(data) == 0xE3069283  # the check value of CRC-32C
    assert CRC32C(memoryview(data)[4:], CRC32C(data[:4])) == CRC32C(data)
    assert CRC32C is not crc32c.crc32c  # loaded without the package (its __init__)


# ---------------------------------------------------------------------------------------- exit

VIEW_COMMANDS = [
    ["dump", "{dump}", "--compacted"],
    ["groups", "{dump}"],
    ["lag", "{dump}", "--format", "jsonl"],
    ["downgrade-check", "{dump}", "--to", "3.4"],
    ["downgrade-check", "{dump}/missing", "--to", "3.4"],
    ["dump", "{dump}", "--format", "jsonl"],
]
VIEW_IDS = ["dump --compacted", "groups", "lag", "downgrade-check", "bad input", "dump jsonl"]


@pytest.mark.parametrize("args", VIEW_COMMANDS, ids=VIEW_IDS)
def test_a_command_ends_with_all_its_output_and_its_status(dump: Path, args: list[str]) -> None:
    # main() freezes the objects the run made so the interpreter's teardown skips collecting
    # them: what the command wrote and its exit status are those of the same command run in
    # process, where no teardown follows.
    argv = [a.format(dump=dump) for a in args]
    proc = subprocess.run([sys.executable, "-m", "codegen", *argv], capture_output=True)
    in_process = CliRunner().invoke(cli, argv)
    assert proc.stdout or proc.returncode == 2, proc.stderr  # output, or a bad input's error
    assert (proc.returncode, proc.stdout, proc.stderr.decode()) == (
        in_process.exit_code,
        in_process.stdout_bytes,
        in_process.stderr,
    )


def test_the_objects_of_a_run_are_frozen_before_the_interpreter_s_teardown(
    tmp_path: Path, dump: Path
) -> None:
    assert _run(tmp_path, "groups", str(dump))["frozen"] > 10_000


def test_a_command_s_native_libraries_load_with_its_settings_unless_the_user_chose(
    tmp_path: Path, dump: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # mimalloc, pyarrow's default, gives each freed chunk's pages back and faults them in
    # again (about 0.4 s of system time in lag on a 1 M-record dump); OpenBLAS's threads spin
    # as numpy loads it (about 0.1 CPU s of every command).
    for name in ("ARROW_DEFAULT_MEMORY_POOL", "OPENBLAS_NUM_THREADS"):
        monkeypatch.delenv(name, raising=False)
    ran = _run(tmp_path, "lag", str(dump), "--format", "jsonl")
    assert (ran["pool"], ran["blas_threads"]) == ("system", "1")
    monkeypatch.setenv("ARROW_DEFAULT_MEMORY_POOL", "mimalloc")
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "2")
    ran = _run(tmp_path, "lag", str(dump), "--format", "jsonl")
    assert (ran["pool"], ran["blas_threads"]) == ("mimalloc", "2")


def test_a_command_s_imports_are_frozen_as_the_program_and_the_collector_runs_on() -> None:
    # Long-lived module objects out of the collector's way during the run; the run's own
    # objects are still collected. cli invoked from Python (a caller in process) freezes
    # nothing of the caller's.
    code = (
        "import gc, sys\n"
        "from click.testing import CliRunner\n"
        "from codegen import cli\n"
        "before = gc.get_freeze_count()\n"
        "CliRunner().invoke(cli.cli, ['lag', '--help'])\n"
        "called = gc.get_freeze_count()\n"
        "sys.argv = ['codegen', 'groups', '--help']\n"
        "try:\n"
        "    cli.main()\n"
        "except SystemExit:\n"
        "    pass\n"
        "print(before, called, gc.get_freeze_count(), gc.isenabled())\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    before, called, after, enabled = proc.stdout.split()[-4:]
    assert (int(before), int(called), enabled) == (0, 0, "True")
    assert int(after) > 10_000


@pytest.mark.parametrize("args", VIEW_COMMANDS[:4], ids=VIEW_IDS[:4])
def test_a_reader_that_stops_early_makes_a_failure_without_traceback(
    dump: Path, args: list[str]
) -> None:
    argv = [a.format(dump=dump) for a in args]
    proc = subprocess.Popen(
        [sys.executable, "-m", "codegen", *argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # as `| head -0`: every write fails with EPIPE
    stderr = proc.stderr.read().decode()
    assert proc.wait() != 0
    assert "Traceback" not in stderr and "Exception ignored" not in stderr, stderr


def test_pandas_stays_importable_in_process_after_the_command_line_ran(tmp_path: Path) -> None:
    # main() fails `import pandas` while it runs, and only then: a caller in the same process
    # (a notebook, Spark code) still gets pandas afterwards.
    code = (
        "import sys\n"
        "from codegen.cli import main\n"
        "sys.argv = ['codegen', '--version']\n"
        "try:\n"
        "    main()\n"
        "except SystemExit:\n"
        "    pass\n"
        "import pandas\n"
        "print(pandas.__name__)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    if "No module named 'pandas'" in proc.stderr and "command line" not in proc.stderr:
        pytest.skip("pandas is not installed")
    assert (proc.returncode, proc.stdout.splitlines()[-1]) == (0, "pandas"), proc.stderr


# --------------------------------------------------------------------------- generated modules


def test_record_types_import_their_classes_on_first_use() -> None:
    # The package's index names each spec's type, API key and folder, so a topic's record
    # types are known without importing a module; a type's two modules load when it is used.
    code = (
        "import sys\n"
        "from codegen.dumps.coordinator import record_types\n"
        "types = record_types('__consumer_offsets')\n"
        "before = sorted(m for m in sys.modules if m.startswith('generated.'))\n"
        "name = types[1].name\n"
        "after = sorted(m for m in sys.modules if m.startswith('generated.'))\n"
        "print(json.dumps([sorted(types), before, after, name]))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", f"import json\n{code}"], capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr
    ids, before, after, name = json.loads(proc.stdout)
    assert {0, 1, 2} <= set(ids)  # offset commits (0, 1) and group metadata (2), among others
    assert before == []
    assert after == ["generated.offset_commit_key", "generated.offset_commit_value"]
    assert name == "OffsetCommit"


def test_a_package_without_kinds_gives_the_same_record_types() -> None:
    # A package generated before the index named the kinds: its classes are imported instead.
    from codegen.dumps.coordinator_types import _all_record_types, _imported_record_types
    from generated import MESSAGES

    assert MESSAGES.kinds is not None
    lazy = _all_record_types("generated")
    imported = _imported_record_types(MESSAGES)
    assert sorted(lazy) == sorted(imported) == sorted(COORDINATOR_FOLDERS)
    for folder in imported:
        assert dict(lazy[folder]) == dict(imported[folder]), folder


# --------------------------------------------------------------------------- the allocator

HEAP_GROWTH_OF_A_16_MIB_BLOCK = """\
import ctypes, sys
import codegen.cli
codegen.cli._native_library_settings(sys.argv[1])
libc = ctypes.CDLL(None)
libc.sbrk.restype = ctypes.c_void_p
libc.sbrk.argtypes = [ctypes.c_ssize_t]
libc.malloc.restype = ctypes.c_void_p
libc.malloc.argtypes = [ctypes.c_size_t]
before = libc.sbrk(0)
block = libc.malloc(16 << 20)
print(libc.sbrk(0) - before)
"""


def _heap_growth(command: str, **env: str) -> int:
    """How far the heap grows for a 16 MiB block once ``command``'s settings are made: glibc
    maps a block that size on its own by default (no growth), and takes it from the heap where
    a command keeps the memory it frees."""
    proc = subprocess.run(
        [sys.executable, "-c", HEAP_GROWTH_OF_A_16_MIB_BLOCK, command],
        capture_output=True,
        text=True,
        check=True,
        env={k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")} | env,
    )
    return int(proc.stdout)


@pytest.mark.skipif(
    not (
        getattr(os, "confstr", None)
        and (os.confstr("CS_GNU_LIBC_VERSION") or "").startswith("glibc")
    ),
    reason="glibc's allocator",
)
def test_a_command_reading_logs_keeps_the_memory_it_frees() -> None:
    for command in ("dump", "lag", "groups", "transactions"):
        assert _heap_growth(command) >= 16 << 20, command
    for command in ("generate", "lint", ""):  # no logs: the allocator as it comes
        assert _heap_growth(command) == 0, command
    # the user's own tuning wins
    assert _heap_growth("lag", MALLOC_ARENA_MAX="2") == 0
    assert _heap_growth("lag", GLIBC_TUNABLES="glibc.malloc.check=0") == 0
