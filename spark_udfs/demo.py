"""The main job: synthesize a ``__consumer_offsets`` dump, read it with ``kafka-log``, decode it
and print the committed offsets per group plus a summary.

    python -m spark_udfs.demo [--records N] [--partitions P] [--master URL] [--out DIR]

The codecs are the generated package (``python -m codegen generate`` writes it; this job checks
regenerates it first when run from a checkout). Spark runs in ``local[*]`` unless
``--master`` names a cluster; the package is shipped to executors with ``addPyFile``.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def _say(text: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {text}", flush=True)


def _generate_codecs() -> None:
    """Run the generator (``python -m codegen generate``) when the specs are at hand."""
    root = Path(__file__).resolve().parent.parent
    if not (root / "message_specs").is_dir():
        return  # an installed wheel: use the generated package it ships
    result = subprocess.run(
        [sys.executable, "-m", "codegen", "generate"],
        cwd=root,
        capture_output=True,
        text=True,
        check=False,
    )
    if result.returncode != 0:
        raise SystemExit(f"code generation failed:\n{result.stdout}{result.stderr}")
    _say(result.stdout.strip().splitlines()[-1] if result.stdout.strip() else "generated")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m spark_udfs.demo", description=__doc__)
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--groups", type=int, default=300)
    parser.add_argument("--master", default=None, help="Spark master URL (default local[*])")
    parser.add_argument("--out", type=Path, default=None, help="folder for the dump and results")
    parser.add_argument("--show", type=int, default=40, help="committed offsets rows to print")
    args = parser.parse_args(argv)

    out: Path = args.out or Path(tempfile.mkdtemp(prefix="kafka-demo-"))
    dump = out / "dump"
    started = time.time()
    _say("generating the codecs")
    _generate_codecs()

    from spark_udfs.synth import write_consumer_offsets

    _say(f"writing {args.records:,} records over {args.partitions} partitions to {dump}")
    stats = write_consumer_offsets(
        dump,
        records=args.records,
        partitions=args.partitions,
        groups=args.groups,
        progress=lambda n: _say(f"  {n:,} records written"),
    )
    size = sum(f.stat().st_size for f in stats.files)
    _say(f"wrote {stats.records:,} records in {stats.batches:,} batches ({size / 1e6:.1f} MB)")

    from pyspark.sql import functions as F

    from spark_udfs import compacted
    from spark_udfs.functions import decode_consumer_offsets
    from spark_udfs.session import get_session

    _say(f"starting Spark ({args.master or 'local[*]'})")
    spark = get_session(args.master, app_name="kafka-specgen-demo", ship=True)
    raw = spark.read.format("kafka-log").load(str(dump))
    decoded = decode_consumer_offsets(raw, mode="PERMISSIVE")
    decoded_path = out / "decoded.parquet"
    _say("reading and decoding the dump into Parquet")
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
        print(f"  {key:>16}: {value:,}")
    decoded.groupBy("recordName", "valueVersion").count().orderBy(
        "recordName", "valueVersion"
    ).show(50, truncate=False)

    _say("committed offsets per group (compacted, distributed)")
    offsets = compacted.committed_offsets(decoded)
    offsets.write.mode("overwrite").parquet(str(out / "committed_offsets.parquet"))
    offsets = spark.read.parquet(str(out / "committed_offsets.parquet"))
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
