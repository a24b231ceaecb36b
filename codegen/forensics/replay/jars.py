"""The jars of a Kafka release, for replaying logs through its own code.

A release's class path is the runtime closure of ``org.apache.kafka:kafka_2.13:X`` (its
coordinators, storage, metadata and their libraries), plus Mockito, which stands in for the
broker's log and replica manager as Kafka's own loader tests do. ``jars.json`` (next to this
module, made by :mod:`codegen.forensics.replay.lock`) lists them per release with each jar's
SHA-256, for the releases the project covers; a patch release it does not list takes its line's
list with Kafka's own artifacts at the asked version, checked against Maven Central's ``.sha1``.

Where the jars come from, first match wins:

1. a folder the user gives (``jars=``, ``--kafka-jars``): any folder holding the release's jars
   by file name, such as a Kafka distribution's ``libs/`` (Mockito's jars may sit beside them
   or in the cache); nothing is fetched then;
2. the cache, ``$KAFKA_SPECGEN_CACHE`` or ``~/.cache/kafka-specgen`` (``maven/`` in Maven's
   layout), and read-only Maven repositories (``$KAFKA_SPECGEN_MAVEN_REPOS``, paths separated
   by ``os.pathsep``, and ``~/.m2/repository``);
3. Maven Central (``$KAFKA_SPECGEN_MAVEN_URL`` for a mirror), into the cache, unless
   ``$KAFKA_SPECGEN_OFFLINE`` is set.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
import urllib.error
import urllib.request
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any, Final

__all__ = [
    "MAVEN_CENTRAL",
    "Artifact",
    "JarSet",
    "JarsMissingError",
    "ReplayUnavailableError",
    "cache_dir",
    "jar_set",
    "locked_releases",
]

MAVEN_CENTRAL: Final = "https://repo1.maven.org/maven2"
_DOWNLOAD_TIMEOUT_S: Final = 60
_PARALLEL_DOWNLOADS: Final = 6


class ReplayUnavailableError(RuntimeError):
    """The replay cannot run here (no Java, no jars, a harness that does not build); the message
    says what to do."""


class JarsMissingError(ReplayUnavailableError):
    """A release's jars are not in the given folder, the cache or a Maven repository, and may
    not (offline) or could not be fetched."""


@dataclass(frozen=True, slots=True)
class Artifact:
    """A jar in Maven's coordinates (``group:artifact:version`` or with a classifier)."""

    group: str
    artifact: str
    version: str
    classifier: str = ""

    @classmethod
    def parse(cls, text: str) -> Artifact:
        parts = text.split(":")
        if len(parts) == 4:
            return cls(parts[0], parts[1], parts[3], parts[2])
        group, artifact, version = parts
        return cls(group, artifact, version)

    def __str__(self) -> str:
        middle = f":{self.classifier}" if self.classifier else ""
        return f"{self.group}:{self.artifact}{middle}:{self.version}"

    @property
    def file_name(self) -> str:
        tail = f"-{self.classifier}" if self.classifier else ""
        return f"{self.artifact}-{self.version}{tail}.jar"

    @property
    def path(self) -> str:
        """Its path in a Maven repository."""
        return f"{self.group.replace('.', '/')}/{self.artifact}/{self.version}/{self.file_name}"


@dataclass(frozen=True, slots=True)
class JarSet:
    """A release's class path for the replay, and where it came from."""

    release: str
    """The release whose jars these are (``3.9.0``)."""
    jars: tuple[Path, ...]
    source: str
    """Where they were found (the folder given, or the cache with what was fetched)."""

    @property
    def classpath(self) -> str:
        return os.pathsep.join(str(j) for j in self.jars)


@cache
def _lock() -> dict[str, Any]:
    text = resources.files("codegen.forensics.replay").joinpath("jars.json").read_text()
    doc: dict[str, Any] = json.loads(text)
    return doc


def locked_releases() -> tuple[str, ...]:
    """The releases whose jar lists are vendored, oldest first."""
    return tuple(sorted(_lock()["releases"], key=_version_key))


def _version_key(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in version.split("."))


def cache_dir() -> Path:
    """Where fetched jars and compiled harnesses are kept."""
    env = os.environ.get("KAFKA_SPECGEN_CACHE")
    if env:
        return Path(env).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "kafka-specgen"


def _maven_repos() -> list[Path]:
    env = os.environ.get("KAFKA_SPECGEN_MAVEN_REPOS", "")
    repos = [Path(p).expanduser() for p in env.split(os.pathsep) if p]
    repos.append(Path.home() / ".m2" / "repository")
    return repos


def artifacts(release: str) -> tuple[list[Artifact], dict[str, str], str]:
    """The artifacts of ``release`` (its closure, then the harness's), their vendored SHA-256
    (empty for a release not vendored) and how the list was made."""
    lock = _lock()
    harness = [Artifact.parse(a) for a in lock["harness"]]
    if release in lock["releases"]:
        own = [Artifact.parse(a) for a in lock["releases"][release]]
        return own + harness, lock["sha256"], f"the vendored list of Kafka {release}"
    line = release.rsplit(".", 1)[0]
    same_line = [r for r in locked_releases() if r.rsplit(".", 1)[0] == line]
    if not same_line:
        known = ", ".join(locked_releases())
        raise JarsMissingError(
            f"no jar list for Kafka {release}: the replay knows {known}; give a folder holding "
            "its jars (a Kafka distribution's libs/ folder) with --kafka-jars"
        )
    template = same_line[-1]
    own = [
        Artifact(a.group, a.artifact, release, a.classifier) if a.group == "org.apache.kafka" else a
        for a in (Artifact.parse(t) for t in lock["releases"][template])
    ]
    return own + harness, lock["sha256"], f"Kafka {template}'s list with Kafka's jars at {release}"


