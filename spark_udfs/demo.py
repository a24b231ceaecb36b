"""The main job (``make demo``, ``python -m spark_udfs.demo``): decode a __consumer_offsets dump
with Spark; see DESCRIPTION (the --help text)."""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from codegen.dumps import storage
from codegen.dumps.partition_folders import partition_of
from codegen.dumps.recognize import NotKafkaData, require_kafka_data
from codegen.dumps.segments import segment_files
from codegen.dumps.storage import StoragePath
from codegen.extras import MissingExtraError
from codegen.text import plural
from spark_udfs import quiet
from spark_udfs.live import DEFAULT_CONNECTOR_JARS, ConnectorMissingError, connector_conf

if TYPE_CHECKING:
    from spark_udfs.cluster import ClusterStats
    from spark_udfs.demo_forensics import Answer

__all__ = ["DEFAULT_OUT", "input_files", "main", "parse_args"]

DEFAULT_OUT = Path(".cache") / "demo"
DESCRIPTION = """\
Decode a __consumer_offsets dump with Spark and print the committed offsets per group and a
summary, then run the forensics commands on the dump's log folder (groups, lag with its page,
transactions, downgrade-check --to 3.9) and say in one line each what they found.

Without --input it first synthesizes a small cluster's disks: one Kafka 4.4 broker's log
folder after about an hour of a web shop's traffic (data topics, __consumer_offsets with
--records records over --partitions partitions, __transaction_state, __cluster_metadata), with
a story for the forensics to find: a consumer that falls behind and recovers, one stalled
behind a hanging transaction, a rebalance storm, a rewind, a consumer that stopped, a classic
group moved to the consumer protocol. With --input it reads yours: a broker's log folder (its
__consumer_offsets-<n> folders), one partition folder, or segment files. With
--bootstrap-servers it reads the topic live from a running cluster with Spark's Kafka source
(its jars from --kafka-jars, which `make setup` fills).

Everything it writes goes below --out: the synthesized dump, the Parquet results and Spark's
scratch files. Without --out each run gets a new folder, .cache/demo/<time>-<source>; an --out
that holds an earlier run's results is reused, and the run says what it replaces. Spark runs in
local[*] unless --master names a cluster; the package is then shipped to the executors with
addPyFile.

It ends with where the results are and the next commands to try on the same data.
Exit status: 0 every record decoded; 1 a record that did not decode or a batch that could not
be read (the results are written all the same); 2 a usage error, an --input that is not
__consumer_offsets data included (a file that is not a Kafka log segment at all: "not a Kafka
log segment").
"""
TOPIC = "__consumer_offsets"
EXIT_DAMAGE = 1  # a record that did not decode or a batch not read, as python -m codegen dump
FORENSICS_NICENESS = 10
"""How much nicer than Spark the forensics commands run beside it."""

EXAMPLES = """\
examples:
  python -m spark_udfs.demo                                   # 1M synthesized records
  python -m spark_udfs.demo --records 100000 --out /tmp/demo  # a smaller run, results in /tmp/demo
  python -m spark_udfs.demo --input /var/lib/kafka/data       # a broker's log folder
  python -m spark_udfs.demo --input /backups/__consumer_offsets-7
  python -m spark_udfs.demo --input a/00000000000000000000.log b/00000000000000004096.log
  python -m spark_udfs.demo --bootstrap-servers broker1:9092     # live, from a running cluster
  python -m spark_udfs.demo --master spark://host:7077 --out /shared/demo
  make demo DUMP=/var/lib/kafka/data OUT=/tmp/demo            # the same through make
  make demo BOOTSTRAP=broker1:9092
"""


