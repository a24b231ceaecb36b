"""The JVM side of the replay: which harness classes a release needs, compiled with the user's
JDK on first use, and one run of them.

The sources are in ``java/`` next to this module (shipped with the package). A release's API
generation decides which of them compile against its jars:

============================  ==============================================================
every release                 ``Replay`` (the request and the answer), ``PartitionLog``,
                              ``Kafka`` (the log and replica manager stand-ins, names that
                              moved), ``Captured`` and an slf4j binding (Kafka's own WARN and
                              ERROR lines), ``OldCoordinators`` (the Scala group coordinator's
                              load up to 4.0, the transaction coordinator's in every release)
3.6 and later                 ``NewCoordinators`` (the coordinator runtime's load path) and
                              ``NewGroups`` (GroupCoordinatorShard; its configuration from its
                              ConfigDefs from 3.9), with ``NewGroups36``, ``NewGroups37`` or
                              ``NewGroups38`` for those releases' constructor arguments
4.0 and later                 ``Shares`` (ShareCoordinatorShard)
3.3 and later (KRaft)         ``Metadata`` (MetadataRecordSerde, MetadataDelta)
============================  ==============================================================

The compiled classes are kept in the cache per release and per source digest.
"""

from __future__ import annotations

import hashlib
import json
import os
import resource
import shutil
import subprocess
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any, Final

from codegen.forensics.replay.jars import JarSet, ReplayUnavailableError, cache_dir

__all__ = [
    "HarnessError",
    "JavaMissingError",
    "PartSpec",
    "compile_harness",
    "harness_classes",
    "java_tools",
    "run_harness",
]

_PACKAGE: Final = "specgen.replay."
_COMMON: Final = (
    "org/slf4j/impl/StaticLoggerBinder.java",
    "specgen/replay/Replay.java",
    "specgen/replay/Part.java",
    "specgen/replay/Captured.java",
    "specgen/replay/Kafka.java",
    "specgen/replay/PartitionLog.java",
    "specgen/replay/OldCoordinators.java",
)
_JVM_OPTIONS: Final = ("-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xss4m")
"""C1 only: a replay is short, and the C2 compiler's threads cost more than they give there."""


class JavaMissingError(ReplayUnavailableError):
    """No ``java`` / ``javac`` 17 or later (JAVA_HOME or the PATH)."""


class HarnessError(ReplayUnavailableError):
    """The harness did not compile against the release's jars, or its JVM died."""


@dataclass(frozen=True, slots=True)
class PartSpec:
    """One part of a replay request: a harness class and the partitions it loads."""

    coordinator: str
    harness: str
    partitions: list[dict[str, Any]]


def _version_key(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in version.split("."))


def harness_classes(release: str) -> dict[str, str]:
    """coordinator -> harness class for ``release``: ``group-old``, ``group-new``,
    ``transaction``, ``share``, ``metadata`` (the ones the release has)."""
    v = _version_key(release)
    out = {"transaction": _PACKAGE + "OldCoordinators$Transactions"}
    if v < (4, 1):
        out["group-old"] = _PACKAGE + "OldCoordinators$Groups"
    if v >= (3, 6):
        special: dict[tuple[int, ...], str] = {
            (3, 6): "NewGroups36",
            (3, 7): "NewGroups37",
            (3, 8): "NewGroups38",
        }
        out["group-new"] = _PACKAGE + special.get(v[:2], "NewGroups")
    if v >= (4, 0):
        out["share"] = _PACKAGE + "Shares"
    if v >= (3, 3):
        out["metadata"] = _PACKAGE + "Metadata"
    return out


def _sources(release: str) -> list[str]:
    files = list(_COMMON)
    for cls in harness_classes(release).values():
        name = cls.removeprefix(_PACKAGE).split("$")[0]
        path = f"specgen/replay/{name}.java"
        if name.startswith("NewGroups"):
            files += ["specgen/replay/NewCoordinators.java", "specgen/replay/NewGroups.java"]
        if name == "Shares":
            files.append("specgen/replay/NewCoordinators.java")
        files.append(path)
    return sorted(set(files))


