"""``groups`` and ``lag`` on damaged input: each segment error and each offset commit that does
not decode is said on stderr with ``dump``'s line, the answer is that of the records read, and
the exit status is 1; on both backends, with and without ``--as-of``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from codegen.dumps import SegmentWriter
from codegen.dumps.command import dump_command
from codegen.dumps.model import RecordError, SegmentError, error_line
from codegen.failures import EXIT_DAMAGE
from codegen.forensics.groups import group_reports
from codegen.forensics.groups_command import groups_command
from codegen.forensics.lag import lag_reports
from codegen.forensics.lag_command import lag_command
from codegen.runtime.backends import use_backend
from tests.commit_rows_data import commit_key, commit_value

T0 = 1_700_000_000_000
_REFUSED = b"\x00\x03\x00"  # a version-3 value with no room for its offset
_ROWS = [
    (commit_key(1, "g", "t", 0), commit_value(3, offset=10)),
    (commit_key(1, "g", "t", 1), commit_value(3, offset=11)),  # its batch made corrupt
    (commit_key(1, "g", "t", 2), _REFUSED),
    (commit_key(1, "g", "t", 0), commit_value(3, offset=40)),
    (commit_key(1, "h", "t", 3), commit_value(3, offset=50)),
]
_CORRUPT, _REFUSED_ROW = 1, 2


def _segment(folder: Path, rows: list[int]) -> tuple[Path, list[int]]:
    """A ``__consumer_offsets-0`` partition under ``folder`` of the batches of ``_ROWS`` at
    ``rows`` (one record each, at their offsets in ``_ROWS``), and the batches' positions."""
    path = folder / "__consumer_offsets-0" / "00000000000000000000.log"
    path.parent.mkdir(parents=True)
    with SegmentWriter(path) as w:
        positions = [
            w.write_batch(
                [_ROWS[i]], base_offset=i, timestamp=T0 + i, producer_id=-1, producer_epoch=-1
            )
            for i in rows
        ]
    return path, positions


@pytest.fixture
def dumps(tmp_path: Path) -> tuple[Path, Path]:
    """A damaged dump (a batch whose CRC does not match, a commit refused) and the dump of
    the records read of it (without those two batches)."""
    path, positions = _segment(tmp_path / "damaged", list(range(len(_ROWS))))
    data = bytearray(path.read_bytes())
    data[positions[_CORRUPT] + 70] ^= 0xFF  # in the record, under the CRC
    path.write_bytes(bytes(data))
    read = [i for i in range(len(_ROWS)) if i not in (_CORRUPT, _REFUSED_ROW)]
    _segment(tmp_path / "read", read)
    return tmp_path / "damaged", tmp_path / "read"


def _run(command: object, *args: str) -> Result:
    return CliRunner().invoke(command, list(args))  # type: ignore[arg-type]


@pytest.mark.parametrize("backend", ["native", "pure"])
@pytest.mark.parametrize("as_of", [[], ["--as-of", "4"]])
def test_groups_and_lag_report_damage_as_dump_does(
    dumps: tuple[Path, Path], backend: str, as_of: list[str]
) -> None:
    damaged, read = dumps
    dump = _run(dump_command, str(damaged), "--compacted")
    assert dump.exit_code == EXIT_DAMAGE
    lines = dump.stderr.splitlines()[:-1]  # its summary last
    file = damaged / "__consumer_offsets-0" / "00000000000000000000.log"
    assert len(lines) == 2
    assert lines[0].startswith(f"segment error: {file}@") and "crc-mismatch" in lines[0]
    assert lines[1].startswith(f"record error: {file}@") and ": offset 2: " in lines[1]
    use_backend(backend)
    try:
        for command in (groups_command, lag_command):
            for fmt in ("jsonl", "table"):
                got = _run(command, str(damaged), "--format", fmt, *as_of)
                want = _run(command, str(read), "--format", fmt, *as_of)
                assert (got.exit_code, got.stderr.splitlines()) == (EXIT_DAMAGE, lines)
                assert (want.exit_code, want.stderr) == (0, "")
                assert got.stdout == want.stdout
                assert got.stdout.strip()
    finally:
        use_backend(None)


