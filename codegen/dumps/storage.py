"""Where the files a reader reads live: a local disk, or object storage and HDFS by URL.

Every reader of log folders (segments, indexes, checkpoint and snapshot files, topic maps) takes
its paths through :func:`path`, so a broker's log dir in ``s3://``, ``gs://``, ``abfs://``
(``abfss://``) or ``hdfs://`` reads as the same folder on disk does. A local path comes back
as the :class:`pathlib.Path` it always was (the readers' local code is unchanged); a URL as a
:class:`RemotePath`, which has the part of ``pathlib.Path`` the readers use (``name``,
``parent``, ``/``, ``iterdir``, ``is_dir``, ``stat``, ``read_bytes``, ``open``...) over one
of pyarrow's filesystems. Reads of a byte range (:func:`read_range`) fetch only that range::

    from codegen.dumps import storage

    folder = storage.path("s3://backups/broker-1/__consumer_offsets-7")
    for segment in sorted(folder.glob("*.log")):
        head = storage.read_range(segment, 0, 61)   # one ranged GET, not the segment
    storage.expand(["s3://backups/*/orders-*"])      # globs (and {a,b}) as on disk

Credentials come from each store's standard chain (for S3: ``AWS_ACCESS_KEY_ID``... or
``AWS_PROFILE`` and ``~/.aws``, ``AWS_ENDPOINT_URL`` for an S3-compatible server, instance
roles; for GCS: ``GOOGLE_APPLICATION_CREDENTIALS``; for Azure: ``AZURE_STORAGE_ACCOUNT_KEY``
or the default Azure credential), or from ``options``: the keyword arguments of pyarrow's
filesystem for the scheme, as strings (``{"endpoint_override": "http://127.0.0.1:9000",
"access_key": ..., "secret_key": ...}`` for S3). Options are never part of a path's text:
messages, logs, ``repr`` and the rows' ``file`` column show the URL alone, and a URL that
carries credentials itself (``s3://key:secret@bucket``, ``?secret_key=``) is refused.

:data:`READS` counts the bytes and requests read through this module (for benchmarks).
"""

from __future__ import annotations

import contextlib
import fnmatch
import glob as local_glob
import os
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from threading import Lock
from typing import TYPE_CHECKING, Any, Final, TypeAlias

if TYPE_CHECKING:
    import pyarrow.fs as pafs

__all__ = [
    "READS",
    "SCHEMES",
    "RemotePath",
    "StorageError",
    "StoragePath",
    "absolute",
    "expand",
    "expand_braces",
    "has_magic",
    "is_url",
    "listdir",
    "options_of",
    "path",
    "read_range",
]

SCHEMES: Final = ("s3", "gs", "gcs", "abfs", "abfss", "hdfs", "viewfs")
"""The URL schemes read through pyarrow's filesystems (``file://`` is a local path)."""

_URL: Final = re.compile(
    r"^(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*)://(?P<authority>[^/?#]*)(?P<rest>.*)$"
)
_MAGIC: Final = re.compile(r"[*?\[{]")
_BOOLEANS: Final = {"true": True, "false": False}
_NUMBERS: Final = frozenset({"request_timeout", "connect_timeout", "load_frequency", "port"})


class StorageError(ValueError):
    """A location that cannot be read as given (a bad URL, an unknown scheme, credentials in
    the URL, an option the filesystem does not take); the text says what to change."""


@dataclass(slots=True)
class ReadStats:
    """Bytes and read calls through this module: ranged reads, whole files, mapped files."""

    bytes: int = 0
    requests: int = 0

    def add(self, n: int) -> None:
        self.bytes += n
        self.requests += 1

    def reset(self) -> None:
        self.bytes = self.requests = 0


READS: Final = ReadStats()


def is_url(text: str | os.PathLike[str] | RemotePath) -> bool:
    """Whether ``text`` is a URL of a store read through pyarrow (``s3://``, ``gs://``...)."""
    if not isinstance(text, str):
        return isinstance(text, RemotePath)
    m = _URL.match(text)
    return m is not None and m["scheme"].lower() in SCHEMES