def _say(text: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {text}", flush=True)


class InputError(ValueError):
    """An ``--input`` path that cannot be read as a ``__consumer_offsets`` dump."""


def _partition_folders(log_dir: StoragePath) -> list[StoragePath]:
    """The ``__consumer_offsets-<n>`` folders of a broker's log folder, by partition number."""
    found: list[tuple[int, StoragePath]] = []
    for sub in log_dir.iterdir():
        owner = partition_of(sub.name)
        if owner is not None and owner[0] == TOPIC and sub.is_dir():
            found.append((owner[1], sub))
    return [path for _, path in sorted(found, key=lambda entry: entry[0])]


def _topic_partition(folder: StoragePath) -> tuple[str, int] | None:
    """The topic and partition a folder named ``<topic>-<n>`` holds; None for another name."""
    return partition_of(folder.name)


_GIVE = f"give a broker's log folder, a {TOPIC}-<n> folder or its .log files"
_OTHER_TOPICS = "(python -m codegen dump reads any topic)"


def _not_ours(path: StoragePath, topic: str, partition: int, what: str) -> InputError:
    return InputError(
        f"--input {path}: {what} partition {partition} of topic {topic}, not {TOPIC}; "
        f"the demo decodes {TOPIC}: {_GIVE} {_OTHER_TOPICS}"
    )


def _topics_found(folder: StoragePath) -> str:
    """``my-topic (1 partition), __cluster_metadata (1 partition)``: the partition folders."""
    counts: dict[str, int] = {}
    for sub in storage.listdir(folder):
        named = _topic_partition(sub) if sub.is_dir() else None
        if named is not None:
            counts[named[0]] = counts.get(named[0], 0) + 1
    return ", ".join(f"{t} ({plural(n, 'partition')})" for t, n in counts.items())


def input_files(paths: list[StoragePath]) -> list[StoragePath]:
    """The segment files to decode: a file as given; a partition folder's segments; for a
    broker's log folder, the segments of its ``__consumer_offsets-<n>`` folders.

    Raises :class:`InputError` for a path that does not exist, a folder with nothing to read,
    a partition folder (or a segment in one) of another topic, a log folder without
    ``__consumer_offsets`` partitions (the error names what it found there), and a file that is
    not Kafka log data ("not a Kafka log segment", :mod:`codegen.dumps.recognize`).
    """
    files: list[StoragePath] = []
    for path in paths:
        if path.is_file():
            named = _topic_partition(path.parent)
            if named is not None and named[0] != TOPIC:
                raise _not_ours(path, *named, "a segment of")
            files.append(path)
            continue
        if not path.is_dir():
            raise InputError(f"--input {path}: no such file or folder")
        named = _topic_partition(path)
        if named is not None and named[0] != TOPIC:
            raise _not_ours(path, *named, "the folder of")
        partitions = _partition_folders(path)
        found = [f for folder in partitions for f in segment_files(folder) if f.suffix == ".log"]
        if not partitions:
            others = _topics_found(path)
            if others:
                raise InputError(
                    f"--input {path}: a log folder with partitions of {others}, but no "
                    f"{TOPIC}-<n> folder; {_GIVE} {_OTHER_TOPICS}"
                )
            found = [f for f in segment_files(path) if f.suffix == ".log"]
        if not found:
            raise InputError(
                f"--input {path}: no .log segments here and no {TOPIC}-<n> partition folders; "
                f"{_GIVE}"
            )
        files.extend(found)
    try:
        require_kafka_data(files)
    except NotKafkaData as exc:
        raise InputError(f"--input: {exc}") from None
    return files


def _host_port(text: str) -> bool:
    host, _, port = text.strip().rpartition(":")
    return bool(host) and port.isdigit()


def _positive(text: str) -> int:
    value = int(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be a positive number, not {text}")
    return value


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m spark_udfs.demo",
        description=DESCRIPTION,
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--input",
        type=storage.path,
        nargs="+",
        action="extend",
        metavar="PATH",
        help="decode this dump instead of a synthesized one: a broker's log folder, a "
        f"{TOPIC}-<n> folder or segment files (repeatable)",
    )
    parser.add_argument(
        "--bootstrap-servers",
        metavar="HOST:PORT[,HOST:PORT...]",
        help=f"read {TOPIC} live from this cluster instead of a dump (Spark's Kafka source)",
    )
    parser.add_argument(
        "--kafka-jars",
        type=Path,
        default=DEFAULT_CONNECTOR_JARS,
        metavar="FOLDER",
        help="with --bootstrap-servers: the jars of Spark's Kafka source "
        f"(default: {DEFAULT_CONNECTOR_JARS}, filled by `make setup`)",
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=None,
        help="folder for everything the job writes (default: a new folder per run, "
        f"{DEFAULT_OUT}/<time>-<source>)",
    )
    synth = parser.add_argument_group("synthesized dump (without --input or --bootstrap-servers)")
    synth.add_argument(
        "--records",
        type=_positive,
        help=f"records of {TOPIC} to write (default 1000000; the cluster's hour is longer for "
        "more)",
    )
    synth.add_argument("--partitions", type=_positive, help=f"partitions of {TOPIC} (default 4)")
    synth.add_argument(
        "--groups",
        type=_positive,
        help="consumer groups reading clickstream, beside the story's (default 20)",
    )
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--master", default=None, help="Spark master URL (default local[*])")
    where.add_argument(
        "--remote",
        default=None,
        help="a Spark Connect server's URL, sc://host:port (default: SPARK_REMOTE); its Python "
        "workers must import this package (make connect-server)",
    )
    parser.add_argument("--show", type=_positive, default=40, help="result rows to print")
    return parser


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """The arguments, checked: a usage error exits with status 2 and says what to change."""
    parser = _parser()
    args = parser.parse_args(argv)
    synth_options = [f"--{n}" for n in ("records", "partitions", "groups") if getattr(args, n)]
    args.files = None
    if args.bootstrap_servers is not None:
        if args.input or synth_options:
            given = ", ".join(["--input"] * bool(args.input) + synth_options)
            parser.error(f"{given} name a dump; leave them out with --bootstrap-servers")
        if not all(_host_port(s) for s in args.bootstrap_servers.split(",")):
            parser.error(
                f"--bootstrap-servers {args.bootstrap_servers}: give HOST:PORT, or several "
                "separated by commas"
            )
        try:
            args.kafka_conf = connector_conf(args.kafka_jars)
        except ConnectorMissingError as exc:
            parser.error(f"--kafka-jars: {exc}")
    elif args.input:
        if synth_options:
            given = ", ".join(synth_options)
            parser.error(f"{given} size the synthesized dump; leave them out with --input")
        try:
            args.files = input_files(args.input)
        except InputError as exc:
            parser.error(str(exc))
    else:
        args.records = args.records or 1_000_000
        args.partitions = args.partitions or 4
        args.groups = args.groups or 20
    if args.out is None:
        args.out = _run_folder(args)
    elif args.out.exists() and not args.out.is_dir():
        parser.error(f"--out {args.out} is a file; give a folder (it is created if missing)")
    return args


def _run_folder(args: argparse.Namespace) -> Path:
    """``.cache/demo/<time>-<source>``: a folder of its own for this run."""
    if args.bootstrap_servers is not None:
        source = "live"
    elif args.input:
        source = args.input[0].resolve().name or "input"
    else:
        source = "synthesized"
    stem = f"{time.strftime('%Y%m%d-%H%M%S')}-{source}"
    folder, n = DEFAULT_OUT / stem, 1
    while folder.exists():  # two runs in one second
        n += 1
        folder = DEFAULT_OUT / f"{stem}-{n}"
    return folder


CLUSTER = "kafka-logs"
"""The synthesized cluster's folder below --out: its broker's log folder."""
# What a run writes below --out; an earlier run's are replaced, and the run says so.
RESULTS = {
    "decoded.parquet": "every record with its decoded key and value (the kafka-log columns)",
    "committed_offsets.parquet": "the committed offset of each group, topic and partition",
    "groups.jsonl": "python -m codegen groups: each group's state, members and timeline",
    "lag.txt": "python -m codegen lag: every group's lag and status",
    "lag.html": "python -m codegen lag --format html: the page of the groups worth a look",
    "transactions.jsonl": "python -m codegen transactions: transactional ids, partitions, hanging",
    "downgrade-3.9.json": "python -m codegen downgrade-check --to 3.9: the verdict and its checks",
    CLUSTER: "the synthesized cluster: a broker's log folder",
}
BROKER_FILES = (
    "meta.properties",
    ".kafka_cleanshutdown",
    "cleaner-offset-checkpoint",
    "log-start-offset-checkpoint",
    "recovery-point-offset-checkpoint",
    "replication-offset-checkpoint",
)
"""A broker's files beside its partition folders: what a synthesized cluster holds."""


def _spark_conf(out: Path) -> dict[str, str]:
    """Spark's scratch space, the warehouse and the JVM's temporary files go below ``out``.
    The scratch space is given as ``SPARK_LOCAL_DIRS`` (in the environment the JVM starts
    with), not ``spark.local.dir``, which makes Spark warn that a cluster manager overrides it.
    The driver's log4j configuration keeps routine start-up notes out (spark_udfs.quiet)."""
    scratch = out / "spark-tmp"
    scratch.mkdir(parents=True, exist_ok=True)
    os.environ["SPARK_LOCAL_DIRS"] = str(scratch)
    java = f"-Djava.io.tmpdir={scratch} -XX:-UsePerfData"
    driver_java = f"{java} {quiet.java_options()}"
    return {
        "spark.sql.warehouse.dir": str(out / "spark-warehouse"),
        "spark.driver.extraJavaOptions": driver_java,
        "spark.executor.extraJavaOptions": java,
        # Spark's console progress bar, where a person is watching.
        "spark.ui.showConsoleProgress": "true" if sys.stderr.isatty() else "false",
    }


def _synthesize(args: argparse.Namespace, dump: Path) -> tuple[list[Path], ClusterStats]:
    from spark_udfs.cluster import write_cluster

    _say(
        f"writing a small cluster's disks to {dump}: {args.records:,} records of {TOPIC} over "
        f"{args.partitions} partitions, beside its data topics, __transaction_state and "
        "__cluster_metadata"
    )
    try:
        stats = write_cluster(  # reports every tenth of the records, and the last
            dump,
            records=args.records,
            partitions=args.partitions,
            groups=args.groups,
            progress=lambda n: _say(f"  {n:,} of {args.records:,} records of {TOPIC} written"),
        )
    except ValueError as exc:  # too few --records for the story, or --groups for the rest
        shutil.rmtree(dump, ignore_errors=True)  # the part written before it could tell
        _parser().error(str(exc))
    size = sum(f.stat().st_size for f in stats.files)
    minutes = (stats.end - stats.start) // 60_000
    _say(
        f"wrote {plural(stats.records, 'record')} in {plural(stats.batches, 'batch')} "
        f"({size / 1e6:.1f} MB) of {TOPIC}: {minutes} minutes of "
        f"{plural(len(stats.groups), 'group')} and {stats.data_records:,} records of data; the "
        "story to find:"
    )
    for group, what in stats.story.items():
        print(f"  {group:<24} {what}")
    return list(stats.files), stats


def _start_spark(
    master: str | None, out: Path, conf: dict[str, str], remote: str | None = None
) -> Any:
    from spark_udfs.connect import add_python_file
    from spark_udfs.session import build_package_zip, get_session
    from spark_udfs.workers import warn_pure_workers

    remote = remote or (None if master else os.environ.get("SPARK_REMOTE"))
    if remote:
        _say(f"connecting to the Spark Connect server {remote}")
        spark_conf = {**_spark_conf(out), **conf}  # a running server takes its spark.sql.* ones
        return get_session(app_name="kafka-specgen-demo", extra_conf=spark_conf, remote=remote)
    _say(f"starting Spark ({master or 'local[*]'})")
    spark_conf = {**_spark_conf(out), **conf}
    try:
        # The JVM's one routine line that no option turns off, dropped from stderr.
        with quiet.routine_lines_dropped():
            spark = get_session(master, app_name="kafka-specgen-demo", extra_conf=spark_conf)
    except Exception as exc:  # the JVM did not start: almost always Java
        raise SystemExit(
            f"Spark did not start: {exc}\n"
            "The demo needs Java 17: check `java -version`, or set JAVA_HOME to a Java 17 home."
        ) from None
    if master:  # executors elsewhere import the package from the zip
        add_python_file(spark, build_package_zip(out / "kafka_specgen.zip"))
        warn_pure_workers(spark)  # a zip carries no compiled engine: the client hears it
    return spark


def _remove_earlier_dump(dump: Path) -> None:
    """An earlier run's synthesized cluster, before this run writes its own (a partition it
    had and this one has not would stay behind). Only a folder of partition folders and a
    broker's own files (:data:`BROKER_FILES`) is removed; anything else there is an error that
    says so."""
    if not dump.exists():
        return
    theirs = [
        p for p in dump.iterdir() if _topic_partition(p) is None and p.name not in BROKER_FILES
    ]
    if not dump.is_dir() or theirs:
        raise SystemExit(
            f"error: {dump} is not a synthesized cluster of an earlier run (it holds more than "
            "partition folders and a broker's files); give another --out"
        )
    shutil.rmtree(dump)


def _replaced(out: Path) -> list[str]:
    """The results of an earlier run in ``out``, which this run replaces."""
    return [name for name in RESULTS if (out / name).exists()]


# The summary's figures: (label in the words of docs/naming.md, Spark column, what it means).
SUMMARY = (
    ("records", None, "every row the kafka-log source read"),
    ("control records (isControl)", "isControl", "transaction markers, COMMIT or ABORT"),
    ("tombstones (isTombstone)", "isTombstone", "a key with no value: an offset or group deleted"),
    (
        "newer than the specs (isNewerVersion)",
        "isNewerVersion",
        "a value version above the specs' highest, read by the fields the specs know",
    ),
    (
        "in transactions (isTransactional)",
        "isTransactional",
        "written by a transactional producer, markers included",
    ),
    ("did not decode (_decode_error)", "_decode_error", "the reason is in _decode_error"),
    (
        "batches not read (_error)",
        "_error",
        "a stretch of a segment that could not be read; the reason is in _error",
    ),
)


def _summary(decoded: Any) -> dict[str, int]:
    from pyspark.sql import functions as F

    figures = []
    for label, column, _ in SUMMARY:
        if column is None:
            figures.append(F.count("*").alias(label))
        elif column.startswith("_"):
            figures.append(F.sum(F.col(column).isNotNull().cast("int")).alias(label))
        else:
            figures.append(F.sum(F.col(column).cast("int")).alias(label))
    row = decoded.agg(*figures).first()
    assert row is not None
    counts = {label: int(value or 0) for label, value in row.asDict().items()}
    width = max(len(label) for label, _, _ in SUMMARY)
    print("  the records read, by the columns of decoded.parquet (names as in docs/naming.md):")
    for label, _, meaning in SUMMARY:
        print(f"  {label:<{width}}  {counts[label]:>12,}  {meaning}")
    return counts


def _record_kinds(decoded: Any) -> None:
    """Records per ``recordName`` and value version, each row labelled: control records by their
    type, tombstones and newer versions said, no NULL rows."""
    from pyspark.sql import functions as F

    from codegen.dumps import ControlType

    control_type = F.conv(F.hex(F.substring(F.col("key"), 3, 2)), 16, 10).cast("int")
    control_name = F.concat(F.lit("control type "), control_type.cast("string"))
    for member in ControlType:
        control_name = F.when(control_type == member.value, F.lit(member.name)).otherwise(
            control_name
        )
    record = (
        F.when(F.col("_error").isNotNull(), F.lit("(a batch that could not be read)"))
        .when(F.col("isControl"), F.concat(control_name, F.lit(" (control record)")))
        .when(
            F.col("recordName").isNull(),
            F.concat(
                F.lit("(unknown record type "), F.col("recordType").cast("string"), F.lit(")")
            ),
        )
        .otherwise(F.col("recordName"))
    )
    version = F.concat(F.lit("v"), F.col("valueVersion").cast("string"))
    value = (
        F.when(F.col("_error").isNotNull() | F.col("isControl"), F.lit("-"))
        .when(F.col("_decode_error").isNotNull(), F.lit("did not decode"))
        .when(F.col("isTombstone"), F.lit("tombstone (no value)"))
        .when(F.col("isNewerVersion"), F.concat(version, F.lit(", newer than the specs")))
        .when(F.col("valueVersion").isNull(), F.lit("-"))
        .otherwise(version)
    )
    rows = (
        decoded.groupBy(record.alias("recordName"), value.alias("value"))
        .count()
        .orderBy("recordName", "value")
        .collect()
    )
    width = max([len("recordName"), *(len(r["recordName"]) for r in rows)])
    print("  records per type (recordName) and value version:")
    print(f"  {'recordName':<{width}}  {'value':<28}  {'records':>12}")
    for r in rows:
        print(f"  {r['recordName']:<{width}}  {r['value']:<28}  {r['count']:>12,}")


def _shown(path: str | StoragePath) -> str:
    """A path as the user would type it from here: relative below the working folder (a URL
    as it is)."""
    if storage.is_url(path):
        return str(path)
    here = os.path.relpath(str(path))
    return here if not here.startswith("..") else str(path)


def _python() -> str:
    """The interpreter to name in the next commands."""
    return _shown(sys.executable)


def _log_folder(args: argparse.Namespace, out: Path) -> StoragePath | None:
    """A folder the forensics commands read (a log folder or a partition folder), if any."""
    if args.bootstrap_servers is not None:
        return None
    if args.files is None:
        return out / CLUSTER
    first: StoragePath = args.input[0]
    return first if first.is_dir() else first.parent


def _next_steps(
    args: argparse.Namespace, out: Path, answers: list[Answer], stats: ClusterStats | None
) -> None:
    python = _python()
    shown = {name: text for name, text in RESULTS.items() if (out / name).exists()}
    print(f"results in {_shown(out)}:")
    for name, text in shown.items():
        print(f"  {name + ('/' if name == CLUSTER else ''):<27} {text}")
    print("next, on the same data:")
    folder = _log_folder(args, out)
    if folder is not None:
        where = _shown(folder)
        story = stats.story if stats is not None else {}
        group = next((g for g in ("recommendations", "inventory-sync") if g in story), None)
        one = f" --group {group}" if group else ""
        print(f"  {python} -m codegen groups {where}{one}")
        print("      a group's state, members, assignors and timeline (docs/forensics.md)")
        print(f"  {python} -m codegen lag {where}")
        print("      every group's lag and Burrow status; --format html draws them")
        if any(a.name == "lag" and a.file.suffix == ".html" for a in answers):
            print(f"      the page of the groups worth a look: {_shown(out / 'lag.html')}")
        print(f"  {python} -m codegen transactions {where}")
        print("      hanging transactions, what they block and the command that ends them")
        print(f"  {python} -m codegen downgrade-check {where} --to 3.9")
        print("      what keeps the cluster from going back to Kafka 3.9, and what to do first")
    print("  in Python, the Spark functions on the same data (docs/spark.md, docs/forensics.md):")
    print("      from pathlib import Path")
    print("      from spark_udfs import compacted, forensics")
    print("      from spark_udfs.session import get_session")
    print("      spark = get_session()")
    print(f'      decoded = spark.read.parquet("{out / "decoded.parquet"}")')
    print("      compacted.group_states(decoded).show()")
    if folder is not None:
        print(
            f'      forensics.group_timelines(forensics.read_dump(spark, Path("{folder}"))).show()'
        )


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        import pyspark  # noqa: F401
    except ModuleNotFoundError as exc:
        error = MissingExtraError("python -m spark_udfs.demo", "spark", exc.name)
        print(f"error: {error}", file=sys.stderr)
        return 1
    out: Path = args.out.resolve()
    replaced = _replaced(out) if out.exists() else []
    if replaced:
        _say(f"results go to {out}, replacing the earlier run's {', '.join(replaced)}")
    else:
        _say(f"results go to {out}")
    out.mkdir(parents=True, exist_ok=True)
    if args.files is None and args.bootstrap_servers is None:
        _remove_earlier_dump(out / CLUSTER)
    # Python's temporary files (ours, pyspark's and its workers') stay below --out too.
    scratch = out / "spark-tmp"
    scratch.mkdir(exist_ok=True)
    os.environ["TMPDIR"] = tempfile.tempdir = str(scratch)
    started = time.time()
    stats: ClusterStats | None = None
    files: list[StoragePath] = []
    if args.bootstrap_servers is not None:
        pass
    elif args.files is None:
        synthesized, stats = _synthesize(args, out / CLUSTER)
        files = list(synthesized)
    else:
        files = args.files
        size = sum(f.stat().st_size for f in files)
        _say(f"reading {plural(len(files), 'segment file')}, {size / 1e6:.1f} MB")

    from pyspark.sql import functions as F

    from spark_udfs import compacted, live
    from spark_udfs.demo_forensics import start_forensics
    from spark_udfs.functions import decode_consumer_offsets
    from spark_udfs.session import kafka_log_reader

    # The forensics commands run beside Spark, on the cores it leaves idle (niced); their
    # lines come after Spark's.
    folder = _log_folder(args, out)
    page = stats.lag_page if stats is not None else ()
    forensics = (
        start_forensics(folder, out, sys.executable, page, niceness=FORENSICS_NICENESS)
        if folder is not None
        else None
    )
    spark = _start_spark(args.master, out, getattr(args, "kafka_conf", {}), args.remote)
    decoded_path = out / "decoded.parquet"
    if args.bootstrap_servers is not None:
        _say(f"reading {TOPIC} from {args.bootstrap_servers} and decoding it into {decoded_path}")
        raw = live.read_internal_topic(spark, args.bootstrap_servers, TOPIC)
        decoded = live.as_log_rows(decode_consumer_offsets(raw, mode="PERMISSIVE"))
    else:
        _say(f"reading and decoding the dump into {decoded_path}")
        raw = kafka_log_reader(spark).load([str(f) for f in files])
        decoded = decode_consumer_offsets(raw, mode="PERMISSIVE")
    decoded.write.mode("overwrite").parquet(str(decoded_path))
    decoded = spark.read.parquet(str(decoded_path))

    _say("summary")
    counts = _summary(decoded)
    _record_kinds(decoded)
    damaged = counts[SUMMARY[-2][0]] + counts[SUMMARY[-1][0]]
    data_records = counts["records"] - counts[SUMMARY[1][0]]
    if data_records and counts[SUMMARY[-2][0]] == data_records:
        _say(
            f"none of the {plural(data_records, 'record')} decoded as {TOPIC} records: is this "
            f"another topic's data? (python -m codegen dump reads any topic)"
        )
        spark.stop()
        if forensics is not None:
            forensics.answers()  # their answers are in --out; nothing left running
        return EXIT_DAMAGE

    _say("committed offsets (compacted, distributed: spark_udfs.compacted.committed_offsets)")
    offsets_path = out / "committed_offsets.parquet"
    compacted.committed_offsets(decoded).write.mode("overwrite").parquet(str(offsets_path))
    offsets = spark.read.parquet(str(offsets_path))
    per_group = offsets.groupBy("group").agg(
        F.countDistinct("topic").alias("topics"),
        F.count("*").alias("partitions"),
        F.timestamp_millis(F.max("commitTimestamp")).alias("lastCommit (UTC)"),
    )
    print(
        "  per group: the topics and partitions it holds a committed offset for, and its latest "
        "commitTimestamp"
    )
    per_group.orderBy("group").show(args.show, truncate=False)
    print("  the committed offsets (one row per group, topic and partition):")
    offsets.orderBy("group", "topic", "partition").show(args.show, truncate=False)
    print("  groups per type and state (spark_udfs.compacted.group_states):")
    groups = compacted.group_states(decoded)
    groups.groupBy("type", "state").count().withColumnRenamed("count", "groups").orderBy(
        "type", "state"
    ).show(truncate=False)
    committed, group_count = offsets.count(), per_group.count()
    spark.stop()
    status = EXIT_DAMAGE if damaged else 0
    verdict = (
        f"{plural(damaged, 'record or batch', 'records or batches')} could not be read or "
        "decoded (see _decode_error and _error in decoded.parquet): exit status 1"
        if damaged
        else "every record decoded"
    )
    _say(
        f"Spark done: {plural(committed, 'committed offset')} in "
        f"{plural(group_count, 'group')}; {verdict}"
    )
    answers = []
    if forensics is not None and folder is not None:
        _say(
            f"the forensics commands on {_shown(folder)} (docs/forensics.md), their answers in "
            f"{_shown(out)}:"
        )
        answers = forensics.answers()
        width = max(len(a.name) for a in answers)
        for answer in answers:
            print(f"  {answer.name:<{width}}  {answer.line}")
    _say(f"done in {time.time() - started:.0f} s")
    _next_steps(args, out, answers, stats)
    return status


if __name__ == "__main__":
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    sys.exit(main())
