"""The native decoder: one C engine (``engine.c``) driven by layout tables.

The tables come from ``codegen.native_tables`` and are carried by every generated module;
``codegen.runtime.backends`` turns them into the readers of the native backend. This package
holds the engine's source and its build (``python -m codegen.native.build``) and never
imports the generator. ``engine()`` is None when the engine is not built.

A copy of the package imported from a zip (Spark's ``addPyFile``: ``spark_udfs.session``'s
``ship_package``) holds no compiled module, and Python imports none from a zip: that copy takes
the compiled modules of an installed copy of the package further down ``sys.path`` when they
were built from the same C sources as the zip's (:func:`sources_digest`, written into the zip
as :data:`SHIPPED_DIGEST`), so a shipped package no longer hides the engine installed on the
workers.
"""

from __future__ import annotations

import os
import sys
from importlib import import_module
from types import ModuleType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathlib import Path

COMPILED_MODULES = ("_engine", "_records", "_jsontext")
"""The compiled modules, in the order they load (``_records`` imports ``_engine``'s C API)."""
SHIPPED_DIGEST = "SHIPPED_SOURCES_DIGEST"
"""The file of a shipped zip's ``codegen/native`` holding the :func:`sources_digest` of the
driver's engine sources."""


def engine() -> ModuleType | None:
    """The compiled engine module, or None when it has not been built."""
    try:
        return import_module("codegen.native._engine")
    except ImportError:
        return None


def sources_digest(folder: Path) -> str | None:
    """The SHA-256 of the engine's C sources in ``folder`` (every ``.c`` and ``.h`` file, by
    name and content), or None when it holds none. The build compiles it into each module as
    ``SOURCES_DIGEST``."""
    import hashlib

    sources = sorted(p for p in folder.iterdir() if p.suffix in (".c", ".h"))
    if not sources:
        return None
    digest = hashlib.sha256()
    for path in sources:
        data = path.read_bytes()
        digest.update(f"{path.name}\0{len(data)}\0".encode())
        digest.update(data)
    return digest.hexdigest()


class EngineBuildMismatch(RuntimeError):
    """A compiled module of the engine was built from other C sources than those beside it
    (sources pulled or edited since the last build): it would give wrong answers, so it does
    not load. The text names the fix: ``python -m codegen.native.build``."""


_newest_sources: dict[str, int] = {}
"""Per folder, the newest modification time (ns) of the C sources in it (-1: none), read once
a process by :func:`_check_build`."""


def _newest_source(folder: str) -> int:
    if folder not in _newest_sources:
        with os.scandir(folder) as entries:
            times = [e.stat().st_mtime_ns for e in entries if e.name.endswith((".c", ".h"))]
        _newest_sources[folder] = max(times, default=-1)
    return _newest_sources[folder]


def _check_build(module: str, digest: str, folder: str | None = None) -> None:
    """Called by each compiled module (``shared.h``'s ``check_build``) as it loads, with the
    :func:`sources_digest` it was built from: :class:`EngineBuildMismatch` where the C sources
    in ``folder`` (this package's) are not those. Only where a source is newer than the module
    (a pull or an edit since the build) are the sources read and hashed; a folder without
    sources (an install that ships none) and a shipped zip's copy (checked by
    :func:`_installed_engine`) have nothing to check. Once a process: one listing of the
    folder and a stat of each source and module (some 0.2 ms)."""
    if _shipped is not None:
        return
    folder = folder or os.path.dirname(__file__)
    newest = _newest_source(folder)
    if newest < 0:
        return
    from importlib.machinery import EXTENSION_SUFFIXES

    try:
        built = os.stat(os.path.join(folder, module + EXTENSION_SUFFIXES[0])).st_mtime_ns
    except OSError:  # built elsewhere: the sources decide
        built = -1
    if newest <= built:
        return
    from pathlib import Path

    current = sources_digest(Path(folder))
    if current is None or current == digest:
        return
    raise EngineBuildMismatch(
        f"the native engine's {module} was built from other C sources than those in {folder} "
        f"(built from {digest[:12] or 'unknown sources'}, the sources are {current[:12]}): "
        "rebuild it with `python -m codegen.native.build` (an installed package: reinstall it)"
    )


def _installed_engine(shipped: str) -> str | None:
    """Load the compiled modules of the first installed copy of this package on ``sys.path``
    that has them, as this package's, when each was built from the sources whose digest is
    ``shipped``; return why not, or None when they loaded."""
    import importlib.machinery
    import importlib.util

    suffix = importlib.machinery.EXTENSION_SUFFIXES[0]
    for entry in sys.path:  # the zip's own entry has no file of that name
        folder = os.path.join(entry or ".", "codegen", "native")
        if not os.path.isfile(os.path.join(folder, "_engine" + suffix)):
            continue
        package = sys.modules[__name__]
        # _records' init imports _engine's C API by attributes from ``codegen`` down, which
        # the import system sets only once this package's import ends.
        sys.modules["codegen"].native = package  # type: ignore[attr-defined]
        for module in COMPILED_MODULES:
            name = f"{__name__}.{module}"
            spec = importlib.util.spec_from_file_location(
                name, os.path.join(folder, module + suffix)
            )
            problem: str | None
            if spec is None or spec.loader is None or not os.path.isfile(spec.origin or ""):
                problem = f"the installed engine in {folder} has no {module}{suffix}"
            else:
                found = importlib.util.module_from_spec(spec)  # runs its init
                spec.loader.exec_module(found)
                problem = (
                    None
                    if getattr(found, "SOURCES_DIGEST", None) == shipped
                    else f"the engine installed in {folder} was not built from the shipped "
                    "package's C sources: install the same version there, or ship no package"
                )
            if problem is not None:
                for done in COMPILED_MODULES:
                    sys.modules.pop(f"{__name__}.{done}", None)
                    package.__dict__.pop(done, None)
                return problem
            sys.modules[name] = found
            setattr(package, module, found)
        return None
    return "no installed copy of the package on sys.path has the compiled engine"


def _shipped_digest() -> str | None:
    """The digest a shipped zip's copy of this package carries, or None (not a shipped zip)."""
    loader = globals().get("__loader__")
    if os.path.isdir(os.path.dirname(__file__)) or loader is None:
        return None
    try:
        data: bytes = loader.get_data(os.path.join(os.path.dirname(__file__), SHIPPED_DIGEST))
    except OSError:
        return None
    return data.decode().strip() or None


installed_engine_problem: str | None = None
"""In a shipped zip's copy, why it does not use an installed engine (None: it does, or this
copy is not shipped)."""
_shipped = _shipped_digest()
if _shipped is not None:
    installed_engine_problem = _installed_engine(_shipped)