@pytest.mark.parametrize("backend", ["native", "pure"])
def test_api_receives_the_errors(dumps: tuple[Path, Path], backend: str) -> None:
    damaged, read = dumps
    lines = _run(dump_command, str(damaged), "--compacted").stderr.splitlines()[:-1]
    use_backend(backend)
    try:
        group_errors: list[SegmentError | RecordError] = []
        groups = group_reports(damaged, errors=group_errors)
        lag_errors: list[SegmentError | RecordError] = []
        lags = lag_reports(damaged, errors=lag_errors)
        assert [g.to_json() for g in groups] == [g.to_json() for g in group_reports(read)]
        assert [g.to_json() for g in lags] == [g.to_json() for g in lag_reports(read)]
    finally:
        use_backend(None)
    assert [type(e) for e in group_errors] == [SegmentError, RecordError]
    assert list(map(error_line, group_errors)) == list(map(error_line, lag_errors)) == lines
    refused = group_errors[1]
    assert isinstance(refused, RecordError) and refused.offset == _REFUSED_ROW


def test_html_report_names_the_damage(dumps: tuple[Path, Path], tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    damaged, read = dumps
    lines = _run(dump_command, str(damaged), "--compacted").stderr.splitlines()[:-1]
    for command in (groups_command, lag_command):
        out = tmp_path / f"{command.name}.html"
        got = _run(command, str(damaged), "--format", "html", "--output", str(out))
        assert (got.exit_code, got.stderr.splitlines()) == (EXIT_DAMAGE, lines)
        text = out.read_text()
        assert "2 errors reading the dump" in text
        assert text.count("<li><code>") == 2 and "crc-mismatch" in text
        clean = _run(command, str(read), "--format", "html", "--output", str(out))
        assert (clean.exit_code, clean.stderr) == (0, "")
        assert "reading the dump" not in out.read_text()


@pytest.mark.parametrize("backend", ["native", "pure"])
def test_lag_reports_only_the_commits_it_reads(tmp_path: Path, backend: str) -> None:
    """A group metadata record that does not decode: groups says it (as dump does); lag,
    which reads offset commits alone, does not, on either backend."""
    from codegen.dumps.views import effects
    from tests.histories import coordinator_key

    rows = [
        (commit_key(1, "g", "t", 0), commit_value(3, offset=10)),
        (coordinator_key("GroupMetadataKey", group="g"), b"\x00\x03\xff"),
    ]
    path = tmp_path / "__consumer_offsets-0" / "00000000000000000000.log"
    path.parent.mkdir()
    with SegmentWriter(path) as w:
        for n, row in enumerate(rows):
            w.write_batch([row], timestamp=T0 + n, producer_id=-1, producer_epoch=-1)
    dump = _run(dump_command, str(tmp_path), "--compacted")
    (line, _) = dump.stderr.splitlines()
    assert line.startswith("record error: ") and ": offset 1: " in line
    use_backend(backend)
    try:
        assert effects.engine_history() is (backend == "native" and effects.native_enabled())
        groups = _run(groups_command, str(tmp_path), "--format", "jsonl")
        lag = _run(lag_command, str(tmp_path), "--format", "jsonl")
    finally:
        use_backend(None)
    assert (groups.exit_code, groups.stderr) == (EXIT_DAMAGE, line + "\n")
    assert (lag.exit_code, lag.stderr) == (0, "")
    assert lag.stdout.strip()


_DATA_BATCHES = 5
"""Batches of the data partition ``d-0`` of :func:`_lag_dump`: two records each, batch ``i``
at offset ``2 * i`` and time ``T0 + 10 * i``."""


def _lag_dump(folder: Path, batches: list[int]) -> tuple[Path, list[int]]:
    """A dump under ``folder``: group ``g``'s commits of ``d-0`` (at ``T0 + 5``, ``+ 25``, ``+
    45``) and the data partition ``d-0`` of the batches at ``batches``; its segment file and its
    batches' positions."""
    coordinator = folder / "__consumer_offsets-0" / "00000000000000000000.log"
    coordinator.parent.mkdir(parents=True)
    with SegmentWriter(coordinator) as w:
        for n, offset in enumerate([1, 3, 5]):
            w.write_batch(
                [(commit_key(1, "g", "d", 0), commit_value(3, offset=offset))],
                base_offset=n,
                timestamp=T0 + 5 + 20 * n,
                producer_id=-1,
                producer_epoch=-1,
            )
    data = folder / "d-0" / "00000000000000000000.log"
    data.parent.mkdir()
    with SegmentWriter(data) as w:
        positions = [
            w.write_batch(
                [(b"k", b"v" * 20), (b"k", b"w")],
                base_offset=2 * i,
                timestamp=T0 + 10 * i,
                producer_id=-1,
                producer_epoch=-1,
            )
            for i in batches
        ]
    return data, positions


def _damaged(data: bytes, positions: list[int], kind: str) -> bytes:
    """``data`` (the segment of :func:`_lag_dump` of every batch) with the damage ``kind``."""
    damaged = bytearray(data)
    if kind == "crc":  # a byte of batch 1's records, under its CRC
        damaged[positions[1] + 70] ^= 0xFF
    elif kind == "cut-short":  # the last batch cut short
        del damaged[-10:]
    else:  # batch 2's length runs past the file
        damaged[positions[2] + 8 : positions[2] + 12] = (1 << 20).to_bytes(4, "big")
    return bytes(damaged)


_READ_WHOLE: dict[str, list[int]] = {
    "crc": [0, 2, 3, 4],
    "cut-short": [0, 1, 2, 3],
    "length": [0, 1],  # the rest of the file is not read past a length that runs past it
}
"""Of each damage, the batches read whole."""


@pytest.mark.parametrize("backend", ["native", "pure"])
@pytest.mark.parametrize("as_of", [[], ["--as-of", "1"]])
@pytest.mark.parametrize("kind", sorted(_READ_WHOLE))
def test_lag_reports_a_damaged_data_partition(
    tmp_path: Path, backend: str, as_of: list[str], kind: str
) -> None:
    """A data partition's batch that is corrupt, cut short or runs past the file: lag says its
    segment error (dump's line), exits 1 and gives the log ends of the batches read whole."""
    data, positions = _lag_dump(tmp_path / "damaged", list(range(_DATA_BATCHES)))
    data.write_bytes(_damaged(data.read_bytes(), positions, kind))
    _lag_dump(tmp_path / "read", _READ_WHOLE[kind])
    damaged, read = tmp_path / "damaged", tmp_path / "read"
    dump = _run(dump_command, str(data.parent))
    assert dump.exit_code == EXIT_DAMAGE
    (line, _) = dump.stderr.splitlines()  # its summary last
    assert line.startswith(f"segment error: {data}@")
    use_backend(backend)
    try:
        for fmt in ("jsonl", "table"):
            got = _run(lag_command, str(damaged), "--format", fmt, *as_of)
            want = _run(lag_command, str(read), "--format", fmt, *as_of)
            assert (got.exit_code, got.stderr) == (EXIT_DAMAGE, line + "\n")
            assert (want.exit_code, want.stderr) == (0, "")
            if fmt == "jsonl":  # the log end's source names its folder
                assert got.stdout == want.stdout.replace(str(read), str(damaged))
                ends = [p["logEndOffset"] for p in json.loads(got.stdout)["partitions"]]
                kept = [i for i in _READ_WHOLE[kind] if not as_of or 10 * i <= 25]  # by T0 + 25
                assert ends == [2 * kept[-1] + 2]
        errors: list[SegmentError | RecordError] = []
        lag_reports(damaged, errors=errors)
    finally:
        use_backend(None)
    assert list(map(error_line, errors)) == [line]


def test_html_report_names_a_damaged_data_partition(tmp_path: Path) -> None:
    """The html report lists the data partition's error (its coordinator's, said by groups'
    read too, once each: test_html_report_names_the_damage)."""
    pytest.importorskip("matplotlib")
    data, positions = _lag_dump(tmp_path / "damaged", list(range(_DATA_BATCHES)))
    data.write_bytes(_damaged(data.read_bytes(), positions, "crc"))
    (line, _) = _run(dump_command, str(data.parent)).stderr.splitlines()
    out = tmp_path / "lag.html"
    got = _run(lag_command, str(tmp_path / "damaged"), "--format", "html", "--output", str(out))
    assert (got.exit_code, got.stderr) == (EXIT_DAMAGE, line + "\n")
    text = out.read_text()
    assert "1 error reading the dump" in text and text.count("<li><code>") == 1
