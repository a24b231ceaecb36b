"""Compile the native modules in place: ``python -m codegen.native.build``.

It uses the running interpreter's compiler settings (sysconfig: CC, CCSHARED, the include
folder and the extension suffix; ``CC`` in the environment wins) at -O2, then any flags
``SPECGEN_NATIVE_CFLAGS`` adds (``make sanitize`` adds AddressSanitizer and
UndefinedBehaviorSanitizer there), and writes each module
(``_engine<suffix>`` from ``engine.c``, ``_records<suffix>`` from ``records.c``,
``_jsontext<suffix>`` from ``jsontext.c``) next to its source, the digest of the C sources in
it (``SOURCES_DIGEST``: :func:`codegen.native.sources_digest`). The wheel build
(codegen/hatch_hook.py) calls :func:`build` for each module the same way; ``pip install -e``
builds them in place. ``SPECGEN_NATIVE_BUILD`` tells the wheel build what to do
(:func:`native_build_mode`): ``auto`` builds the engine where a compiler works and makes a pure
wheel otherwise, ``required`` fails without the engine, ``skip`` makes the pure wheel.
"""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import subprocess
import sys
import sysconfig
import time
from pathlib import Path

from codegen.native import sources_digest

HERE = Path(__file__).resolve().parent
MODULES = {
    "_engine": HERE / "engine.c",
    "_records": HERE / "records.c",
    "_jsontext": HERE / "jsontext.c",
}
"""Module name -> its C source: the table-driven decoder, the dump record loops and the jsonl
printer (each includes ``shared.h``, next to them; ``records.c`` includes its parts too:
``v2_records.h``, ``crc32c.h``, ``log_entries.h``, ``loop_state.h``, ``user_loop.h``,
``record_loop.h``, ``record_columns.h``, ``batch_columns.h``, ``header_ends.h``,
``newest_batches.h``, ``key_store.h``, ``superseded_commits.h``, ``utf8_strict.h``,
``commit_check.h``, ``commit_kinds.h``, ``row_offsets.h``, ``row_flags.h``, ``effect_history.h``,
``rows_left.h``, ``commit_effects.h``, ``live_keys.h``, ``record_kinds.h``, ``step_index.h``,
``log_end_lags.h``, ``burrow_windows.h``, ``key_order.h``, ``slot_objects.h``)."""
SOURCE = MODULES["_engine"]
EXTRA_FLAGS = "SPECGEN_NATIVE_CFLAGS"
"""Environment variable: compiler flags added after the default ones (e.g. sanitizers)."""


NATIVE_BUILD_VARIABLE = "SPECGEN_NATIVE_BUILD"
NATIVE_BUILD_MODES = ("auto", "required", "skip")


class CompilerNotFound(RuntimeError):
    """No C compiler to build the engine with."""


class CompilerFailed(RuntimeError):
    """The compiler ran and failed; the text holds its command, exit status and output."""

    def __init__(self, source: str, command: list[str], returncode: int, output: str) -> None:
        shown = output.strip() or "(the compiler printed nothing)"
        super().__init__(
            f"compiling {source} failed with exit status {returncode}: {shlex.join(command)}\n"
            f"{shown}"
        )
        self.command = command
        self.returncode = returncode
        self.output = output


def native_build_mode() -> str:
    """``SPECGEN_NATIVE_BUILD`` (``auto`` when unset): ValueError names the accepted values."""
    mode = os.environ.get(NATIVE_BUILD_VARIABLE, "").strip().lower() or "auto"
    if mode not in NATIVE_BUILD_MODES:
        raise ValueError(
            f"{NATIVE_BUILD_VARIABLE}={os.environ[NATIVE_BUILD_VARIABLE]!r} is not one of "
            f"{', '.join(NATIVE_BUILD_MODES)}: auto builds the native engine where a C compiler "
            "works (else a pure-Python wheel), required fails without it, skip builds the "
            "pure-Python wheel"
        )
    return mode


def output_path(module: str = "_engine") -> Path:
    suffix = sysconfig.get_config_var("EXT_SUFFIX") or ".so"
    return HERE / f"{module}{suffix}"


def compiler() -> list[str]:
    """The C compiler command (``CC`` from the environment, else the interpreter's), or
    CompilerNotFound saying what is missing."""
    chosen = os.environ.get("CC")
    cc = shlex.split(chosen or sysconfig.get_config_var("CC") or "cc")
    if not cc or shutil.which(cc[0]) is None:
        where = "CC names" if chosen else "the interpreter was built with"
        raise CompilerNotFound(
            f"no C compiler: {where} {' '.join(cc) or 'none'!r}, which is not on PATH; "
            "install one (e.g. apt-get install gcc) or use the pure backend"
        )
    return cc


def build_command(
    debug: bool = False, out: Path | None = None, module: str = "_engine"
) -> list[str]:
    include = sysconfig.get_paths()["include"]
    flags = ["-O0", "-g"] if debug else ["-O2"]
    return [
        *compiler(),
        *shlex.split(sysconfig.get_config_var("CCSHARED") or "-fPIC"),
        *flags,
        f'-DSPECGEN_SOURCES_DIGEST="{sources_digest(HERE)}"',
        "-Wall",
        "-Wextra",
        "-Wno-unused-parameter",
        "-Wno-missing-field-initializers",
        "-shared",
        *shlex.split(os.environ.get(EXTRA_FLAGS, "")),
        "-I",
        include,
        str(MODULES[module]),
        "-o",
        str(out or output_path(module)),
    ]


def build(
    debug: bool = False, out: Path | None = None, module: str = "_engine"
) -> tuple[Path, float]:
    """Compile one module (the engine by default; to ``out``, by default in place); return
    the built file and the seconds the compiler took."""
    command = build_command(debug, out, module)
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        output = "\n".join(t.strip() for t in (done.stdout, done.stderr) if t.strip())
        raise CompilerFailed(MODULES[module].name, command, done.returncode, output)
    if done.stderr.strip():
        print(done.stderr.strip(), file=sys.stderr)
    return out or output_path(module), seconds


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--debug", action="store_true", help="-O0 -g instead of -O2")
    args = parser.parse_args()
    for module in MODULES:
        try:
            path, seconds = build(args.debug, module=module)
        except CompilerNotFound as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        except RuntimeError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
        print(f"built {path.name} in {seconds:.2f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
