"""Spark decode benchmark (not a test): our arrow_udf decoders vs a pickled @udf vs a JVM UDF.

    .venv/bin/python bench/bench_spark.py [--rows 2000000] [--runs 3] [--scale 1,4,16]
        [--work DIR] [--skip-scale] [--skip-source] [--skip-udf]

One run, ``local[2]``:

1. UDFs: decode 2 M OffsetCommit key/value pairs (record type 1 keys, value v3) from Parquet
   with ``decode_offset_commit_key``/``decode_offset_commit_value``, with a pickled
   ``@udf(useArrow=False)`` baseline (``struct.unpack_from``) and with a Java ``UDF1`` reference
   (``bench/jvm/DecodeOffsetCommit.java``, compiled here with ``javac`` against pyspark's jars)
   in two forms: the five value columns a hand-written decoder returns, and our full value schema
   (with ``topicId`` and the tagged-field map, null as ours gives it). A probe ``arrow_udf`` that returns
   ready-made structs of our schema measures the Arrow bridge alone (the floor for any
   ``arrow_udf`` with this output).
2. Data source: the same records as log segments through ``kafka-log`` vs from Parquet (raw read,
   and read + ``decode_consumer_offsets``), and ``kafka-log`` decoding inline
   (``decode=true``); the ``kafka-log`` reads run with the native columnar record loop and with
   the pure one (``recordLoop=pure``, the loop before the native one). ``kafka-log`` decoding
   just what the JVM UDF returns (``recordTypes=OffsetCommit``, ``columns=decodedKey,
   decodedValue``) is timed against the JVM UDF with our full schema, and each decoded read
   against its floor: a data source that hands Spark the same batches ready-made (Arrow IPC
   files written beforehand) with no work.
3. Scale: 1 M, 4 M, 16 M records (Parquet files repeated) through our UDFs, and the same sizes
   as log segments (the segments repeated) through ``kafka-log`` with ``decode=true``: time per
   record, and the driver's memory (Python RSS and JVM heap used) after each size.

Each timed job writes to the ``noop`` sink after one warm-up run; the jobs of a section run in
turn, ``--runs`` rounds, and the median is reported, with the CPU seconds the driver JVM and the
Python workers used. Results are printed and written to ``<work>/results.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import struct
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
from timing import timed

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)

JVM_SRC = ROOT / "bench" / "jvm" / "DecodeOffsetCommit.java"
JVM_BUILD = ROOT / "bench" / "jvm" / "build"
KEY_DDL = "struct<group:string,topic:string,partition:int>"
VALUE_DDL = (
    "struct<offset:bigint,leaderEpoch:int,metadata:string,commitTimestamp:bigint,"
    "expireTimestamp:bigint>"
)
FULL_VALUE_DDL = VALUE_DDL[:-1] + ",topicId:string,_unknown_tagged_fields:map<int,binary>>"


def say(text: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {text}", flush=True)


def compile_jvm() -> Path:
    import pyspark

    jars = Path(pyspark.__file__).parent / "jars"
    JVM_BUILD.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        ["javac", "-cp", f"{jars}/*", "-d", str(JVM_BUILD / "classes"), str(JVM_SRC)], check=True
    )
    jar = JVM_BUILD / "decode_offset_commit.jar"
    subprocess.run(["jar", "cf", str(jar), "-C", str(JVM_BUILD / "classes"), "."], check=True)
    return jar


def records(n: int, seed: int = 42) -> tuple[list[bytes], list[bytes | None]]:
    """OffsetCommit keys (type 1) and values (v3): 1 % tombstones, varied metadata."""
    import random

    rnd = random.Random(seed)
    h, qih, q, i32 = (
        struct.Struct(">h"),
        struct.Struct(">qih"),
        struct.Struct(">q"),
        struct.Struct(">i"),
    )
    groups = [f"group-{g:04d}".encode() for g in range(500)]
    topics = [f"topic-{t:02d}".encode() for t in range(40)]
    metas = [b""] * 85 + [b"checkpoint-%d" % k for k in range(10)] + ["mëta-ü".encode()] * 5
    keys: list[bytes] = []
    values: list[bytes | None] = []
    for k in range(n):
        g, t = groups[k % 500], topics[(k // 500) % 40]
        keys.append(h.pack(1) + h.pack(len(g)) + g + h.pack(len(t)) + t + i32.pack(k % 64))
        if rnd.random() < 0.01:
            values.append(None)
            continue
        meta = metas[rnd.randrange(100)]
        epoch = -1 if rnd.random() < 0.3 else k % 100
        values.append(
            h.pack(3) + qih.pack(k, epoch, len(meta)) + meta + q.pack(1_700_000_000_000 + k)
        )
    return keys, values


def write_parquet(path: Path, n: int, files: int = 4) -> None:
    import pyarrow.parquet as pq

    keys, values = records(n)
    path.mkdir(parents=True, exist_ok=True)
    step = n // files
    for f in range(files):
        lo, hi = f * step, n if f == files - 1 else (f + 1) * step
        table = pa.table(
            {
                "partition": pa.array([f] * (hi - lo), pa.int32()),
                "offset": pa.array(range(lo, hi), pa.int64()),
                "key": pa.array(keys[lo:hi], pa.binary()),
                "value": pa.array(values[lo:hi], pa.binary()),
            }
        )
        pq.write_table(table, path / f"part-{f}.parquet", row_group_size=hi - lo)


def write_segments(path: Path, n: int, files: int = 4) -> None:
    from codegen.dumps import SegmentWriter

    keys, values = records(n)
    step = n // files
    for f in range(files):
        seg = path / f"__consumer_offsets-{f}" / "00000000000000000000.log"
        seg.parent.mkdir(parents=True, exist_ok=True)
        lo, hi = f * step, n if f == files - 1 else (f + 1) * step
        with SegmentWriter(seg) as w:
            for b in range(lo, hi, 200):
                w.write_batch(
                    list(
                        zip(keys[b : min(b + 200, hi)], values[b : min(b + 200, hi)], strict=True)
                    ),
                    timestamp=1_700_000_000_000,
                )


def plain_udfs() -> tuple[Any, Any]:
    from pyspark.sql.functions import udf

    def decode_key(b: bytes | None) -> Any:
        if b is None:
            return None
        n = struct.unpack_from(">h", b, 2)[0]
        group = b[4 : 4 + n].decode()
        o = 4 + n
        m = struct.unpack_from(">h", b, o)[0]
        topic = b[o + 2 : o + 2 + m].decode()
        return (group, topic, struct.unpack_from(">i", b, o + 2 + m)[0])

    def decode_value(b: bytes | None) -> Any:
        if b is None:
            return None
        offset, epoch, n = struct.unpack_from(">qih", b, 2)
        meta = b[16 : 16 + n].decode()
        return (offset, epoch, meta, struct.unpack_from(">q", b, 16 + n)[0], -1)

    return (udf(decode_key, KEY_DDL, useArrow=False), udf(decode_value, VALUE_DDL, useArrow=False))


class ReadyBatches(DataSource):
    """``ready-batches``: the Arrow IPC files of a folder, one input partition each, handed to
    Spark as they are (the floor of any Python data source with that output)."""

    @classmethod
    def name(cls) -> str:
        return "ready-batches"

    def schema(self) -> Any:
        from pyspark.sql.pandas.types import from_arrow_schema

        first = sorted(Path(self.options["path"]).glob("*.arrow"))[0]
        with pa.memory_map(str(first)) as src:
            return from_arrow_schema(pa.ipc.open_file(src).schema)

    def reader(self, schema: Any) -> DataSourceReader:
        return ReadyBatchesReader(self.options["path"])


class IpcFile(InputPartition):
    def __init__(self, path: str) -> None:
        self.path = path


class ReadyBatchesReader(DataSourceReader):
    def __init__(self, folder: str) -> None:
        self.folder = folder

    def partitions(self) -> list[InputPartition]:
        return [IpcFile(str(f)) for f in sorted(Path(self.folder).glob("*.arrow"))]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        assert isinstance(partition, IpcFile)
        with pa.memory_map(partition.path) as src:
            reader = pa.ipc.open_file(src)
            for i in range(reader.num_record_batches):
                yield reader.get_batch(i)


def write_ready(folder: Path, segments: Path, options: dict[str, str]) -> Path:
    """What ``kafka-log`` with ``options`` reads from ``segments``, as one IPC file per input
    partition (made by the source's own reader, so the batches are the same)."""
    from spark_udfs.datasource import KafkaLogDataSource

    if folder.exists():
        return folder
    folder.mkdir(parents=True)
    reader = KafkaLogDataSource({"path": str(segments), **options}).reader(None)
    for k, part in enumerate(reader.partitions()):
        batches = list(reader.read(part))
        path = str(folder / f"{k:04d}.arrow")
        with pa.OSFile(path, "wb") as sink, pa.ipc.new_file(sink, batches[0].schema) as out:
            for rb in batches:
                out.write_batch(rb)
    return folder


def bridge_probe(name: str, sample: bytes) -> Any:
    """An ``arrow_udf`` returning ready-made structs of message ``name`` (no decoding)."""
    from pyspark.sql.functions import arrow_udf

    from spark_udfs.options import Mode
    from spark_udfs.udfs import message_return_type

    made: dict[int, Any] = {}

    def same_structs(values: pa.Array) -> pa.Array:
        from codegen.columnar.decode import decode_message_array

        n = len(values)
        if n not in made:
            made[n] = decode_message_array(pa.array([sample] * n, pa.binary()), name).values
        return made[n]

    return arrow_udf(same_structs, returnType=message_return_type(name, Mode.FAILFAST))  # type: ignore[call-overload]


def describe(res: dict[str, Any]) -> str:
    return (
        f"{res['median_s']:.2f} s (CPU: JVM {res['jvm_cpu_s']:.1f} s, "
        f"Python {res['python_cpu_s']:.1f} s)"
    )


def noop(df: Any) -> Callable[[], None]:
    return lambda: df.write.format("noop").mode("overwrite").save()


def driver_memory(spark: Any) -> dict[str, float]:
    rt = spark._jvm.java.lang.Runtime.getRuntime()
    spark._jvm.java.lang.System.gc()
    return {
        "python_max_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "jvm_heap_used_mb": (rt.totalMemory() - rt.freeMemory()) / 2**20,
    }


def time_udfs(variants: dict[str, Any], results: dict[str, Any], runs: int, jvm_pid: int) -> None:
    """Section 1: the decoders agree on sums, then each is timed."""
    from pyspark.sql import functions as F

    # correctness: all decoders agree on sums
    check = {}
    for name in ("arrow_udf (ours)", "plain @udf pickled", "JVM UDF", "JVM UDF, our full schema"):
        row = (
            variants[name]
            .agg(
                F.count("v").alias("n"),
                F.sum("v.offset").alias("s"),
                F.sum(F.length("v.metadata")).alias("m"),
                F.sum("k.partition").alias("p"),
            )
            .first()
        )
        check[name] = row.asDict() if row else {}
    results["checksums"] = check
    say(f"checksums: {check}")
    assert len({json.dumps(v, sort_keys=True) for v in check.values()}) == 1, check
    say("timing the UDFs")
    results["udf"] = timed({k: noop(v) for k, v in variants.items()}, runs, jvm_pid)
    for name, res in results["udf"].items():
        say(f"  {name}: {describe(res)}")
    u = {k: v["median_s"] for k, v in results["udf"].items()}
    ours = u["arrow_udf (ours)"]
    results["ratios"] = {
        "ours_vs_plain_udf_speedup": u["plain @udf pickled"] / ours,
        "ours_vs_jvm_slowdown": ours / u["JVM UDF"],
        "ours_vs_jvm_full_schema_slowdown": ours / u["JVM UDF, our full schema"],
        "bridge_probe_vs_jvm_slowdown": u["arrow_udf bridge probe (no decode)"] / u["JVM UDF"],
        "ours_vs_bridge_probe": ours / u["arrow_udf bridge probe (no decode)"],
    }
    # Round by round (the jobs run in turn): how far the ratio to the probe moves between
    # rounds, and how far the probe's own times spread.
    runs_ours = results["udf"]["arrow_udf (ours)"]["runs_s"]
    runs_probe = results["udf"]["arrow_udf bridge probe (no decode)"]["runs_s"]
    results["ratios"]["ours_vs_bridge_probe_per_round"] = [
        a / b for a, b in zip(runs_ours, runs_probe, strict=True)
    ]
    results["ratios"]["bridge_probe_spread"] = max(runs_probe) / min(runs_probe)
    say(f"ratios: {results['ratios']}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=2_000_000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--scale", default="1,4,16")
    ap.add_argument("--work", type=Path, default=ROOT / "bench" / "jvm" / "build" / "data")
    ap.add_argument("--skip-scale", action="store_true")
    ap.add_argument("--skip-source", action="store_true")
    ap.add_argument("--skip-udf", action="store_true", help="skip section 1 (the UDFs)")
    args = ap.parse_args()
    work: Path = args.work
    results: dict[str, Any] = {"rows": args.rows}

    say("compiling the JVM reference UDF")
    jar = compile_jvm()
    parquet = work / f"ocv-{args.rows}.parquet"
    if not parquet.exists():
        say(f"writing {args.rows:,} records to Parquet")
        write_parquet(parquet, args.rows)

    from pyspark.sql import functions as F

    from spark_udfs import functions as K
    from spark_udfs.session import get_session

    spark = get_session(
        "local[2]",
        app_name="bench-spark",
        driver_memory="6g",
        shuffle_partitions=2,
        ship=False,
        extra_conf={"spark.jars": str(jar)},
    )
    spark.udf.registerJavaFunction("jvm_key", "DecodeOffsetCommit$Key", KEY_DDL)
    spark.udf.registerJavaFunction("jvm_value", "DecodeOffsetCommit$Value", VALUE_DDL)
    spark.udf.registerJavaFunction("jvm_full_value", "DecodeOffsetCommit$FullValue", FULL_VALUE_DDL)
    jvm_pid = spark._jvm.java.lang.ProcessHandle.current().pid()
    sample_key, sample_value = records(1)
    df = spark.read.parquet(str(parquet))
    say(f"input partitions: {df.rdd.getNumPartitions()}")
    pk, pv = plain_udfs()
    variants = {
        "read_only": df.select("key", "value"),
        "arrow_udf (ours)": df.select(
            K.decode_offset_commit_key("key").alias("k"),
            K.decode_offset_commit_value("value").alias("v"),
        ),
        "plain @udf pickled": df.select(pk("key").alias("k"), pv("value").alias("v")),
        "JVM UDF": df.select(
            F.expr("jvm_key(key)").alias("k"), F.expr("jvm_value(value)").alias("v")
        ),
        "JVM UDF, our full schema": df.select(
            F.expr("jvm_key(key)").alias("k"), F.expr("jvm_full_value(value)").alias("v")
        ),
        "arrow_udf bridge probe (no decode)": df.select(
            bridge_probe("OffsetCommitKey", sample_key[0])("key").alias("k"),
            bridge_probe("OffsetCommitValue", sample_value[0] or b"")("value").alias("v"),
        ),
    }
    if not args.skip_udf:
        time_udfs(variants, results, args.runs, jvm_pid)

    if not args.skip_source:
        segments = work / f"segments-{args.rows}"
        if not segments.exists():
            say(f"writing {args.rows:,} records as log segments")
            write_segments(segments, args.rows)

        def kafka_log(**options: str) -> Any:
            """A kafka-log read of the segments (a reader per call: option() mutates it)."""
            return spark.read.format("kafka-log").options(**options).load(str(segments))

        raw = kafka_log(includeHeaders="false")
        # What the JVM UDF returns: the OffsetCommit key and value.
        like_udf = {
            "decode": "consumer_offsets",
            "recordtypes": "OffsetCommit",
            "columns": "decodedKey,decodedValue",
        }
        spark.dataSource.register(ReadyBatches)
        ready = {
            name: spark.read.format("ready-batches").load(
                str(write_ready(work / f"ready-{name}-{args.rows}", segments, options))
            )
            for name, options in (("decode", {"decode": "true"}), ("like-udf", like_udf))
        }
        src = {
            "kafka-log raw": raw,
            "kafka-log raw, pure record loop": kafka_log(includeHeaders="false", recordLoop="pure"),
            "kafka-log raw with headers": kafka_log(),
            "kafka-log decode=true": kafka_log(decode="true"),
            "kafka-log decode=true, pure record loop": kafka_log(decode="true", recordLoop="pure"),
            "ready batches of decode=true (no work)": ready["decode"],
            "kafka-log decode, the UDF's columns": kafka_log(**like_udf),
            "ready batches of the UDF's columns (no work)": ready["like-udf"],
            "JVM UDF on Parquet, our full schema": variants["JVM UDF, our full schema"],
            "parquet raw": df,
            "kafka-log + decode_consumer_offsets": K.decode_consumer_offsets(raw),
            "parquet + decode_consumer_offsets": K.decode_consumer_offsets(df),
        }
        say("timing the data source")
        results["source"] = timed({k: noop(v) for k, v in src.items()}, args.runs, jvm_pid)
        for name, res in results["source"].items():
            say(f"  {name}: {describe(res)}")
        t = {k: v["median_s"] for k, v in results["source"].items()}
        results["source_ratios"] = {
            "udf_columns_vs_jvm_udf": t["kafka-log decode, the UDF's columns"]
            / t["JVM UDF on Parquet, our full schema"],
            "udf_columns_vs_ready": t["kafka-log decode, the UDF's columns"]
            / t["ready batches of the UDF's columns (no work)"],
            "decode_true_vs_ready": t["kafka-log decode=true"]
            / t["ready batches of decode=true (no work)"],
            "decode_true_vs_jvm_udf": t["kafka-log decode=true"]
            / t["JVM UDF on Parquet, our full schema"],
        }
        say(f"ratios: {results['source_ratios']}")

    if not args.skip_scale:
        results["scale"] = {}
        base = args.rows
        for mult in [int(x) for x in args.scale.split(",")]:
            folder = work / f"scale-{mult}M"
            if not folder.exists():
                folder.mkdir(parents=True)
                files = sorted(parquet.glob("*.parquet"))
                per = max(1, (mult * 1_000_000) // (base // len(files)))
                for k in range(per):
                    shutil.copyfile(files[k % len(files)], folder / f"part-{k}.parquet")
            frame = spark.read.parquet(str(folder))
            n = frame.count()
            job = frame.select(
                K.decode_offset_commit_key("key").alias("k"),
                K.decode_offset_commit_value("value").alias("v"),
            )
            say(f"timing scale {n:,} rows")
            res = timed({"ours": noop(job)}, 1 if mult >= 16 else args.runs, jvm_pid)["ours"]
            res["rows"] = n
            res["ns_per_row"] = res["median_s"] / n * 1e9
            res["driver"] = driver_memory(spark)
            results["scale"][f"{mult}M"] = res
            say(f"  {n:,}: {res['ns_per_row']:.0f} ns/row, driver {res['driver']}")
        results["scale_kafka_log"] = {}
        segments = work / f"segments-{args.rows}"
        if not segments.exists():
            write_segments(segments, args.rows)
        pieces = sorted(segments.glob("*/*.log"))
        for mult in [int(x) for x in args.scale.split(",")]:
            folder = work / f"scale-kafka-log-{mult}M"
            if not folder.exists():  # the segments repeated, one partition folder per copy
                per = max(1, (mult * 1_000_000) // (args.rows // len(pieces)))
                for k in range(per):
                    seg = folder / f"__consumer_offsets-{k}" / pieces[k % len(pieces)].name
                    seg.parent.mkdir(parents=True)
                    shutil.copyfile(pieces[k % len(pieces)], seg)
            frame = spark.read.format("kafka-log").option("decode", "true").load(str(folder))
            n = spark.read.format("kafka-log").load(str(folder)).count()
            say(f"timing kafka-log decode=true at {n:,} records")
            res = timed({"kafka-log": noop(frame)}, 1 if mult >= 16 else args.runs, jvm_pid)
            res = res["kafka-log"]
            res["rows"] = n
            res["ns_per_row"] = res["median_s"] / n * 1e9
            res["driver"] = driver_memory(spark)
            results["scale_kafka_log"][f"{mult}M"] = res
            say(f"  {n:,}: {res['ns_per_row']:.0f} ns/row, driver {res['driver']}")
    out = work / "results.json"
    out.write_text(json.dumps(results, indent=2))
    print(json.dumps(results, indent=2))
    spark.stop()


if __name__ == "__main__":
    main()
