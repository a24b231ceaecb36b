"""The main job (``make demo``, ``python -m spark_udfs.demo``): decode a __consumer_offsets dump
with Spark; see DESCRIPTION (the --help text)."""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from codegen.dumps.segments import segment_files
from codegen.extras import MissingExtraError
from spark_udfs.live import DEFAULT_CONNECTOR_JARS, ConnectorMissingError, connector_conf

__all__ = ["DEFAULT_OUT", "input_files", "main", "parse_args"]

DEFAULT_OUT = Path(".cache") / "demo"
DESCRIPTION = """\
Decode a __consumer_offsets dump with Spark and print the committed offsets per group and a
summary. Without --input it first synthesizes a dump (--records records over --partitions
partitions); with --input it reads yours: a broker's log folder (its __consumer_offsets-<n>
folders), one partition folder, or segment files. With --bootstrap-servers it reads the topic
live from a running cluster with Spark's Kafka source (its jars from --kafka-jars, which
`make setup` fills).

Everything it writes goes below --out (default .cache/demo): the synthesized dump, the Parquet
results and Spark's scratch files. Spark runs in local[*] unless --master names a cluster; the
package is then shipped to the executors with addPyFile.
"""
TOPIC = "__consumer_offsets"

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


def _partition_folders(log_dir: Path) -> list[Path]:
    """The ``__consumer_offsets-<n>`` folders of a broker's log folder, by partition number."""
    found: list[tuple[int, Path]] = []
    for sub in log_dir.iterdir():
        name, _, number = sub.name.rpartition("-")
        if sub.is_dir() and name == TOPIC and number.isdigit():
            found.append((int(number), sub))
    return [path for _, path in sorted(found)]


def input_files(paths: list[Path]) -> list[Path]:
    """The segment files to decode: a file as given; a partition folder's segments; for a
    broker's log folder, the segments of its ``__consumer_offsets-<n>`` folders.

    Raises :class:`InputError` for a path that does not exist or a folder with nothing to read.
    """
    files: list[Path] = []
    for path in paths:
        if path.is_file():
            files.append(path)
            continue
        if not path.is_dir():
            raise InputError(f"--input {path}: no such file or folder")
        partitions = _partition_folders(path)
        found = [f for folder in partitions for f in segment_files(folder) if f.suffix == ".log"]
        if not partitions:
            found = [f for f in segment_files(path) if f.suffix == ".log"]
        if not found:
            raise InputError(
                f"--input {path}: no .log segments here and no {TOPIC}-<n> partition folders; "
                f"give a broker's log folder, a {TOPIC}-<n> folder or .log files"
            )
        files.extend(found)
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
        type=Path,
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
        default=DEFAULT_OUT,
        help=f"folder for everything the job writes (default: {DEFAULT_OUT})",
    )
    synth = parser.add_argument_group("synthesized dump (without --input or --bootstrap-servers)")
    synth.add_argument("--records", type=_positive, help="records to write (default 1000000)")
    synth.add_argument("--partitions", type=_positive, help="partitions (default 4)")
    synth.add_argument("--groups", type=_positive, help="consumer groups (default 300)")
    parser.add_argument("--master", default=None, help="Spark master URL (default local[*])")
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
        args.groups = args.groups or 300
    if args.out.exists() and not args.out.is_dir():
        parser.error(f"--out {args.out} is a file; give a folder (it is created if missing)")
    return args


def _spark_conf(out: Path) -> dict[str, str]:
    """Spark's scratch space, the warehouse and the JVM's temporary files go below ``out``."""
    scratch = out / "spark-tmp"
    scratch.mkdir(parents=True, exist_ok=True)
    java = f"-Djava.io.tmpdir={scratch} -XX:-UsePerfData"
    return {
        "spark.local.dir": str(scratch),
        "spark.sql.warehouse.dir": str(out / "spark-warehouse"),
        "spark.driver.extraJavaOptions": java,
        "spark.executor.extraJavaOptions": java,
        # Spark's console progress bar, where a person is watching.
        "spark.ui.showConsoleProgress": "true" if sys.stderr.isatty() else "false",
    }


