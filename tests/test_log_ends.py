"""Log ends of data partitions read by the native header pass over every file at once
(codegen.dumps.header_ends, header_ends.h) against the reference (each replica's batch rows):
the same steps, sources and wheres, with the files the pass leaves to the reference among them."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
from mapped_pages import mapped_rss

from codegen.dumps import SegmentWriter, header_ends, segments
from codegen.dumps.batch_rows import batch_rows
from codegen.dumps.header_ends import BatchEnds, batch_ends
from codegen.dumps.model import ControlType
from codegen.dumps.segments import SegmentReader, header_pass_for
from codegen.dumps.views.cut import AsOf
from codegen.dumps.writer import encode_record_batch
from codegen.forensics import inputs
from codegen.forensics.inputs import LogEnd, LogEnds, discover
from codegen.runtime import backends

T0 = 1_700_000_000_000


def native_pass() -> object:
    if backends.requested() == backends.PURE or header_pass_for(None) is None:
        pytest.skip("the native header pass is not built or not asked for")
    return header_pass_for(None)


def write_partition(folder: Path, bases: list[int], batches: int, step: int = 10) -> None:
    """Segments of ``batches`` batches each from each base offset, timestamps that go back now
    and then (the steps are running maxima), a transaction and its marker in the first."""
    folder.mkdir(parents=True)
    for n, base in enumerate(bases):
        with SegmentWriter(folder / f"{base:020d}.log", base_offset=base) as w:
            for k in range(batches):
                back = 5_000 if k % 3 == 1 else 0
                w.write_batch([(None, b"x")] * step, timestamp=T0 + (base + k) * 1000 - back)
            if n == 0:
                w.write_batch(
                    [(b"k", b"v")],
                    timestamp=T0 + (base + batches) * 1000,
                    producer_id=7,
                    producer_epoch=0,
                    transactional=True,
                )
                w.write_control(ControlType.COMMIT, producer_id=7, producer_epoch=0)


def write_disks(root: Path) -> list[Path]:
    """Two broker images: partitions with one or several segments, an empty active segment
    past the batches, only empty segments, a broken batch, legacy entries, a folder without
    segments, the same partition on both (one behind), and checkpoints."""
    one, two = root / "broker-1", root / "broker-2"
    write_partition(one / "t-0", [0], 7)
    write_partition(one / "t-1", [0, 200, 400], 5)
    write_partition(one / "t-2", [0], 4)
    (one / "t-2" / f"{900:020d}.log").write_bytes(b"")  # the active segment, past the batches
    (one / "t-3").mkdir()
    (one / "t-3" / f"{42:020d}.log").write_bytes(b"")  # retention removed every record
    write_partition(one / "t-4", [0, 100], 6)
    broken = one / "t-4" / f"{0:020d}.log"
    data = bytearray(broken.read_bytes())
    data[len(data) // 2] ^= 0xFF  # a batch whose CRC fails: the reference reads the replica
    broken.write_bytes(bytes(data))
    (one / "t-5").mkdir()
    with SegmentWriter(one / "t-5" / f"{0:020d}.log") as w:
        w.write_batch([(None, b"x")] * 3, timestamp=T0)
        w.write_legacy([(None, b"old")], magic=1, timestamp=T0 + 1000)
        w.write_batch([(None, b"x")] * 3, timestamp=T0 + 2000)
    (one / "t-6").mkdir()  # no segment at all
    write_partition(two / "t-1", [0, 200], 5)  # behind broker-1's
    write_partition(two / "t-7", [0], 3)
    (one / "replication-offset-checkpoint").write_text("0\n2\nt 0 70\nt 3 50\n")
    (two / "replication-offset-checkpoint").write_text("0\n2\nt 7 1000\nt 8 9\n")
    return [one, two]


def log_ends(
    paths: list[Path], backend: str, cut: AsOf | None, monkeypatch: pytest.MonkeyPatch
) -> dict[str, object]:
    with monkeypatch.context() as patched:
        patched.setenv(backends.ENVIRONMENT_VARIABLE, backend)
        ends = LogEnds(discover(paths), cut)
        ends.data_ends()
        keys = [*ends._found, ("nope", 0), ("t", 6), ("t", 8)]
        return {f"{t}-{p}": summary(ends.of(t, p)) for t, p in keys}


def summary(end: LogEnd | None) -> object:
    if end is None:
        return None
    assert end.times.dtype == np.int64 and end.ends.dtype == np.int64
    return (end.times.tolist(), end.ends.tolist(), end.source, end.where, end.history)


class _BytesReader(SegmentReader):
    """A segment read as bytes, as a remote one is (not mapped)."""

    @contextmanager
    def opened(self) -> Iterator[bytes]:
        yield Path(str(self.name)).read_bytes()


@pytest.mark.parametrize("cut", [None, AsOf(timestamp_ms=T0 + 150_000)])
def test_log_ends_by_the_native_pass_are_the_reference(
    tmp_path: Path, cut: AsOf | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    native_pass()
    paths = write_disks(tmp_path)
    calls: list[int] = []

    def counted(files: list[Path]) -> object:
        calls.append(len(files))
        return batch_ends(files)

    monkeypatch.setattr(inputs, "batch_ends", counted)
    natively = log_ends(paths, "native", cut, monkeypatch)
    # without a cut, one pass over the 13 files of every replica; with one, the reference alone
    assert calls == ([13] if cut is None else [])
    reference = log_ends(paths, "pure", cut, monkeypatch)
    assert natively == reference
    # what the disks hold, so that the comparison compares something
    assert set(reference) >= {f"t-{p}" for p in range(9)}
    if cut is None:
        t0, t1, t2, t3, t4 = (natively[f"t-{p}"] for p in range(5))
        assert isinstance(t0, tuple) and t0[1][-1] == 72 and "the highest of 2" in t0[3]
        assert isinstance(t1, tuple) and t1[1][-1] == 450 and "the highest of 2" in t1[3]
        assert isinstance(t2, tuple) and t2[1][-2:] == [42, 900] and t2[2] == "segments"
        assert isinstance(t3, tuple) and t3[1] == [50] and t3[2] == "replication-offset-checkpoint"
        assert isinstance(t4, tuple) and t4[1][-1] == 160
        assert natively["t-6"] is None and natively["nope-0"] is None
        assert natively["t-8"] == (
            [-(1 << 63)],
            [9],
            "replication-offset-checkpoint",
            str(paths[1] / "replication-offset-checkpoint"),
            False,
        )


def assert_ends_are_batch_rows(files: list[Path], found: list[BatchEnds | None]) -> None:
    """Each file's ends from batch_ends (None: the file left to the reference) are its batch
    rows' maxTimestamp and lastOffset."""
    for f, e in zip(files, found, strict=True):
        if e is None:
            continue
        rows = batch_rows(f)
        assert e[0].tolist() == rows.column("maxTimestamp").to_pylist()
        assert e[1].tolist() == rows.column("lastOffset").to_pylist()