def path(
    location: str | os.PathLike[str] | RemotePath, options: Mapping[str, str] | None = None
) -> StoragePath:
    """``location`` as a path the readers take: a :class:`pathlib.Path` on disk (``file://``
    URLs included), a :class:`RemotePath` for a URL of :data:`SCHEMES` (``options``: the
    filesystem's keyword arguments, see the module docstring). A :class:`RemotePath` given is
    returned as it is."""
    if isinstance(location, RemotePath):
        return location
    if not isinstance(location, str):
        return Path(location)
    m = _URL.match(location)
    if m is None:
        return Path(location)
    scheme = m["scheme"].lower()
    if scheme == "file":
        return Path(m["rest"] or "/")
    if scheme not in SCHEMES:
        raise StorageError(
            f"{scheme}:// is not a storage this reads: give a local path or a URL of "
            f"{', '.join(s + '://' for s in SCHEMES)}"
        )
    rest = m["rest"]
    if "?" in rest or "#" in rest:
        raise StorageError(
            f"{scheme}://{m['authority']}...: a URL with a query: give the store's settings "
            "and credentials as options (or the environment), not in the URL"
        )
    authority = m["authority"]
    if ":" in authority.partition("@")[0] and "@" in authority:
        raise StorageError(
            f"{scheme}://...@{authority.rpartition('@')[2]}: credentials in a URL are shown "
            "wherever the path is; give them as options or in the environment"
        )
    return RemotePath(_Store.of(scheme, authority, options or {}), _key(scheme, authority, rest))


def _key(scheme: str, authority: str, rest: str) -> str:
    """The path inside the filesystem: ``bucket/key`` for S3 and GCS, ``container/key`` for
    Azure, the absolute path for HDFS."""
    parts = [p for p in rest.split("/") if p and p != "."]
    if scheme in ("abfs", "abfss"):
        container = authority.partition("@")[0] if "@" in authority else ""
        return "/".join([container, *parts] if container else parts)
    if scheme in ("hdfs", "viewfs"):
        return "/" + "/".join(parts)
    return "/".join([authority, *parts])


class _Store:
    """One filesystem: the scheme, the authority that picks it (an Azure account, an HDFS
    name node; S3 and GCS buckets are in the keys) and the options; made when first read."""

    def __init__(self, scheme: str, authority: str, options: tuple[tuple[str, str], ...]) -> None:
        self.scheme = scheme
        self.authority = authority
        self.options = options
        self._fs: pafs.FileSystem | None = None

    @classmethod
    def of(cls, scheme: str, authority: str, options: Mapping[str, str]) -> _Store:
        fs_authority = authority if scheme != "gs" and scheme != "gcs" else ""
        key = (scheme, fs_authority, tuple(sorted((str(k), str(v)) for k, v in options.items())))
        with _STORES_LOCK:
            found = _STORES.get(key)
            if found is None:
                found = _STORES[key] = _Store(scheme, fs_authority, key[2])
            return found

    def __repr__(self) -> str:  # never the options: they may hold secrets
        return f"<store {self.scheme}://{self.authority}>"

    def __reduce__(self) -> tuple[Any, ...]:
        return (_Store.of, (self.scheme, self.authority, dict(self.options)))

    def url(self, key: str) -> str:
        if self.scheme in ("abfs", "abfss"):
            container, _, rest = key.partition("/")
            account = self.authority.rpartition("@")[2]
            return f"{self.scheme}://{container}@{account}/{rest}".rstrip("/")
        if self.scheme in ("hdfs", "viewfs"):
            return f"{self.scheme}://{self.authority}{key}"
        return f"{self.scheme}://{key}"

    @property
    def fs(self) -> pafs.FileSystem:
        if self._fs is None:
            self._fs = self._make()
        return self._fs

    def _make(self) -> pafs.FileSystem:
        import pyarrow.fs as pafs

        kwargs: dict[str, Any] = {k: _option_value(k, v) for k, v in self.options}
        try:
            if self.scheme == "s3":
                return pafs.S3FileSystem(**_s3_settings(kwargs, self.authority))
            if self.scheme in ("gs", "gcs"):
                return pafs.GcsFileSystem(**kwargs)
            if self.scheme in ("abfs", "abfss"):
                account = self.authority.rpartition("@")[2].split(".")[0]
                kwargs.setdefault("account_name", account)
                return pafs.AzureFileSystem(**kwargs)
            host, _, port = self.authority.partition(":")
            kwargs.setdefault("host", f"{self.scheme}://{host}" if host else "default")
            kwargs.setdefault("port", int(port) if port else 0)
            return pafs.HadoopFileSystem(**kwargs)
        except TypeError as exc:
            names = ", ".join(k for k, _ in self.options)
            raise StorageError(
                f"{self.scheme}://: the options ({names}) are not all settings of pyarrow's "
                f"filesystem for it ({exc}); see docs/dumps.md, 'Object storage'"
            ) from None