def jar_set(
    release: str,
    *,
    folder: Path | None = None,
    progress: Callable[[str], None] | None = None,
) -> JarSet:
    """The class path of ``release``, fetched into the cache when needed.

    Raises :class:`JarsMissingError` when a jar is in none of the places and cannot be
    fetched (offline, or Maven Central unreachable)."""
    wanted, digests, how = artifacts(release)
    say = progress or (lambda _text: None)
    if folder is not None:
        return _from_folder(release, wanted, folder)
    root = cache_dir() / "maven"
    found: list[Path] = []
    missing: list[Artifact] = []
    for art in wanted:
        local = _find_local(art, root, digests.get(str(art)))
        if local is None:
            missing.append(art)
        found.append(local or root / art.path)
    if missing:
        if os.environ.get("KAFKA_SPECGEN_OFFLINE"):
            raise JarsMissingError(
                f"{len(missing)} jar(s) of Kafka {release} are not in {root} or a Maven "
                f"repository, and KAFKA_SPECGEN_OFFLINE is set (first: {missing[0]}); fetch "
                f"them on a connected machine (python -m codegen.forensics.replay fetch "
                f"{release}) or give their folder with --kafka-jars"
            )
        say(f"fetching {len(missing)} jar(s) of Kafka {release} from Maven Central into {root}")
        # A few at a time: most of a jar's time is the request's round trip.
        with ThreadPoolExecutor(max_workers=_PARALLEL_DOWNLOADS) as pool:
            jobs = [pool.submit(_download, art, root, digests.get(str(art))) for art in missing]
            for n, job in enumerate(as_completed(jobs), start=1):
                job.result()
                if n % 10 == 0 or n == len(jobs):
                    say(f"  {n}/{len(jobs)} jars fetched")
    source = f"{root} ({how}" + (f"; {len(missing)} fetched)" if missing else ")")
    return JarSet(release, tuple(found), source)


def _from_folder(release: str, wanted: list[Artifact], folder: Path) -> JarSet:
    if not folder.is_dir():
        raise JarsMissingError(f"{folder}: no such folder (give the folder of Kafka's jars)")
    by_name = {p.name: p for p in folder.rglob("*.jar")}
    kafka = f"kafka_2.13-{release}.jar"
    if kafka not in by_name:
        raise JarsMissingError(
            f"{folder} holds no {kafka}: give the libs/ folder of a Kafka {release} "
            "distribution, or a folder fetched by python -m codegen.forensics.replay fetch"
        )
    # A distribution's own libs are its class path; the harness's (Mockito) come from the
    # folder or the cache.
    jars = [p for p in by_name.values() if p.name.endswith(".jar")]
    root = cache_dir() / "maven"
    for art in wanted:
        if art.group == "org.apache.kafka" or art.file_name in by_name:
            continue
        if art.artifact in ("mockito-core", "byte-buddy", "byte-buddy-agent", "objenesis"):
            local = _find_local(art, root, None)
            if local is None:
                raise JarsMissingError(
                    f"{folder} lacks {art.file_name}, which the replay needs beside Kafka's "
                    f"jars; put it there or fetch it once: python -m codegen.forensics.replay "
                    f"fetch {release}"
                )
            jars.append(local)
    return JarSet(release, tuple(sorted(jars)), f"{folder} (given)")


def _find_local(art: Artifact, root: Path, sha256: str | None) -> Path | None:
    for repo in (root, *_maven_repos()):
        path = repo / art.path
        if path.is_file() and (sha256 is None or _sha256(path) == sha256):
            return path
    return None


@cache
def _sha256_cached(path: str, size: int, mtime: float) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _sha256(path: Path) -> str:
    st = path.stat()
    return _sha256_cached(str(path), st.st_size, st.st_mtime)


def _download(art: Artifact, root: Path, sha256: str | None) -> None:
    base = os.environ.get("KAFKA_SPECGEN_MAVEN_URL", MAVEN_CENTRAL).rstrip("/")
    url = f"{base}/{art.path}"
    target = root / art.path
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        with (
            urllib.request.urlopen(url, timeout=_DOWNLOAD_TIMEOUT_S) as response,
            tempfile.NamedTemporaryFile(dir=target.parent, delete=False) as out,
        ):
            shutil.copyfileobj(response, out)
            tmp = Path(out.name)
        expected = sha256
        if expected is None:
            with urllib.request.urlopen(url + ".sha1", timeout=_DOWNLOAD_TIMEOUT_S) as response:
                expected_sha1 = response.read().decode().split()[0]
            actual = hashlib.sha1(tmp.read_bytes()).hexdigest()
            if actual != expected_sha1:
                tmp.unlink()
                raise JarsMissingError(f"{url}: SHA-1 {actual} is not Maven Central's")
        elif _sha256(tmp) != expected:
            tmp.unlink()
            raise JarsMissingError(f"{url}: its SHA-256 is not the one in jars.json")
        tmp.replace(target)
    except (urllib.error.URLError, OSError) as exc:
        raise JarsMissingError(
            f"could not fetch {art} from {url}: {exc}; give the folder of its jars with "
            "--kafka-jars, or set KAFKA_SPECGEN_MAVEN_URL to a Maven mirror"
        ) from exc


def fetch(releases: Iterable[str], progress: Callable[[str], None] | None = None) -> list[JarSet]:
    """Fetch the jars of ``releases`` into the cache (what ``make setup`` runs)."""
    return [jar_set(r, progress=progress) for r in releases]