def test_batch_ends_leave_a_file_to_the_reference(tmp_path: Path) -> None:
    native_pass()
    paths = write_disks(tmp_path)
    files = [
        paths[0] / "t-1" / f"{200:020d}.log",
        paths[0] / "t-4" / f"{0:020d}.log",  # a broken batch
        paths[0] / "t-3" / f"{42:020d}.log",  # empty
        paths[0] / "t-5" / f"{0:020d}.log",  # legacy entries
        paths[0] / "t-0" / f"{0:020d}.log",
    ]
    found = batch_ends(files)
    assert found is not None and [e is None for e in found] == [False, True, False, True, False]
    assert_ends_are_batch_rows(files, found)
    assert batch_ends([]) == []


def test_batch_ends_of_files_of_the_smallest_batches(tmp_path: Path) -> None:
    """Files of nothing but empty v2 batches (61 bytes, the fewest header_at takes): as many
    batches as their bytes allow, the room batch_header_ends makes for its columns, filled to
    the end (a batch written past it stops the sanitizer build), with an empty file and one cut
    short among them: what their batch rows give, the one cut short left to the reference."""
    native_pass()
    folder = tmp_path / "t-0"
    folder.mkdir()
    files = [folder / f"{base:020d}.log" for base in (0, 100, 107, 200)]
    smallest = [
        [encode_record_batch([], base_offset=b + i, timestamp=5 * i) for i in range(n)]
        for b, n in ((0, 100), (100, 7), (107, 0), (200, 40))
    ]
    for f, batches in zip(files, smallest, strict=True):
        f.write_bytes(b"".join(batches))
    files[1].write_bytes(files[1].read_bytes() + smallest[0][0][:30])  # a batch cut short
    assert {len(b) for bs in smallest for b in bs} == {61}
    found = batch_ends(files)
    assert found is not None and [e is None for e in found] == [False, True, False, False]
    assert_ends_are_batch_rows(files, found)
    assert [len(e[1]) for e in found if e is not None] == [100, 0, 40]


