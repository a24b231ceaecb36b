"""Log dirs in object storage (``codegen.dumps.storage``) read as the same files on disk: the
layer itself (URLs, listings, globs, ranged reads, credentials) and every command over a real
S3-compatible server (s3proxy, ``tests/s3server.py``), with the credentials of the standard chain
(the AWS variables) as a user has them; the output equals the disk's, the secret shows nowhere.
"""

from __future__ import annotations

import os
import shutil
import struct
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from codegen.dumps import SegmentWriter, storage
from codegen.dumps.model import ControlType

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data" / "kafka-data"

pytestmark = pytest.mark.xdist_group("s3")  # one server for the module's tests


def _write_payments(folder: Path) -> None:
    """Topic ``payments``: transactional batches (committed, aborted, one left open) with the
    offset, time and transaction indexes a broker writes beside its segments."""
    d = folder / "payments-0"
    d.mkdir(parents=True)
    t0 = 1_684_027_600_000
    offsets: list[tuple[int, int]] = []
    times: list[tuple[int, int]] = []
    with SegmentWriter(d / "00000000000000000000.log") as w:
        for b in range(40):
            pid = 500 + b % 3
            pos = w.write_batch(
                [(b"k%d" % i, b"v%d" % i) for i in range(5)],
                timestamp=t0 + b * 1000,
                transactional=True,
                producer_id=pid,
                producer_epoch=0,
            )
            if b < 38:  # the last two stay open
                marker = ControlType.COMMIT if b % 5 else ControlType.ABORT
                w.write_control(marker, timestamp=t0 + b * 1000, producer_id=pid, producer_epoch=0)
            if b % 4 == 0:
                offsets.append((w.next_offset - 1, pos))
                times.append((t0 + b * 1000, w.next_offset - 1))
    (d / "00000000000000000000.index").write_bytes(
        b"".join(struct.pack(">ii", o, p) for o, p in offsets)
    )
    (d / "00000000000000000000.timeindex").write_bytes(
        b"".join(struct.pack(">qi", t, o) for t, o in times)
    )


