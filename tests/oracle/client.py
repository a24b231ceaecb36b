"""Python side of the Kafka reference oracle.

``KafkaOracle`` starts one JVM running ``tests/oracle/src/OracleHarness.java`` against the jars
of the pinned Apache Kafka release and asks it to encode and decode messages with Kafka's own
generated classes. The jars and the compiled harness come from ``tests/oracle/fetch.sh``; this
module never downloads or builds anything.

    with KafkaOracle() as oracle:
        data = oracle.encode("OffsetCommitValue", 3, {"offset": 100, ...})
        obj = oracle.decode("OffsetCommitValue", 3, data)
        responses = oracle.batch([{"op": "decode", ...}, ...])   # pipelined

The wire protocol is one JSON object per line each way, answered in order; see the harness
source for the list of operations.
"""

from __future__ import annotations

import collections
import contextlib
import hashlib
import json
import os
import shutil
import subprocess
import threading
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import IO, Any, Literal, TypedDict, cast

KAFKA_VERSION = "4.4.0"
FETCH_COMMAND = "tests/oracle/fetch.sh"

JsonObject = dict[str, Any]
CoordinatorSerde = Literal["group", "share", "transaction"]

_ORACLE_DIR = Path(__file__).resolve().parent
_HARNESS_SOURCE = _ORACLE_DIR / "src" / "OracleHarness.java"
_HARNESS_CLASS = "OracleHarness"
_STDERR_LINES = 200


def project_root() -> Path:
    """The checkout this file belongs to (``tests/oracle/`` is two levels down)."""
    return _ORACLE_DIR.parent.parent


def cache_dir(root: Path | None = None) -> Path:
    """``<project>/.cache/kafka-<version>``: jars, extracted specs and the compiled harness."""
    return (root or project_root()) / ".cache" / f"kafka-{KAFKA_VERSION}"


def missing_reason(cache: Path | None = None) -> str | None:
    """Why the oracle cannot start (a sentence naming the command to run), or None if it can."""
    cache = cache or cache_dir()
    if not cache.is_dir():
        return f"{cache} is missing; run {FETCH_COMMAND}"
    if not any((cache / "jars").glob("kafka-clients-*.jar")):
        return f"{cache / 'jars'} has no Kafka jars; run {FETCH_COMMAND}"
    if not (cache / "harness" / "classes" / f"{_HARNESS_CLASS}.class").is_file():
        return f"the oracle harness is not compiled; run {FETCH_COMMAND}"
    stamp = cache / "harness" / "OracleHarness.java.sha256"
    if _HARNESS_SOURCE.is_file():
        current = hashlib.sha256(_HARNESS_SOURCE.read_bytes()).hexdigest()
        if not stamp.is_file() or stamp.read_text().strip() != current:
            return f"the compiled oracle harness is older than its source; run {FETCH_COMMAND}"
    if _java() is None:
        return "no 'java' executable (JAVA_HOME/bin/java or on PATH)"
    return None


def _java() -> str | None:
    home = os.environ.get("JAVA_HOME")
    if home:
        candidate = Path(home) / "bin" / "java"
        if candidate.is_file():
            return str(candidate)
    return shutil.which("java")


class OracleUnavailableError(RuntimeError):
    """The cache is missing or stale, or the JVM could not be started or died."""


class OracleError(Exception):
    """Kafka (or the harness) rejected a request; ``str()`` is ``"<Exception>: <message>"``."""

    def __init__(self, error: str, exception: str = "", causes: Sequence[str] = ()) -> None:
        super().__init__(error)
        self.error = error
        self.exception = exception
        self.causes = tuple(causes)

    @classmethod
    def from_response(cls, response: Mapping[str, Any]) -> OracleError:
        return cls(
            str(response.get("error", "unknown error")),
            str(response.get("exception", "")),
            [str(c) for c in response.get("causes", ())],
        )


class CoordinatorKey(TypedDict):
    type: int  # the int16 record type prefix (the version the key was read at)
    apiKey: int
    json: JsonObject
    # "class" (the key's Java class) is present too; it is not a valid identifier here.


class CoordinatorValue(TypedDict):
    version: int
    apiKey: int
    json: JsonObject


class CoordinatorRecord(TypedDict):
    serdeClass: str
    key: CoordinatorKey
    value: CoordinatorValue | None


class MetadataRecord(TypedDict):
    frameVersion: int
    apiKey: int
    type: str  # MetadataRecordType enum name, e.g. TOPIC_RECORD
    version: int
    json: JsonObject


class RemoteLogMetadataRecord(TypedDict, total=False):
    apiKey: int
    type: str  # MetadataRecordType name: REMOTE_LOG_SEGMENT_METADATA_RECORD, ...
    version: int
    json: JsonObject
    text: str  # toString of RemoteLogMetadataSerde's object (what DumpLogSegments prints)
    textError: str  # the message of the exception the serde's transform threw instead


