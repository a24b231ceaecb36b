"""The main job (``python -m spark_udfs.demo``, ``make demo``): its arguments, the ``--input``
paths it accepts, and one small run on a dump written with the project's segment writer.

The argument tests need no Spark. The run (marked ``spark``) decodes a few hundred synthesized
records in a subprocess whose working folder and temporary folder (Python's and the JVM's) are
watched: nothing may be left outside ``--out`` (such as a package zip or ``spark-warehouse``).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from spark_udfs.demo import DEFAULT_OUT, InputError, input_files, parse_args
from spark_udfs.synth import DumpStats, write_consumer_offsets

ROOT = Path(__file__).resolve().parents[1]
SHOW = ["--show", "3"]
# A real broker's log folder (tests/data/PROVENANCE.md): two __consumer_offsets partitions, the
# cluster metadata and a plain topic.
REAL_DUMP = ROOT / "tests" / "data" / "kafka-data" / "aibulb"
PLAIN_TOPIC = REAL_DUMP / "my-topic-0"


@pytest.fixture(scope="module")
def log_dir(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, DumpStats]:
    """A broker-like log folder: two __consumer_offsets partitions, another topic's partition
    (not read) and a partition file that is not a segment (not read)."""
    root = tmp_path_factory.mktemp("logdir")
    stats = write_consumer_offsets(root, records=400, partitions=2, groups=6, seed=3)
    other = root / "orders-0"
    other.mkdir()
    (other / "00000000000000000000.log").write_bytes(b"not read")
    (root / "__consumer_offsets-0" / "leader-epoch-checkpoint").write_text("0\n0\n")
    (root / "__consumer_offsets-0" / "00000000000000000000.index").write_bytes(b"\0" * 8)
    return root, stats


def _usage_error(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    with pytest.raises(SystemExit) as exit_info:
        parse_args(argv)
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: python -m spark_udfs.demo")
    return err.splitlines()[-1]


def test_defaults_synthesize_a_million_records_into_a_new_folder_per_run() -> None:
    args = parse_args([])
    assert (args.files, args.records, args.partitions, args.groups) == (None, 1_000_000, 4, 20)
    assert args.out.parent == DEFAULT_OUT == Path(".cache/demo")
    assert re.fullmatch(r"\d{8}-\d{6}(-\d+)?-synthesized", args.out.name), args.out
    assert parse_args(["--input", str(REAL_DUMP)]).out.name.endswith("-aibulb")


def test_a_plain_topic_is_not_decoded_as_consumer_offsets() -> None:
    """The folder of another topic's partition is a usage error that names what it is; the
    demo does not start Spark for it."""
    proc = subprocess.run(
        [sys.executable, "-m", "spark_udfs.demo", "--input", str(PLAIN_TOPIC)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2
    assert proc.stderr.splitlines()[-1] == (
        f"python -m spark_udfs.demo: error: --input {PLAIN_TOPIC}: the folder of partition 0 of "
        "topic my-topic, not __consumer_offsets; the demo decodes __consumer_offsets: give a "
        "broker's log folder, a __consumer_offsets-<n> folder or its .log files "
        "(python -m codegen dump reads any topic)"
    )
    assert proc.stdout == ""


def test_a_segment_of_another_topic_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    segment = PLAIN_TOPIC / "00000000000000000000.log"
    line = _usage_error(["--input", str(segment)], capsys)
    assert line.endswith(
        f"--input {segment}: a segment of partition 0 of topic my-topic, not __consumer_offsets; "
        "the demo decodes __consumer_offsets: give a broker's log folder, a "
        "__consumer_offsets-<n> folder or its .log files (python -m codegen dump reads any topic)"
    )


def test_a_log_folder_without_consumer_offsets_names_its_topics(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for folder in ("my-topic-0", "my-topic-1", "__cluster_metadata-0"):
        (tmp_path / folder).mkdir()
    line = _usage_error(["--input", str(tmp_path)], capsys)
    assert line.endswith(
        f"--input {tmp_path}: a log folder with partitions of __cluster_metadata (1 partition), "
        "my-topic (2 partitions), but no __consumer_offsets-<n> folder; give a broker's log "
        "folder, a __consumer_offsets-<n> folder or its .log files (python -m codegen dump "
        "reads any topic)"
    )


def test_help_shows_examples(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        parse_args(["--help"])
    assert exit_info.value.code == 0
    text = capsys.readouterr().out
    assert "examples:\n  python -m spark_udfs.demo " in text
    assert "--input /var/lib/kafka/data" in text
    assert "make demo DUMP=/var/lib/kafka/data OUT=/tmp/demo" in text


def test_missing_input_path_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "nope"
    line = _usage_error(["--input", str(missing)], capsys)
    assert line == f"python -m spark_udfs.demo: error: --input {missing}: no such file or folder"


def test_folder_with_nothing_to_read_says_what_to_give(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "notes.txt").write_text("x")
    line = _usage_error(["--input", str(tmp_path)], capsys)
    assert line == (
        f"python -m spark_udfs.demo: error: --input {tmp_path}: no .log segments here and no "
        "__consumer_offsets-<n> partition folders; give a broker's log folder, a "
        "__consumer_offsets-<n> folder or its .log files"
    )


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--records", "0"], "argument --records: must be a positive number, not 0"),
        (["--partitions", "-2"], "argument --partitions: must be a positive number, not -2"),
        (["--show", "x"], "argument --show: invalid _positive value: 'x'"),
    ],
)
def test_sizes_must_be_positive(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _usage_error(argv, capsys) == f"python -m spark_udfs.demo: error: {message}"


def test_synthesis_options_do_not_combine_with_input(
    log_dir: tuple[Path, DumpStats], capsys: pytest.CaptureFixture[str]
) -> None:
    line = _usage_error(["--input", str(log_dir[0]), "--records", "10", "--groups", "2"], capsys)
    assert line.endswith(
        "error: --records, --groups size the synthesized dump; leave them out with --input"
    )


@pytest.fixture
def connector_dir(tmp_path: Path) -> Path:
    """A folder laid out like ``make spark-kafka-setup``'s (the jars are never opened here)."""
    folder = tmp_path / "jars"
    folder.mkdir()
    for name in ("spark-sql-kafka-0-10_2.13-4.2.0.jar", "kafka-clients-3.9.2.jar"):
        (folder / name).write_bytes(b"")
    return folder