def _synthesize(args: argparse.Namespace, dump: Path) -> list[Path]:
    from spark_udfs.synth import write_consumer_offsets

    _say(f"writing {args.records:,} records over {args.partitions} partitions to {dump}")
    stats = write_consumer_offsets(  # reports every tenth of the records
        dump,
        records=args.records,
        partitions=args.partitions,
        groups=args.groups,
        progress=lambda n: _say(f"  {n:,} of {args.records:,} records written"),
    )
    size = sum(f.stat().st_size for f in stats.files)
    _say(f"wrote {stats.records:,} records in {stats.batches:,} batches ({size / 1e6:.1f} MB)")
    return list(stats.files)


def _start_spark(master: str | None, out: Path, conf: dict[str, str]) -> Any:
    from spark_udfs.connect import add_python_file
    from spark_udfs.session import build_package_zip, get_session

    _say(f"starting Spark ({master or 'local[*]'})")
    try:
        spark = get_session(
            master, app_name="kafka-specgen-demo", extra_conf={**_spark_conf(out), **conf}
        )
    except Exception as exc:  # the JVM did not start: almost always Java
        raise SystemExit(
            f"Spark did not start: {exc}\n"
            "The demo needs Java 17: check `java -version`, or set JAVA_HOME to a Java 17 home."
        ) from None
    if master:  # executors elsewhere import the package from the zip
        add_python_file(spark, build_package_zip(out / "kafka_specgen.zip"))
    return spark


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        import pyspark  # noqa: F401
    except ModuleNotFoundError as exc:
        error = MissingExtraError("python -m spark_udfs.demo", "spark", exc.name)
        print(f"error: {error}", file=sys.stderr)
        return 1
    out: Path = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    # Python's temporary files (ours, pyspark's and its workers') stay below --out too.
    scratch = out / "spark-tmp"
    scratch.mkdir(exist_ok=True)
    os.environ["TMPDIR"] = tempfile.tempdir = str(scratch)
    started = time.time()
    if args.bootstrap_servers is not None:
        files = []
    elif args.files is None:
        files = _synthesize(args, out / "dump")
    else:
        files = args.files
        size = sum(f.stat().st_size for f in files)
        _say(f"reading {len(files)} segment file(s), {size / 1e6:.1f} MB")

    from pyspark.sql import functions as F

    from spark_udfs import compacted, live
    from spark_udfs.functions import decode_consumer_offsets
    from spark_udfs.session import kafka_log_reader

    spark = _start_spark(args.master, out, getattr(args, "kafka_conf", {}))
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
    summary = decoded.agg(
        F.count("*").alias("rows"),
        F.sum(F.col("isControl").cast("int")).alias("control"),
        F.sum(F.col("isTombstone").cast("int")).alias("tombstones"),
        F.sum(F.col("isNewerVersion").cast("int")).alias("newer"),
        F.sum(F.col("_decode_error").isNotNull().cast("int")).alias("decode_errors"),
        F.sum(F.col("_error").isNotNull().cast("int")).alias("corrupt_batches"),
        F.sum(F.col("isTransactional").cast("int")).alias("transactional"),
    ).first()
    assert summary is not None
    for key, value in summary.asDict().items():
        print(f"  {key:>16}: {value or 0:,}")
    decoded.groupBy("recordName", "valueVersion").count().orderBy(
        "recordName", "valueVersion"
    ).show(50, truncate=False)

    _say("committed offsets per group (compacted, distributed)")
    offsets_path = out / "committed_offsets.parquet"
    compacted.committed_offsets(decoded).write.mode("overwrite").parquet(str(offsets_path))
    offsets = spark.read.parquet(str(offsets_path))
    per_group = offsets.groupBy("group").agg(
        F.count("*").alias("partitions"),
        F.sum("offset").alias("total_offset"),
        F.max("commitTimestamp").alias("last_commit_ms"),
    )
    per_group.orderBy("group").show(args.show, truncate=False)
    offsets.orderBy("group", "topic", "partition").show(args.show, truncate=False)
    groups = compacted.group_states(decoded)
    groups.groupBy("type", "state").count().orderBy("type", "state").show(truncate=False)
    _say(
        f"{offsets.count():,} committed offsets in {per_group.count():,} groups; "
        f"results in {out}; total {time.time() - started:.0f} s"
    )
    spark.stop()
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    sys.exit(main())