def java_tools() -> tuple[str, str]:
    """(java, javac) of JAVA_HOME or the PATH, version 17 or later."""
    home = os.environ.get("JAVA_HOME")
    java = javac = None
    if home:
        java = str(Path(home) / "bin" / "java") if (Path(home) / "bin" / "java").is_file() else None
        cand = Path(home) / "bin" / "javac"
        javac = str(cand) if cand.is_file() else None
    java = java or shutil.which("java")
    javac = javac or shutil.which("javac")
    if java is None or javac is None:
        missing = "java" if java is None else "javac"
        raise JavaMissingError(
            f"the replay runs Kafka's own classes and needs a JDK 17 or later: no {missing} in "
            "JAVA_HOME or on the PATH (e.g. apt-get install openjdk-17-jdk-headless, or set "
            "JAVA_HOME); downgrade-check without --replay needs no Java"
        )
    out = subprocess.run([java, "-version"], capture_output=True, text=True, check=False)
    text = out.stderr or out.stdout
    major = _java_major(text)
    if major is not None and major < 17:
        raise JavaMissingError(
            f"{java} is Java {major}; the replay needs 17 or later (Kafka 4's classes are built "
            "for 17): set JAVA_HOME to a newer JDK"
        )
    return java, javac


def _java_major(text: str) -> int | None:
    for token in text.replace('"', " ").split():
        head = token.split(".")[0]
        if head.isdigit() and int(head) > 1:
            return int(head)
        if token.startswith("1.") and token[2:].split(".")[0].isdigit():
            return int(token[2:].split(".")[0])
    return None


def _source_root() -> Path:
    return Path(str(resources.files("codegen.forensics.replay").joinpath("java")))


def compile_harness(jars: JarSet, javac: str) -> Path:
    """The harness classes for ``jars``' release, compiled into the cache if not there yet."""
    root = _source_root()
    files = _sources(jars.release)
    digest = hashlib.sha256()
    for f in files:
        digest.update(f.encode() + b"\0" + (root / f).read_bytes())
    for jar in jars.jars:
        digest.update(jar.name.encode())
    out = cache_dir() / "harness" / f"{jars.release}-{digest.hexdigest()[:16]}"
    if (out / "classes" / "specgen" / "replay" / "Replay.class").is_file():
        return out / "classes"
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=out.parent, prefix=out.name + ".tmp"))
    done = subprocess.run(
        [javac, "--release", "17", "-nowarn", "-encoding", "UTF-8", "-d", str(tmp / "classes"),
         "-cp", jars.classpath, *(str(root / f) for f in files)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    if done.returncode != 0:
        shutil.rmtree(tmp, ignore_errors=True)
        raise HarnessError(
            f"the replay harness does not compile against Kafka {jars.release}'s jars "
            f"({jars.source}):\n{done.stderr.strip()[-3000:]}"
        )
    if out.exists():
        shutil.rmtree(tmp, ignore_errors=True)  # another process compiled it meanwhile
    else:
        tmp.replace(out)
    return out / "classes"


def run_harness(
    release: str, jars: JarSet, parts: Sequence[PartSpec], *, timeout_s: float = 3600
) -> dict[str, Any]:
    """One JVM replaying ``parts`` through ``release``'s classes; its JSON answer, with the
    wall time the run took (``wallMs``) and the JVM's CPU time (``cpuMs``)."""
    java, javac = java_tools()
    classes = compile_harness(jars, javac)
    request = {
        "release": release,
        "parts": [
            {"coordinator": p.coordinator, "harness": p.harness, "partitions": p.partitions}
            for p in parts
        ],
    }
    with tempfile.TemporaryDirectory(prefix="kafka-specgen-replay-") as tmp:
        path = Path(tmp) / "request.json"
        path.write_text(json.dumps(request))
        started = time.monotonic()
        cpu_before = resource.getrusage(resource.RUSAGE_CHILDREN)
        done = subprocess.run(
            [java, *_JVM_OPTIONS, "-cp", os.pathsep.join([str(classes), jars.classpath]),
             "specgen.replay.Replay", str(path)],
            capture_output=True, text=True, timeout=timeout_s, check=False,
        )  # fmt: skip
        wall = time.monotonic() - started
        cpu_after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0 or not done.stdout.strip():
        tail = "\n".join(done.stderr.strip().splitlines()[-30:])
        raise HarnessError(
            f"the replay JVM for Kafka {release} failed ({done.returncode}):\n{tail}"
        )
    answer: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    answer["wallMs"] = round(wall * 1000)
    cpu = (cpu_after.ru_utime - cpu_before.ru_utime) + (cpu_after.ru_stime - cpu_before.ru_stime)
    answer["cpuMs"] = round(cpu * 1000)
    return answer