def _s3_settings(kwargs: dict[str, Any], bucket: str) -> dict[str, Any]:
    """The S3 client's settings: the options, then what the AWS SDKs read from the environment
    that pyarrow's own constructor leaves out (``AWS_ENDPOINT_URL_S3``, ``AWS_ENDPOINT_URL``,
    ``AWS_REGION``); on AWS itself the bucket's region, asked once."""
    import pyarrow.fs as pafs

    settings = dict(kwargs)
    endpoint = os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL")
    if endpoint and "endpoint_override" not in settings:
        settings["endpoint_override"] = endpoint
    region = os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION")
    if "region" not in settings:
        if region:
            settings["region"] = region
        elif "endpoint_override" not in settings and bucket:
            # else the client's default: the read then says what is wrong
            with contextlib.suppress(OSError):
                settings["region"] = pafs.resolve_s3_region(bucket)
    return settings


_STORES: Final[dict[tuple[str, str, tuple[tuple[str, str], ...]], _Store]] = {}
"""The filesystems made in this process, by scheme, authority and options (a client each)."""
_STORES_LOCK: Final = Lock()


def _option_value(name: str, value: str) -> Any:
    lowered = value.lower()
    if lowered in _BOOLEANS:
        return _BOOLEANS[lowered]
    if name in _NUMBERS:
        return float(value) if "." in value else int(value)
    return value


@dataclass(slots=True)
class RemoteStat:
    """What :meth:`RemotePath.stat` tells: the size (and the modification time when known)."""

    st_size: int
    st_mtime: float = 0.0


class RemotePath:
    """A file or folder of a store, by URL; the part of :class:`pathlib.Path` readers use.

    Listing (:meth:`iterdir`, :meth:`glob`) keeps what the store said of each entry (kind,
    size), so walking a log dir costs one listing per folder, not a request per file."""

    __slots__ = ("_info", "_store", "key")

    def __init__(self, store: _Store, key: str, info: Any = None) -> None:
        self._store = store
        self.key = key.rstrip("/") if key not in ("", "/") else key
        self._info = info

    # -- names ----------------------------------------------------------------------------------

    def __str__(self) -> str:
        return self._store.url(self.key)

    def __repr__(self) -> str:
        return f"RemotePath({str(self)!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (RemotePath, (self._store, self.key))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, RemotePath) and str(self) == str(other)

    def __hash__(self) -> int:
        return hash(str(self))

    def __lt__(self, other: RemotePath) -> bool:
        return str(self) < str(other)

    @property
    def name(self) -> str:
        return self.key.rpartition("/")[2]

    @property
    def suffix(self) -> str:
        name = self.name
        i = name.rfind(".")
        return name[i:] if 0 < i < len(name) - 1 else ""

    @property
    def stem(self) -> str:
        suffix = self.suffix
        return self.name[: -len(suffix)] if suffix else self.name

    @property
    def parent(self) -> RemotePath:
        head = self.key.rpartition("/")[0]
        if not head and self.key.startswith("/"):
            head = "/"
        return RemotePath(self._store, head or self.key)

    @property
    def parts(self) -> tuple[str, ...]:
        return (f"{self._store.scheme}://", *(p for p in self.key.split("/") if p))

    def __truediv__(self, name: str) -> RemotePath:
        return RemotePath(self._store, f"{self.key.rstrip('/')}/{name}")

    def with_name(self, name: str) -> RemotePath:
        return self.parent / name

    def with_suffix(self, suffix: str) -> RemotePath:
        return self.parent / (self.stem + suffix)

    def resolve(self) -> RemotePath:
        return self

    def absolute(self) -> RemotePath:
        return self

    def is_absolute(self) -> bool:
        return True

    # -- what the store holds -------------------------------------------------------------------

    def _file_info(self) -> Any:
        if self._info is None:
            import pyarrow.fs as pafs

            info = self._store.fs.get_file_info(self.key)
            if info.type == pafs.FileType.NotFound:
                return info  # not kept: it may be written later
            self._info = info
        return self._info

    def exists(self) -> bool:
        import pyarrow.fs as pafs

        return bool(self._file_info().type != pafs.FileType.NotFound)

    def is_dir(self) -> bool:
        import pyarrow.fs as pafs

        return bool(self._file_info().type == pafs.FileType.Directory)

    def is_file(self) -> bool:
        import pyarrow.fs as pafs

        return bool(self._file_info().type == pafs.FileType.File)

    def stat(self) -> RemoteStat:
        info = self._file_info()
        if info.size is None:
            raise FileNotFoundError(f"{self}: no such file")
        mtime = info.mtime.timestamp() if info.mtime is not None else 0.0
        return RemoteStat(int(info.size), mtime)

    def iterdir(self) -> Iterator[RemotePath]:
        import pyarrow.fs as pafs

        infos = self._store.fs.get_file_info(pafs.FileSelector(self.key, recursive=False))
        for info in sorted(infos, key=lambda i: i.path):
            yield RemotePath(self._store, info.path, info)

    def _walk(self) -> list[RemotePath]:
        import pyarrow.fs as pafs

        infos = self._store.fs.get_file_info(pafs.FileSelector(self.key, recursive=True))
        return [RemotePath(self._store, info.path, info) for info in sorted(infos, key=_by_path)]

    def glob(self, pattern: str) -> Iterator[RemotePath]:
        """The entries below this folder whose path relative to it matches ``pattern``
        (``*``, ``?``, ``[...]`` within one name; ``**`` any depth)."""
        parts = [p for p in pattern.split("/") if p]
        if "**" in parts:
            regex = _glob_regex(parts)
            base = len(self.key.rstrip("/")) + 1
            yield from (p for p in self._walk() if regex.fullmatch(p.key[base:]))
            return
        found = [self]
        for part in parts:
            found = [
                child
                for folder in found
                if folder.is_dir()
                for child in folder.iterdir()
                if fnmatch.fnmatchcase(child.name, part)
            ]
        yield from found

    def rglob(self, pattern: str) -> Iterator[RemotePath]:
        return self.glob(f"**/{pattern}")

    # -- reading --------------------------------------------------------------------------------

    def _input(self) -> Any:
        return self._store.fs.open_input_file(self.key)

    def read_bytes(self) -> bytes:
        with self._input() as fh:
            data = fh.read()
        READS.add(len(data))
        return bytes(data)

    def read_text(self, encoding: str = "utf-8", errors: str = "strict") -> str:
        return self.read_bytes().decode(encoding, errors)

    def read_range(self, start: int, end: int | None) -> bytes:
        with self._input() as fh:
            size = fh.size()
            stop = size if end is None else min(end, size)
            data = fh.read_at(max(0, stop - start), start) if stop > start else b""
        READS.add(len(data))
        return bytes(data)

    def open(self, mode: str = "rb") -> RemoteFile:
        """A binary file to read (``seek``, ``read``); only ``rb``: stores are read here."""
        if mode not in ("r", "rb"):
            raise StorageError(f"{self}: opened for {mode!r}; remote files are read only here")
        return RemoteFile(self._input())