@pytest.mark.parametrize("held", ["files", "remote", "mapped"])
def test_batch_ends_in_several_calls(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, held: str
) -> None:
    """At most FILES_PER_CALL files a call, and a file read whole (as a remote segment is) or
    mapped past BYTES_PER_CALL bytes ends a call (the pages a walk touches stay in the
    process's memory until its call ends): the same as in one call."""
    remote = held == "remote"
    module = native_pass()
    paths = write_disks(tmp_path)
    logs = sorted(f for p in paths for f in p.glob("*/*.log"))
    whole = batch_ends(logs)
    calls: list[int] = []

    def counted(buffers: list[object], *checks: object) -> object:
        assert all(isinstance(b, bytes) for b in buffers) == remote
        calls.append(len(buffers))
        return module.batch_header_ends(buffers, *checks)  # type: ignore[attr-defined]

    monkeypatch.setattr(
        segments, "_native_header_pass", lambda: SimpleNamespace(batch_header_ends=counted)
    )
    if held != "files":  # a call ends past 0 bytes: after each non-empty file
        if remote:  # every file read whole
            monkeypatch.setattr(header_ends, "SegmentReader", _BytesReader)
        monkeypatch.setattr(header_ends, "BYTES_PER_CALL", 0)
        sizes = [f.stat().st_size for f in logs]
        ends = [n + 1 for n, size in enumerate(sizes) if size] + [len(logs)]
        expected = [b - a for a, b in itertools.pairwise([0, *ends]) if b > a]
    else:
        monkeypatch.setattr(header_ends, "FILES_PER_CALL", 2)
        expected = [2] * 6 + [1]
    parts = batch_ends(logs)
    assert whole is not None and parts is not None and len(parts) == len(whole) == 13
    for a, b in zip(whole, parts, strict=True):
        assert (a is None) == (b is None)
        if a is not None and b is not None:
            assert a[0].tolist() == b[0].tolist() and a[1].tolist() == b[1].tolist()
    assert calls == expected


def write_large(path: Path, newest_at: int, batches: int, torn: bool = False) -> None:
    """A segment of ``batches`` batches of some 10 KB (past NEWEST_WALK_HELD bytes in all), its
    newest time at batch ``newest_at``; ``torn``: its last batch cut short."""
    with SegmentWriter(path) as w:
        for k in range(batches):
            at = T0 + 1_000_000 if k == newest_at else T0 + k
            w.write_batch([(None, bytes([k % 251]) * 1000)] * 10, timestamp=at)
    if torn:
        path.write_bytes(path.read_bytes()[:-500])


