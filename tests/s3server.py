"""A real S3-compatible server for the object-storage tests: s3proxy (Apache-2.0, from Maven
Central by ``tests/s3/fetch.sh``, run by ``make setup``) serving a folder of its own.

``start(folder)`` runs it on a free port of 127.0.0.1 with AWS v2/v4 signatures and a key pair
made for the run; it refuses requests signed with another secret. ``upload(server, local,
"bucket/prefix")`` copies a local folder there through pyarrow's S3 client (as a user's
``aws s3 cp --recursive`` would). ``stop()`` ends it by its process id.

Why s3proxy: a real server implementation that installs from the registries reached here in
seconds (one jar, Java is already needed for Kafka) and starts in about a second. versitygw
(Go) builds in minutes; SeaweedFS's gateway does not ``go install``; MinIO is AGPL.
"""

from __future__ import annotations

import os
import secrets
import signal
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ports import free_port

VERSION = "4.1.0"
FETCH_COMMAND = "tests/s3/fetch.sh"
START_TIMEOUT_S = 60.0
ROOT = Path(__file__).resolve().parent.parent


def jar() -> Path:
    return ROOT / ".cache" / "s3proxy" / f"s3proxy-{VERSION}-jar-with-dependencies.jar"


def missing_reason() -> str | None:
    """Why the server cannot start (a sentence naming the command to run), or None."""
    if not jar().is_file():
        return f"{jar()} is missing; run {FETCH_COMMAND} (make setup does)"
    if _java() is None:
        return "no 'java' executable (JAVA_HOME/bin/java or on PATH)"
    return None


def _java() -> str | None:
    home = os.environ.get("JAVA_HOME")
    if home and (Path(home) / "bin" / "java").is_file():
        return str(Path(home) / "bin" / "java")
    from shutil import which

    return which("java")


@dataclass
class S3Server:
    process: subprocess.Popen[bytes]
    port: int
    folder: Path
    access_key: str
    secret_key: str
    log: Path

    @property
    def pid(self) -> int:
        return self.process.pid

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def options(self) -> dict[str, str]:
        """The storage options that reach it (``codegen.dumps.storage``; Spark's
        ``storage.*`` options)."""
        return {
            "endpoint_override": self.endpoint,
            "access_key": self.access_key,
            "secret_key": self.secret_key,
            "region": "us-east-1",
        }

    def environment(self) -> dict[str, str]:
        """The same through the AWS SDK's standard variables (the default credential chain)."""
        return {
            "AWS_ENDPOINT_URL": self.endpoint,
            "AWS_ACCESS_KEY_ID": self.access_key,
            "AWS_SECRET_ACCESS_KEY": self.secret_key,
            "AWS_REGION": "us-east-1",
        }

    def filesystem(self) -> Any:
        import pyarrow.fs as pafs

        return pafs.S3FileSystem(
            endpoint_override=self.endpoint,
            access_key=self.access_key,
            secret_key=self.secret_key,
            region="us-east-1",
            allow_bucket_creation=True,
        )

    def stop(self) -> None:
        if self.process.poll() is None:
            os.kill(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(20)
            except subprocess.TimeoutExpired:
                os.kill(self.process.pid, signal.SIGKILL)
                self.process.wait()


def start(folder: Path) -> S3Server:
    """Start s3proxy serving ``folder/data`` on a free port of 127.0.0.1."""
    reason = missing_reason()
    if reason is not None:
        raise RuntimeError(reason)
    java = _java()
    assert java is not None
    data = folder / "data"
    data.mkdir(parents=True, exist_ok=True)
    port = free_port()
    access_key, secret_key = "specgen-" + secrets.token_hex(4), secrets.token_urlsafe(24)
    conf = folder / "s3proxy.conf"
    conf.write_text(
        "\n".join(
            [
                f"s3proxy.endpoint=http://127.0.0.1:{port}",
                "s3proxy.authorization=aws-v2-or-v4",
                f"s3proxy.identity={access_key}",
                f"s3proxy.credential={secret_key}",
                "jclouds.provider=filesystem-nio2",
                f"jclouds.filesystem.basedir={data}",
                "",
            ]
        )
    )
    conf.chmod(0o600)
    log = folder / "s3proxy.log"
    command = [java, "-Xmx192m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1"]
    command += ["-jar", str(jar()), "--properties", str(conf)]
    with open(log, "wb") as out:
        process = subprocess.Popen(
            command, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
        )
    server = S3Server(process, port, folder, access_key, secret_key, log)
    deadline = time.monotonic() + START_TIMEOUT_S
    while True:
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return server
        if process.poll() is not None or time.monotonic() > deadline:
            server.stop()
            raise RuntimeError(f"s3proxy did not start:\n{log.read_text(errors='replace')[-3000:]}")
        time.sleep(0.2)


def upload(server: S3Server, local: Path, target: str) -> str:
    """Copy the files below ``local`` to ``target`` (``bucket/prefix``), creating the bucket;
    returns the ``s3://`` URL of ``target``."""
    fs = server.filesystem()
    bucket = target.split("/")[0]
    fs.create_dir(bucket)
    for path in sorted(local.rglob("*")):
        if path.is_file():
            key = f"{target.rstrip('/')}/{path.relative_to(local).as_posix()}"
            with fs.open_output_stream(key) as out:
                out.write(path.read_bytes())
    return f"s3://{target.rstrip('/')}"