def _by_path(info: Any) -> str:
    return str(info.path)


class RemoteFile:
    """A pyarrow input file as a binary file object, counting what it reads."""

    def __init__(self, raw: Any) -> None:
        self._raw = raw

    def read(self, n: int = -1) -> bytes:
        data = bytes(self._raw.read() if n is None or n < 0 else self._raw.read(n))
        READS.add(len(data))
        return data

    def seek(self, offset: int, whence: int = 0) -> int:
        return int(self._raw.seek(offset, whence))

    def tell(self) -> int:
        return int(self._raw.tell())

    def close(self) -> None:
        self._raw.close()

    def __enter__(self) -> RemoteFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _glob_regex(parts: Sequence[str]) -> re.Pattern[str]:
    """The keys (relative to the folder globbed) that ``parts`` match: ``*``, ``?`` and
    ``[...]`` within one name, ``**`` any number of folders."""
    pieces = []
    for i, part in enumerate(parts):
        last = i == len(parts) - 1
        if part == "**":
            pieces.append("(?:[^/]+/)*" if not last else ".*")
            continue
        pieces.append(_name_regex(part) + ("" if last else "/"))
    return re.compile("".join(pieces))


def _name_regex(part: str) -> str:
    out, i = [], 0
    while i < len(part):
        ch = part[i]
        if ch == "*":
            out.append("[^/]*")
        elif ch == "?":
            out.append("[^/]")
        elif ch == "[" and "]" in part[i + 2 :]:
            end = part.index("]", i + 2)
            body = part[i + 1 : end]
            out.append("[" + ("^" + body[1:] if body.startswith("!") else body) + "]")
            i = end
        else:
            out.append(re.escape(ch))
        i += 1
    return "".join(out)


StoragePath: TypeAlias = Path | RemotePath
"""A path readers take: a local :class:`pathlib.Path` or a :class:`RemotePath`."""