def test_newest_times_of_files_past_what_the_walk_holds(tmp_path: Path) -> None:
    """Files of more than NEWEST_WALK_HELD bytes, walked together: the walk gives back the pages
    it has passed and reads again those of the newest batches (their CRC checked), so the times
    are the reference's: the newest batch first, first and broken, last, before a torn tail."""
    from codegen.dumps.views.cut import newest_batch_time
    from codegen.forensics.lag import newest_batches

    module = native_pass()
    held = module.NEWEST_WALK_HELD  # type: ignore[attr-defined]
    batches = 3 * held // 10_000
    files = {name: tmp_path / f"{name}.log" for name in ("first", "broken", "last", "torn")}
    write_large(files["first"], 0, batches)
    write_large(files["broken"], 0, batches)
    data = bytearray(files["broken"].read_bytes())
    data[5_000] ^= 0xFF  # in the newest batch's records: its CRC fails
    files["broken"].write_bytes(bytes(data))
    write_large(files["last"], batches - 1, batches)
    write_large(files["torn"], 3, batches, torn=True)
    paths = list(files.values())
    assert all(p.stat().st_size > 2 * held for p in paths)
    found = header_ends.newest_times(paths)
    assert found == [T0 + 1_000_000, None, T0 + 1_000_000, None]
    reference = [newest_batch_time(newest_batches(p)) for p in paths]
    assert reference == [T0 + 1_000_000, T0 + batches - 1, T0 + 1_000_000, T0 + 1_000_000]