class DumpLogResult(TypedDict):
    ok: bool  # False when main threw; "error"/"exception" then say what
    stdout: str
    stderr: str
    exitStatus: int | None  # set when the tool called Exit.exit (which the harness intercepts)


class KafkaOracle:
    """One long-lived JVM answering requests with Kafka's generated classes.

    Safe to share between threads (requests are serialised). Use as a context manager, or call
    ``close()``.
    """

    def __init__(
        self,
        cache: Path | None = None,
        *,
        jvm_options: Sequence[str] = ("-XX:+UseSerialGC", "-Xshare:auto"),
    ) -> None:
        self.cache = cache or cache_dir()
        reason = missing_reason(self.cache)
        if reason is not None:
            raise OracleUnavailableError(f"Kafka reference oracle unavailable: {reason}")
        java = _java()
        assert java is not None  # checked by missing_reason
        classpath = os.pathsep.join(
            [str(self.cache / "harness" / "classes"), str(self.cache / "jars" / "*")]
        )
        self._lock = threading.Lock()
        self._stderr_tail: collections.deque[str] = collections.deque(maxlen=_STDERR_LINES)
        self._next_id = 0
        self._classes: JsonObject | None = None
        self._proc = subprocess.Popen(
            [
                java,
                *jvm_options,
                f"-Doracle.dumplog.jars={self.cache / 'dumplog-jars'}",
                "-cp",
                classpath,
                _HARNESS_CLASS,
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        assert self._proc.stdin is not None and self._proc.stdout is not None
        self._stdin: IO[bytes] = self._proc.stdin
        self._stdout: IO[bytes] = self._proc.stdout
        self._stderr_thread = threading.Thread(
            target=self._drain_stderr, name="kafka-oracle-stderr", daemon=True
        )
        self._stderr_thread.start()

    # ------------------------------------------------------------------ lifecycle

    def __enter__(self) -> KafkaOracle:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        """Close stdin (the harness exits at end of input) and wait for the JVM."""
        if self._proc.poll() is None:
            with contextlib.suppress(OSError):
                self._stdin.close()
            try:
                self._proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
        self._stdout.close()
        self._stderr_thread.join(timeout=5)

    @property
    def stderr_tail(self) -> str:
        """The last lines the JVM wrote to stderr (useful when it dies)."""
        return "".join(self._stderr_tail)

    def _drain_stderr(self) -> None:
        stream = self._proc.stderr
        assert stream is not None
        with stream:
            for line in iter(stream.readline, b""):
                self._stderr_tail.append(line.decode("utf-8", "replace"))

    # ------------------------------------------------------------------ transport

    def _dead(self, what: str) -> OracleUnavailableError:
        with contextlib.suppress(subprocess.TimeoutExpired):
            self._proc.wait(timeout=2)
        self._stderr_thread.join(timeout=2)
        return OracleUnavailableError(
            f"Kafka reference oracle {what} (exit status {self._proc.returncode}); "
            f"stderr:\n{self.stderr_tail}"
        )

    def _encode_requests(self, requests: Sequence[Mapping[str, Any]]) -> tuple[bytes, int]:
        first = self._next_id
        lines = []
        for offset, request in enumerate(requests):
            message = dict(request)
            message["id"] = first + offset
            lines.append(json.dumps(message, separators=(",", ":")))
        lines.append("")
        self._next_id += len(requests)
        return "\n".join(lines).encode(), first

    def _read_responses(
        self, first: int, originals: Sequence[Mapping[str, Any]]
    ) -> list[JsonObject]:
        responses: list[JsonObject] = []
        for offset in range(len(originals)):
            line = self._stdout.readline()
            if not line:
                raise self._dead("stopped answering")
            response = cast(JsonObject, json.loads(line))
            if response.get("id") != first + offset:
                raise OracleUnavailableError(
                    f"oracle answered out of order: expected id {first + offset}, got {line!r}"
                )
            original_id = originals[offset].get("id")
            if original_id is None:
                del response["id"]
            else:
                response["id"] = original_id
            responses.append(response)
        return responses

    def batch(self, requests: Iterable[Mapping[str, Any]]) -> list[JsonObject]:
        """Send many raw requests before reading any answer; answers come back in order.

        Each response is the harness's JSON object (``ok`` plus op-specific fields, or
        ``error``/``exception``); failures are returned, not raised. A request's own ``id``, if
        any, is echoed back.
        """
        items = list(requests)
        if not items:
            return []
        with self._lock:
            payload, first = self._encode_requests(items)
            # The harness drains stdin on its own thread, so writing everything first can
            # never block for good; a writer thread lets the JVM work while we read.
            failure: list[BaseException] = []

            def write() -> None:
                try:
                    self._stdin.write(payload)
                    self._stdin.flush()
                except BaseException as exc:  # reported after the reads
                    failure.append(exc)

            if len(payload) <= 1 << 16:
                write()
                if failure:
                    raise self._dead(f"could not be written to ({failure[0]})")
                return self._read_responses(first, items)
            writer = threading.Thread(target=write, name="kafka-oracle-writer", daemon=True)
            writer.start()
            try:
                return self._read_responses(first, items)
            finally:
                writer.join()
                if failure:
                    raise self._dead(f"could not be written to ({failure[0]})")

    def request(self, request: Mapping[str, Any]) -> JsonObject:
        """Send one raw request and return its raw response (failures are returned)."""
        return self.batch([request])[0]

    def _call(self, request: Mapping[str, Any]) -> JsonObject:
        response = self.request(request)
        if not response.get("ok"):
            raise OracleError.from_response(response)
        return response

    # ------------------------------------------------------------------ operations

    def info(self) -> JsonObject:
        """Kafka version and commit of the jars, Java version."""
        return self._call({"op": "info"})

    def _class_listing(self) -> JsonObject:
        if self._classes is None:
            self._classes = self._call({"op": "classes"})
        return self._classes

    def classes(self) -> dict[str, str]:
        """Simple name -> fully qualified name of every generated message class with a
        JsonConverter (names defined in more than one package are left out, see
        ``ambiguous_classes``)."""
        return dict(cast(dict[str, str], self._class_listing()["classes"]))

    def ambiguous_classes(self) -> dict[str, list[str]]:
        """Simple names defined in several packages -> their fully qualified names."""
        return dict(cast(dict[str, list[str]], self._class_listing()["ambiguous"]))

    def class_sources(self) -> dict[str, dict[str, str]]:
        """Fully qualified name -> {"package": ..., "jar": ...}."""
        return dict(cast(dict[str, dict[str, str]], self._class_listing()["sources"]))

    def encode(self, cls: str, version: int, obj: Mapping[str, Any]) -> bytes:
        """``<cls>JsonConverter.read(obj, version)`` serialised at ``version`` by Kafka."""
        response = self._call({"op": "encode", "class": cls, "version": version, "json": obj})
        return bytes.fromhex(response["hex"])

    def decode(self, cls: str, version: int, data: bytes) -> JsonObject:
        """``new <cls>(readable, version)`` over all of ``data``, as Kafka's JSON."""
        response = self._call({"op": "decode", "class": cls, "version": version, "hex": data.hex()})
        return cast(JsonObject, response["json"])

    def roundtrip(self, cls: str, version: int, data: bytes) -> bytes:
        """Decode ``data`` and write it again at the same version."""
        response = self._call(
            {"op": "roundtrip", "class": cls, "version": version, "hex": data.hex()}
        )
        return bytes.fromhex(response["hex"])

    def coordinator(
        self, serde: CoordinatorSerde, key: bytes, value: bytes | None
    ) -> CoordinatorRecord:
        """Deserialise a coordinator record (type-prefixed key, version-prefixed value or None
        for a tombstone) with the group, share or transaction coordinator's own serde."""
        response = self._call(
            {
                "op": "coordinator",
                "serde": serde,
                "key": key.hex(),
                "value": None if value is None else value.hex(),
            }
        )
        return cast(CoordinatorRecord, response)

    def metadata(self, data: bytes) -> MetadataRecord:
        """Deserialise a ``__cluster_metadata`` record value with MetadataRecordSerde."""
        return cast(MetadataRecord, self._call({"op": "metadata", "hex": data.hex()}))

    def remote_log_metadata(self, data: bytes) -> RemoteLogMetadataRecord:
        """Deserialise a ``__remote_log_metadata`` record value with the storage module's serde."""
        return cast(
            RemoteLogMetadataRecord, self._call({"op": "remoteLogMetadata", "hex": data.hex()})
        )

    def dump_log_result(self, args: Sequence[str]) -> DumpLogResult:
        """Run DumpLogSegments.main(args) inside the JVM: stdout, stderr, any exit status, and
        ``ok``/``error`` (an exception thrown by the tool is reported, not raised).

        The tool is kafka-tools 4.3.1's (kafka-tools is not on Maven Central for 4.4.0), run
        from its own 4.3.1 class path; relative paths in ``args`` are relative to the current
        directory of this process.
        """
        response = self.request({"op": "dumplog", "args": [str(a) for a in args]})
        if "stdout" not in response:  # the harness could not even start the tool
            raise OracleError.from_response(response)
        return cast(DumpLogResult, response)

    def dump_log(self, args: Sequence[str]) -> str:
        """DumpLogSegments' stdout; OracleError if the tool threw or asked to exit non-zero."""
        result = self.dump_log_result(args)
        if not result["ok"]:
            raise OracleError.from_response(result)
        status = result["exitStatus"]
        if status not in (None, 0):
            raise OracleError(
                f"DumpLogSegments exited with status {status}: {result['stderr'].strip()}"
            )
        return result["stdout"]