def absolute(p: StoragePath | str) -> str:
    """The text that names ``p`` wherever it is read: a local path made absolute, a URL."""
    p = path(p)
    return str(p) if isinstance(p, RemotePath) else os.path.abspath(p)


def options_of(paths: Iterable[StoragePath | str]) -> dict[str, str]:
    """The options of the stores ``paths`` are read from ({} for local paths and URLs read
    with the standard chains), to read them elsewhere (Spark's executors) the same way. Paths
    of stores with different options cannot be read with one set: a :class:`StorageError`."""
    found: dict[str, str] | None = None
    for p in paths:
        if isinstance(p, RemotePath) and p._store.options:
            options = dict(p._store.options)
            if found is not None and found != options:
                raise StorageError(
                    f"{p}: read with other storage options than the paths before it; read "
                    "the paths of each store apart"
                )
            found = options
    return found or {}


def listdir(folder: StoragePath) -> list[StoragePath]:
    """What ``folder`` holds, in name order (one listing of a store's folder)."""
    found: list[StoragePath] = list(folder.iterdir())
    return sorted(found, key=_name_of)


def _name_of(p: StoragePath) -> str:
    return p.name


def read_range(source: StoragePath | str, start: int = 0, end: int | None = None) -> bytes:
    """The bytes ``[start, end)`` of a file (``end`` None: to its end): one ranged read."""
    p = path(source)
    if isinstance(p, RemotePath):
        return p.read_range(start, end)
    with open(p, "rb") as fh:
        fh.seek(start)
        data = fh.read() if end is None else fh.read(max(0, end - start))
    READS.add(len(data))
    return data


def has_magic(text: str) -> bool:
    """Whether ``text`` is a glob pattern (``*``, ``?``, ``[abc]``, ``{a,b}``)."""
    return _MAGIC.search(text) is not None


def expand_braces(pattern: str) -> list[str]:
    """Hadoop's ``{a,b}`` alternatives, which Python's ``glob`` lacks: ``x{1,2}`` -> x1, x2."""
    depth, start = 0, -1
    for i, ch in enumerate(pattern):
        if ch == "{":
            if depth == 0:
                start = i
            depth += 1
        elif ch == "}" and depth:
            depth -= 1
            if depth == 0:
                head, tail = pattern[:start], pattern[i + 1 :]
                return [
                    expanded
                    for choice in split_outside_braces(pattern[start + 1 : i])
                    for expanded in expand_braces(head + choice + tail)
                ]
    return [pattern]


def split_outside_braces(text: str) -> list[str]:
    """``text`` cut at the commas that are not inside ``{...}``."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch == "{":
            depth += 1
        elif ch == "}" and depth:
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return parts


def _glob_one(pattern: str, options: Mapping[str, str] | None) -> list[StoragePath]:
    if not is_url(pattern):
        return [Path(m) for m in sorted(local_glob.glob(pattern))]
    m = _URL.match(pattern)
    assert m is not None
    # The folder part before the first name with a wildcard, then the rest as a pattern.
    head = f"{m['scheme']}://{m['authority']}"
    names = [n for n in m["rest"].split("/") if n]
    fixed = 0
    while fixed < len(names) and not has_magic(names[fixed]):
        fixed += 1
    if fixed == 0 and has_magic(m["authority"]):
        raise StorageError(f"{pattern}: a bucket or container name cannot be a pattern")
    base = path("/".join([head, *names[:fixed]]), options)
    assert isinstance(base, RemotePath)
    if fixed == len(names):
        return [base] if base.exists() else []
    return sorted(base.glob("/".join(names[fixed:])), key=str)


def expand(
    patterns: Sequence[str | os.PathLike[str] | RemotePath],
    options: Mapping[str, str] | None = None,
) -> list[tuple[str, list[StoragePath]]]:
    """Each of ``patterns`` with what it names: ``[path]`` for a path that is not a pattern
    (whether or not it exists), else the matches of its globs (``*``, ``?``, ``[abc]``,
    ``{a,b}``; ``**`` on stores), in name order, without repeats; an empty list when a pattern
    matches nothing (the caller says what that means)."""
    out: list[tuple[str, list[StoragePath]]] = []
    for given in patterns:
        text = str(given)
        if not has_magic(text):
            out.append((text, [path(given, options)]))
            continue
        matches: list[StoragePath] = []
        for alternative in expand_braces(text):
            for found in _glob_one(alternative, options):
                if found not in matches:
                    matches.append(found)
        out.append((text, sorted(matches, key=str)))
    return out