def test_newest_walk_gives_back_a_mapped_file_s_pages(tmp_path: Path) -> None:
    """What the walk of a mapped file (an mmap.mmap) holds resident after it: at most
    NEWEST_WALK_HELD bytes and the newest batch's pages, where a view of the same map (not
    the walk's to give back) keeps every page it touched; the bytes read the same."""
    import mmap

    module = native_pass()
    held = module.NEWEST_WALK_HELD  # type: ignore[attr-defined]
    path = tmp_path / "large.log"
    write_large(path, 0, 3 * held // 10_000)
    checks = SegmentReader(b"").header_pass_checks()
    with path.open("rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as m:
        before = mapped_rss(path)
        if before is None:
            pytest.skip("no /proc/self/smaps")
        walk = module.newest_batches  # type: ignore[attr-defined]
        newest, whole = (np.frombuffer(b, np.int64).tolist() for b in walk([m], *checks))
        assert (newest, whole) == ([T0 + 1_000_000], [1])
        given_back = mapped_rss(path)
        view = memoryview(m)
        assert np.frombuffer(walk([view], *checks)[0], np.int64).tolist() == newest
        kept = mapped_rss(path)
        view.release()
        assert m[:] == path.read_bytes()
    assert given_back is not None and kept is not None
    assert given_back <= held + (256 << 10)
    assert kept > 2 * held


def test_newest_walk_past_batches_larger_than_it_reads_ahead(tmp_path: Path) -> None:
    """Batches of 600 KB (past the pages the walk reads ahead of its header) among small ones,
    the newest one large and last, or small and first: the reference's times, and the walk
    holds no more of a mapped file than NEWEST_WALK_HELD bytes and the newest batch's pages
    (a page read ahead behind the header would have been given back already)."""
    import mmap

    from codegen.dumps.views.cut import newest_batch_time
    from codegen.forensics.lag import newest_batches

    module = native_pass()
    held = module.NEWEST_WALK_HELD  # type: ignore[attr-defined]
    checks = SegmentReader(b"").header_pass_checks()
    paths = [tmp_path / "large-last.log", tmp_path / "small-first.log"]
    for path, newest_at in zip(paths, (29, 0), strict=True):
        with SegmentWriter(path) as w:
            for k in range(30):
                size = 60_000 if k % 3 else 1_000
                at = T0 + 1_000_000 if k == newest_at else T0 + k
                w.write_batch([(None, bytes([k]) * size)] * 10, timestamp=at)
        assert path.stat().st_size > 5 * held
    assert header_ends.newest_times(paths) == [T0 + 1_000_000] * 2
    assert [newest_batch_time(newest_batches(p)) for p in paths] == [T0 + 1_000_000] * 2
    for path in paths:
        with path.open("rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as m:
            walk = module.newest_batches  # type: ignore[attr-defined]
            newest, whole = (np.frombuffer(b, np.int64).tolist() for b in walk([m], *checks))
            resident = mapped_rss(path)
        assert (newest, whole) == ([T0 + 1_000_000], [1])
        if resident is None:
            pytest.skip("no /proc/self/smaps")
        assert resident <= held + 700_000


def test_newest_walk_keeps_a_copy_on_write_map_s_pages(tmp_path: Path) -> None:
    """A map whose pages may hold the caller's own writes (mmap.ACCESS_COPY) is not given back:
    a byte written to it before the walk reads the same after it (given back, the page would
    be read again from the file)."""
    import mmap

    module = native_pass()
    held = module.NEWEST_WALK_HELD  # type: ignore[attr-defined]
    path = tmp_path / "large.log"
    batches = 3 * held // 10_000
    write_large(path, batches - 1, batches)  # the newest batch last: the walk passes byte 5,000
    checks = SegmentReader(b"").header_pass_checks()
    with path.open("rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_COPY) as m:
        m[5_000] ^= 0xFF  # in the first batch's records, which the walk does not check
        written = m[5_000]
        walk = module.newest_batches  # type: ignore[attr-defined]
        newest, whole = (np.frombuffer(b, np.int64).tolist() for b in walk([m], *checks))
        assert (newest, whole) == ([T0 + 1_000_000], [1])
        assert m[5_000] == written != path.read_bytes()[5_000]


@pytest.mark.parametrize("remote", [False, True])
def test_newest_times_in_calls_by_what_the_walk_holds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, remote: bool
) -> None:
    """A mapped file counts NEWEST_WALK_HELD bytes at most against a call's BYTES_PER_CALL (the
    walk gives back the pages it has passed), a file read whole all its bytes: the same times
    as in one call."""
    module = native_pass()
    logs = sorted(f for p in write_disks(tmp_path) for f in p.glob("*/*.log") if f.stat().st_size)
    whole = header_ends.newest_times(logs)
    calls: list[int] = []

    def counted(buffers: list[object], *checks: object) -> object:
        calls.append(len(buffers))
        return module.newest_batches(buffers, *checks)  # type: ignore[attr-defined]

    walk = SimpleNamespace(newest_batches=counted, NEWEST_WALK_HELD=1)
    monkeypatch.setattr(segments, "_native_header_pass", lambda: walk)
    monkeypatch.setattr(header_ends, "BYTES_PER_CALL", 3)  # four bytes end a call
    if remote:
        monkeypatch.setattr(header_ends, "SegmentReader", _BytesReader)
    assert header_ends.newest_times(logs) == whole and len(logs) == 11
    assert calls == ([1] * 11 if remote else [4, 4, 3])


def test_batch_header_ends_checks_its_arguments(tmp_path: Path) -> None:
    module = native_pass()
    checks = SegmentReader(b"").header_pass_checks()
    call = module.batch_header_ends  # type: ignore[attr-defined]
    assert [np.frombuffer(b, np.int64).tolist() for b in call([b"", b""], *checks)] == [
        [],
        [],
        [0, 0],
        [0, 0],
    ]
    # a truncated entry: nothing read, the pass stops at its start
    assert np.frombuffer(call([b"\x00" * 30], *checks)[3], np.int64).tolist() == [0]
    _refuses_what_is_not_its_arguments(call, checks)


def test_newest_batches_checks_its_arguments() -> None:
    module = native_pass()
    checks = SegmentReader(b"").header_pass_checks()
    call = module.newest_batches  # type: ignore[attr-defined]
    assert [np.frombuffer(b, np.int64).tolist() for b in call([b"", b""], *checks)] == [
        [-1, -1],
        [1, 1],
    ]
    assert [np.frombuffer(b, np.int64).tolist() for b in call([], *checks)] == [[], []]
    # a truncated entry: left to the reference
    assert np.frombuffer(call([b"\x00" * 30], *checks)[1], np.int64).tolist() == [0]
    _refuses_what_is_not_its_arguments(call, checks)


def _refuses_what_is_not_its_arguments(call: Any, checks: tuple[Any, ...]) -> None:
    """A header pass's entry point refuses a wrong count, a non-sequence and a non-buffer."""
    with pytest.raises(TypeError):
        call([b""], *checks[:3])
    with pytest.raises(TypeError):
        call(7, *checks)
    with pytest.raises(TypeError):
        call([b""], *checks[:3], (0, 0))
    with pytest.raises(TypeError):
        call([7], *checks)