def test_bootstrap_servers_read_live_with_the_connector_jars(connector_dir: Path) -> None:
    args = parse_args(
        ["--bootstrap-servers", "b1:9092,b2:9093", "--kafka-jars", str(connector_dir)]
    )
    assert (args.bootstrap_servers, args.files, args.records) == ("b1:9092,b2:9093", None, None)
    assert args.kafka_conf == {
        "spark.jars": ",".join(
            str(connector_dir.resolve() / n)
            for n in ("kafka-clients-3.9.2.jar", "spark-sql-kafka-0-10_2.13-4.2.0.jar")
        )
    }


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--input", "x"], "--input name a dump; leave them out with --bootstrap-servers"),
        (["--records", "9"], "--records name a dump; leave them out with --bootstrap-servers"),
    ],
)
def test_bootstrap_servers_do_not_combine_with_a_dump(
    connector_dir: Path, argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    live = ["--bootstrap-servers", "b1:9092", "--kafka-jars", str(connector_dir)]
    assert _usage_error([*live, *argv], capsys).endswith(f"error: {message}")


def test_master_and_remote_do_not_combine(capsys: pytest.CaptureFixture[str]) -> None:
    line = _usage_error(["--master", "local[2]", "--remote", "sc://127.0.0.1:15002"], capsys)
    assert "--remote: not allowed with argument --master" in line


def test_bootstrap_servers_need_host_and_port(
    connector_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    line = _usage_error(
        ["--bootstrap-servers", "b1:9092,b2", "--kafka-jars", str(connector_dir)], capsys
    )
    assert line.endswith(
        "error: --bootstrap-servers b1:9092,b2: give HOST:PORT, or several separated by commas"
    )


def test_missing_connector_jars_say_how_to_fetch_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    line = _usage_error(["--bootstrap-servers", "b1:9092", "--kafka-jars", str(tmp_path)], capsys)
    assert line.endswith(
        f"error: --kafka-jars: {tmp_path} has no spark-sql-kafka-0-10 jar "
        "(org.apache.spark:spark-sql-kafka-0-10_2.13); run `make spark-kafka-setup` in the "
        "checkout, or give the folder that holds the connector's jars"
    )


def test_out_must_not_be_a_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "results").write_text("x")
    line = _usage_error(["--out", str(tmp_path / "results")], capsys)
    assert line.endswith(
        f"--out {tmp_path / 'results'} is a file; give a folder (it is created if missing)"
    )


def test_input_log_folder_reads_its_consumer_offsets_partitions(
    log_dir: tuple[Path, DumpStats],
) -> None:
    root, stats = log_dir
    args = parse_args(["--input", str(root), "--out", str(root / "out")])
    assert (
        args.files
        == sorted(stats.files)
        == [
            root / "__consumer_offsets-0" / "00000000000000000000.log",
            root / "__consumer_offsets-1" / "00000000000000000000.log",
        ]
    )


def test_input_partition_folder_and_segment_files(log_dir: tuple[Path, DumpStats]) -> None:
    root, _ = log_dir
    p0 = root / "__consumer_offsets-0"
    p1_segment = root / "__consumer_offsets-1" / "00000000000000000000.log"
    assert input_files([p0]) == [p0 / "00000000000000000000.log"]
    assert input_files([p1_segment]) == [p1_segment]
    args = parse_args(["--input", str(p0), "--input", str(p1_segment)])
    assert args.files == [p0 / "00000000000000000000.log", p1_segment]
    with pytest.raises(InputError, match="no such file or folder"):
        input_files([p0, root / "__consumer_offsets-9"])


def test_synthesis_writes_the_records_asked_and_reports_against_that_total(
    tmp_path: Path,
) -> None:
    """The demo's progress lines count against the true total: the dump holds exactly the
    records asked (control records included), reported at every tenth and at the end."""
    from codegen.dumps.coordinator import decode_records

    seen: list[int] = []
    stats = write_consumer_offsets(tmp_path, 1000, partitions=2, groups=6, progress=seen.append)
    data = sum(1 for f in stats.files for _ in decode_records(str(f.parent)))
    assert stats.records == data + stats.transactions == 1000  # markers are not decoded
    assert len(seen) == 10 and seen[-1] == 1000
    assert all(100 * n <= written < 100 * n + 40 for n, written in enumerate(seen, 1))


def test_too_few_records_for_the_story_is_a_usage_error_before_spark(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """--records below the story's own is exit 2 naming the least, and the part of the
    cluster written before the story could tell is gone."""
    import tempfile

    from spark_udfs.demo import CLUSTER, main

    # main() points this process's temporary folder below --out: put it back afterwards.
    monkeypatch.setattr(tempfile, "tempdir", tempfile.tempdir)
    monkeypatch.setenv("TMPDIR", os.environ.get("TMPDIR", tempfile.gettempdir()))
    with pytest.raises(SystemExit) as exit_info:
        main(["--records", "100", "--out", str(tmp_path)])
    assert exit_info.value.code == 2
    last = capsys.readouterr().err.splitlines()[-1]
    assert re.fullmatch(
        r"python -m spark_udfs\.demo: error: --records 100 cannot hold the story: give at "
        r"least [\d,]+",
        last,
    ), last
    assert not (tmp_path / CLUSTER).exists()


def test_an_out_folder_reused_says_what_it_replaces(tmp_path: Path) -> None:
    from spark_udfs.cluster import write_cluster
    from spark_udfs.demo import CLUSTER, _remove_earlier_dump, _replaced

    assert _replaced(tmp_path) == []
    (tmp_path / "decoded.parquet").mkdir()
    (tmp_path / "lag.html").write_text("<html></html>")
    dump = tmp_path / CLUSTER
    write_cluster(dump, 20_000, partitions=2, groups=2)
    assert _replaced(tmp_path) == ["decoded.parquet", "lag.html", CLUSTER]
    _remove_earlier_dump(dump)  # an earlier synthesized cluster: partitions, a broker's files
    assert not dump.exists()
    (dump / "mine").mkdir(parents=True)  # not one the demo wrote: left alone, and said so
    with pytest.raises(SystemExit, match="is not a synthesized cluster of an earlier run"):
        _remove_earlier_dump(dump)
    assert (dump / "mine").is_dir()


def _files_below(folder: Path) -> set[Path]:
    return set(folder.rglob("*"))


def _real_dump_figures() -> dict[str, int]:
    """What the Python decoders find in the real dump's __consumer_offsets partitions."""
    from codegen.dumps.coordinator import decode_records

    records = [
        r for p in sorted(REAL_DUMP.glob("__consumer_offsets-*")) for r in decode_records(str(p))
    ]
    return {
        "records": len(records),
        "tombstones": sum(r.is_tombstone for r in records),
        "newer": sum(r.is_newer_version for r in records),
    }


@pytest.mark.spark
@pytest.mark.slow
def test_demo_decodes_a_dump_given_with_input(
    log_dir: tuple[Path, DumpStats], tmp_path: Path
) -> None:
    """One run over two inputs, a synthesized log folder and a real broker's: the summary's
    labelled figures, the records per type without NULL rows, the results' place and the next
    commands; nothing written outside --out."""
    root, stats = log_dir
    real = _real_dump_figures()
    work = tmp_path / "work"  # the working folder
    temp = tmp_path / "temp"  # TMPDIR
    work.mkdir()
    temp.mkdir()
    out = tmp_path / "results"
    before = _files_below(root)
    env = os.environ | {
        "TMPDIR": str(temp),
        # The JVM's default temporary folder too: the demo must point Spark elsewhere.
        "JDK_JAVA_OPTIONS": f"-Djava.io.tmpdir={temp}",
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
        "PYSPARK_PYTHON": sys.executable,
    }
    argv = ["--input", str(REAL_DUMP), str(root), "--out", str(out), *SHOW]
    proc = subprocess.run(
        [sys.executable, "-m", "spark_udfs.demo", *argv],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = proc.stdout.splitlines()
    figures = {
        "records": stats.records + real["records"],
        "control records (isControl)": stats.transactions,  # commit/abort markers
        "tombstones (isTombstone)": stats.tombstones + real["tombstones"],
        "newer than the specs (isNewerVersion)": stats.newer + real["newer"],
        "did not decode (_decode_error)": 0,
        "batches not read (_error)": 0,
    }
    for label, value in figures.items():
        assert any(re.fullmatch(rf"  {re.escape(label)} +{value:,}  \S.*", x) for x in lines), (
            label,
            value,
            proc.stdout,
        )
    kinds = lines[lines.index("  records per type (recordName) and value version:") + 2 :]
    kinds = kinds[: next(i for i, x in enumerate(kinds) if not x.startswith("  "))]
    assert kinds and not any("NULL" in x or "None" in x for x in kinds), kinds
    assert any(re.match(r"  COMMIT \(control record\) +- +\d", x) for x in kinds), kinds
    assert any(re.match(r"  OffsetCommit +tombstone \(no value\) +\d", x) for x in kinds)
    assert any(re.match(r"  OffsetCommit +v5, newer than the specs +\d", x) for x in kinds)
    assert "reading 4 segment files" in proc.stdout
    assert "results go to" in proc.stdout and "replacing" not in proc.stdout
    # The forensics on the first input's log folder, one line each, their answers in --out.
    heading = next(i for i, x in enumerate(lines) if "] the forensics commands on " in x)
    assert lines[heading].endswith(
        f"the forensics commands on {REAL_DUMP} (docs/forensics.md), their answers in {out}:"
    )
    names = [x.split()[0] for x in lines[heading + 1 : heading + 5]]
    assert names == ["groups", "lag", "transactions", "downgrade-check"], lines[heading:]
    # The end: where the results are, and the next commands on the same data.
    end = lines[lines.index(f"results in {out}:") :]
    listed = [x.split()[0] for x in end[1 : end.index("next, on the same data:")]]
    assert listed == [
        "decoded.parquet",
        "committed_offsets.parquet",
        "groups.jsonl",
        "lag.txt",
        "transactions.jsonl",
        "downgrade-3.9.json",
    ]
    python = sys.executable
    steps = end[end.index("next, on the same data:") + 1 :]
    assert steps[0] == f"  {python} -m codegen groups {REAL_DUMP}"
    assert f"  {python} -m codegen lag {REAL_DUMP}" in steps
    assert f"  {python} -m codegen transactions {REAL_DUMP}" in steps
    assert f"  {python} -m codegen downgrade-check {REAL_DUMP} --to 3.9" in steps
    assert f'decoded = spark.read.parquet("{out / "decoded.parquet"}")' in proc.stdout
    assert f'forensics.read_dump(spark, Path("{REAL_DUMP}"))' in proc.stdout
    assert (out / "decoded.parquet").is_dir() and (out / "committed_offsets.parquet").is_dir()
    assert not (out / "kafka-logs").exists()  # the input was read, nothing synthesized
    # Nothing outside --out: not in the working folder, TMPDIR or the input folder.
    assert _files_below(work) == set()
    assert _files_below(temp) == set()
    assert _files_below(root) == before
    # Spark is given its scratch folder in a way it does not warn about, and the routine
    # start-up warnings of Spark and the JVM are kept out (spark_udfs.quiet).
    assert "spark.local.dir" not in proc.stderr
    routine = (
        "incubator modules|native-hadoop|log4j profile|default log level|loopback|SPARK_LOCAL_IP"
    )
    assert not re.search(routine, proc.stderr), proc.stderr


@pytest.mark.spark
@pytest.mark.slow
def test_demo_tells_the_story_of_its_synthesized_cluster(tmp_path: Path) -> None:
    """The default run, smaller: the cluster it writes and the story the forensics find in it,
    one line each, with the lag page and the next commands."""
    out = tmp_path / "results"
    env = os.environ | {
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
        "PYSPARK_PYTHON": sys.executable,
    }
    argv = ["--records", "40000", "--partitions", "2", "--out", str(out), *SHOW]
    work = tmp_path / "work"  # a working folder above neither the interpreter nor --out
    work.mkdir()
    proc = subprocess.run(
        [sys.executable, "-m", "spark_udfs.demo", *argv],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = proc.stdout.splitlines()
    assert any("wrote 40,000 records in" in x and "the story to find:" in x for x in lines)
    heading = next(i for i, x in enumerate(lines) if "] the forensics commands on " in x)
    found = {x.split()[0]: x for x in lines[heading + 1 : heading + 5]}
    assert re.search(r"recommendations rebalanced \d+ times from ", found["groups"])
    assert "inventory-sync moved from classic to consumer" in found["groups"]
    assert "deleted: console-consumer-" in found["groups"]
    for needle in (
        "fraud-detector STALL on payments-1",
        "email-notifier STOP on shipments-0, shipments-1, shipments-2",
        "search-indexer REWIND on inventory-0, inventory-1, inventory-2, inventory-3",
        "analytics-etl fell behind (orders-",
    ):
        assert needle in found["lag"], found["lag"]
    assert re.search(r"^  lag +3 ERR, \d+ OK; ", found["lag"])
    assert "1 hanging transaction: payments-1 from offset " in found["transactions"]
    assert "blocking fraud-detector" in found["transactions"]
    assert (
        "BLOCKED by group coordinator, dynamic configs, cluster features"
        in found["downgrade-check"]
    )
    page = (out / "lag.html").read_text()
    assert ">STALL</span>" in page and ">REWIND</span>" in page and ">STOP</span>" in page
    assert 'id="group-analytics-etl"' in page and 'id="group-clickstream-sessionizer"' not in page
    steps = lines[lines.index("next, on the same data:") + 1 :]
    cluster = out / "kafka-logs"
    assert steps[0] == f"  {sys.executable} -m codegen groups {cluster} --group recommendations"
    assert f"      the page of the groups worth a look: {out / 'lag.html'}" in steps


def test_routine_lines_are_dropped_from_stderr_and_the_rest_passes_as_it_comes() -> None:
    """The filter of the demo's stderr: the routine line goes, every other line stays, in
    order, and a line without its newline yet (a progress bar's) is passed at once."""
    from spark_udfs.quiet import ROUTINE_LINES, _pump

    source_r, source_w = os.pipe()
    target_r, target_w = os.pipe()
    pump = threading.Thread(target=_pump, args=(source_r, target_w, ROUTINE_LINES))
    pump.start()
    os.write(source_w, b"WARNING: Using incubator modules: jdk.incubator.vector\n")
    os.write(source_w, b"WARNING: something else\n[Stage 1:>  (0 + 2) / 4]\r")
    seen = b""
    while not seen.endswith(b"\r"):  # the progress line arrives before any newline
        seen += os.read(target_r, 4096)
    assert seen == b"WARNING: something else\n[Stage 1:>  (0 + 2) / 4]\r"
    os.write(source_w, b"WARNING: Using incub")  # held until it is known to be routine
    os.write(source_w, b"ator modules: jdk.incubator.vector\r\nWARN: Using incubator\n")
    os.close(source_w)
    pump.join(timeout=10)
    os.close(target_w)
    rest = b""
    while chunk := os.read(target_r, 4096):
        rest += chunk
    os.close(target_r)
    assert rest == b"WARN: Using incubator\n"


def test_the_readme_shows_the_demos_lag_page() -> None:
    """The README's screenshot of the demo's lag page is there, a PNG as headless Chromium
    takes it (docs/spark.md says how)."""
    import struct

    readme = (ROOT / "README.md").read_text()
    assert "![The demo's lag page" in readme and "(docs/images/demo-lag.png)" in readme
    shot = (ROOT / "docs" / "images" / "demo-lag.png").read_bytes()
    assert shot[:8] == b"\x89PNG\r\n\x1a\n" and shot[12:16] == b"IHDR"
    width, height = struct.unpack(">II", shot[16:24])
    assert width >= 1000 and height >= 800