@pytest.fixture(scope="module")
def log_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A broker's log dir: the real ``aibulb`` broker's partition folders and ``payments``."""
    folder = tmp_path_factory.mktemp("logs") / "broker-1"
    shutil.copytree(DATA / "aibulb", folder)
    _write_payments(folder)
    return folder


@pytest.fixture(scope="module")
def remote(s3_server: Any, log_dir: Path) -> str:
    import s3server

    return s3server.upload(s3_server, log_dir, "backups/cluster-a/broker-1")


# --------------------------------------------------------------------------- the layer


def test_local_paths_stay_paths() -> None:
    assert storage.path("a/b.log") == Path("a/b.log")
    assert storage.path(Path("/x")) == Path("/x")
    assert storage.path("file:///tmp/x.log") == Path("/tmp/x.log")
    assert not storage.is_url("a/b") and storage.is_url("s3://b/k")


def test_urls_name_their_stores() -> None:
    s3 = storage.path("s3://bucket/a/__consumer_offsets-7/00000000000000000000.log")
    assert isinstance(s3, storage.RemotePath)
    assert (s3.name, s3.suffix, s3.stem) == (
        "00000000000000000000.log",
        ".log",
        "00000000000000000000",
    )
    assert str(s3.parent) == "s3://bucket/a/__consumer_offsets-7"
    assert str(s3.parent / "x.index") == "s3://bucket/a/__consumer_offsets-7/x.index"
    abfs = storage.path("abfss://logs@account.dfs.core.windows.net/broker-1/orders-0")
    assert abfs.name == "orders-0"
    assert str(abfs.parent) == "abfss://logs@account.dfs.core.windows.net/broker-1"
    hdfs = storage.path("hdfs://namenode:8020/kafka/orders-0")
    assert str(hdfs.parent) == "hdfs://namenode:8020/kafka"
    assert str(storage.path("gs://bucket/k")) == "gs://bucket/k"


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("s3://AKIA:s3cr3t@bucket/k", "credentials in a URL are shown wherever the path is"),
        ("s3://bucket/k?secret_key=s3cr3t", "a URL with a query"),
        ("ftp://host/k", "ftp:// is not a storage this reads"),
    ],
)
def test_urls_that_cannot_be_read_say_why_without_the_secret(url: str, message: str) -> None:
    with pytest.raises(storage.StorageError, match=message) as caught:
        storage.path(url)
    assert "s3cr3t" not in str(caught.value)


def test_globs_and_braces_on_disk(log_dir: Path) -> None:
    found = storage.expand([f"{log_dir}/{{__consumer_offsets,payments}}-*", f"{log_dir}/nope-*"])
    assert [[p.name for p in ps] for _, ps in found] == [
        ["__consumer_offsets-0", "__consumer_offsets-28", "payments-0"],
        [],
    ]


def test_listings_globs_and_reads_on_s3_are_the_disks(
    s3_server: Any, log_dir: Path, remote: str
) -> None:
    options = s3_server.options()
    folder = storage.path(remote, options)
    assert [p.name for p in storage.listdir(folder)] == sorted(p.name for p in log_dir.iterdir())
    (_, found), (_, deep) = storage.expand([f"{remote}/*-0/*.log", f"{remote}/**/*.index"], options)
    local = sorted(log_dir.glob("*-0/*.log"))
    assert [str(p) for p in found] == [f"{remote}/{p.relative_to(log_dir)}" for p in local]
    assert [p.name for p in deep] == ["00000000000000000000.index"]
    segment = folder / "payments-0" / "00000000000000000000.log"
    on_disk = log_dir / "payments-0" / "00000000000000000000.log"
    assert segment.is_file() and not segment.is_dir() and folder.is_dir()
    assert segment.stat().st_size == on_disk.stat().st_size
    assert segment.read_bytes() == on_disk.read_bytes()
    storage.READS.reset()
    assert storage.read_range(segment, 100, 161) == on_disk.read_bytes()[100:161]
    assert (storage.READS.bytes, storage.READS.requests) == (61, 1)
    with segment.open("rb") as fh:
        fh.seek(12)
        assert fh.read(4) == on_disk.read_bytes()[12:16]
    assert not (folder / "missing-0").exists()


def test_a_wrong_secret_is_refused_and_the_message_leaves_it_out(
    s3_server: Any, remote: str
) -> None:
    wrong = {**s3_server.options(), "secret_key": "not-the-secret-" + "x" * 10}
    with pytest.raises(OSError) as caught:
        storage.path(remote, wrong).is_dir()
    text = str(caught.value)
    assert "ACCESS_DENIED" in text or "SIGNATURE_DOES_NOT_MATCH" in text, text
    assert wrong["secret_key"] not in text and s3_server.secret_key not in text
    assert s3_server.secret_key not in repr(storage.path(remote, s3_server.options()))


def test_options_that_the_filesystem_does_not_take_are_named() -> None:
    with pytest.raises(storage.StorageError, match=r"the options \(colour\) are not all"):
        storage.path("s3://bucket/k", {"colour": "blue"}).exists()


# --------------------------------------------------------------------------- the commands


def _cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    return subprocess.run(
        [sys.executable, "-m", "codegen", *args],
        capture_output=True,
        text=True,
        env={**base, **(env or {})},
        timeout=300,
        cwd=ROOT,
    )


COMMANDS = [
    ["dump", "{}"],
    ["dump", "{}/payments-0", "--format", "table"],
    ["dump", "{}/__consumer_offsets-0", "--format", "dump-log"],
    ["dump", "{}/payments-0", "--format", "dump-log", "--verify-index-only"],
    ["dump", "{}", "--compacted"],
    ["dump", "{}/payments-0/00000000000000000000.txnindex"],
    ["groups", "{}"],
    ["lag", "{}", "--format", "jsonl"],
    ["transactions", "{}", "--format", "jsonl"],
    ["transactions", "{}/pay*-0"],
    ["downgrade-check", "{}", "--to", "3.9"],
]


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: " ".join(c[:1] + c[2:]))
def test_every_command_reads_s3_as_the_disk(
    s3_server: Any, log_dir: Path, remote: str, command: list[str]
) -> None:
    if command[1].endswith(".txnindex"):
        _write_txnindex(s3_server, log_dir, remote)
    local = _cli(*(part.format(log_dir) for part in command))
    on_s3 = _cli(*(part.format(remote) for part in command), env=s3_server.environment())
    assert local.returncode in (0, 1, 3), local.stderr
    assert (on_s3.returncode, on_s3.stdout, on_s3.stderr) == (
        local.returncode,
        local.stdout.replace(str(log_dir), remote),
        local.stderr.replace(str(log_dir), remote),
    )
    assert s3_server.secret_key not in on_s3.stdout + on_s3.stderr


def _write_txnindex(s3_server: Any, log_dir: Path, remote: str) -> None:
    """An aborted-transaction index beside ``payments``' segment, here and on S3."""
    entry = struct.pack(">hqqqq", 0, 500, 0, 4, 0)
    target = log_dir / "payments-0" / "00000000000000000000.txnindex"
    if target.exists():
        return
    target.write_bytes(entry)
    fs = s3_server.filesystem()
    with fs.open_output_stream(f"{remote[5:]}/payments-0/{target.name}") as out:
        out.write(entry)


def test_a_missing_object_or_a_refused_secret_is_bad_input(s3_server: Any, remote: str) -> None:
    missing = _cli("dump", f"{remote}/nope-0", env=s3_server.environment())
    assert missing.returncode == 2
    assert f"{remote}/nope-0 does not exist" in missing.stderr
    wrong = {**s3_server.environment(), "AWS_SECRET_ACCESS_KEY": "wrong-secret-0123456789"}
    refused = _cli("dump", remote, env=wrong)
    assert refused.returncode == 2 and f"cannot read {remote}" in refused.stderr
    assert "wrong-secret-0123456789" not in refused.stderr
    groups = _cli("groups", f"{remote}/nope-*", env=s3_server.environment())
    assert groups.returncode == 2 and "the pattern matches nothing" in groups.stderr
