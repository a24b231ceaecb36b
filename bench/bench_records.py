"""The dump record loop: pure Python against native, segment to decoded records, one core.

    .venv/bin/python bench/bench_records.py [-n 1000000] [--repeat 3] [--clock wall|cpu]
                                            [--codec none|lz4|zstd|...] [--per-batch 500]

Writes an ``__consumer_offsets`` segment of N OffsetCommit records (key type 1, value v3,
500 per batch as bench_dumps.py's segment, or ``--per-batch``: a broker often writes an offset
commit as a batch of one), then times ``decode_records`` over it end to end
(framing, CRC, decompression, the record loop, the consumer's loop) with each combination of:

- the record loop: pure (``SPECGEN_BACKEND=pure``) or native (``codegen/native/records.c``);
- the key/value readers: the pure generated ones, or the native engine's (the native
  backend's readers), put in the classes' reader maps for the run;

and the columnar loop (``codegen.dumps.arrow.record_batches``: the raw columns of the
``kafka-log`` data source as Arrow batches, no key/value decode), native and pure.

Every combination is first checked to give the same records as the pure one on a part of the
segment; then they run in alternating rounds in one process, best of ``--repeat``. The
ratio is against "pure loop, pure readers", today's figure. The native modules are compiled in
place first when they are not built.
"""

from __future__ import annotations

import argparse
import itertools
import os
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import bench_dumps  # noqa: E402  (bench/ is not a package)

from codegen.dumps import Codec, coordinator  # noqa: E402
from codegen.dumps.arrow import record_batches  # noqa: E402
from codegen.runtime import backends  # noqa: E402

CLOCKS: dict[str, Callable[[], float]] = {"wall": time.perf_counter, "cpu": time.process_time}
TOPIC = coordinator.CONSUMER_OFFSETS


def build_modules() -> dict[str, float]:
    """Compile the native modules that are not built yet; seconds per module built."""
    import importlib

    from codegen.native import build

    seconds = {}
    for module in build.MODULES:
        try:
            importlib.import_module(f"codegen.native.{module}")
        except ImportError:
            seconds[module] = build.build(module=module)[1]
    coordinator._native_records.cache_clear()
    return seconds


def reader_maps() -> tuple[dict[Any, dict[int, Any]], dict[Any, dict[int, Any]]]:
    """The pure and the engine's readers of every key and value class of the topic."""
    engine = backends.native_engine()
    if engine is None:
        sys.exit(f"bench_records: {backends.native_problem()}")
    classes = [
        cls
        for rt in coordinator.record_types(TOPIC).values()
        for cls in (rt.key_class, rt.value_class)
    ]
    pure = {cls: dict(cls._PURE_READERS) for cls in classes}
    native = {
        cls: backends.native_readers(engine, cls._NATIVE_CLASSES, cls._NATIVE_TABLES)[0]
        for cls in classes
    }
    return pure, native


@contextmanager
def readers_installed(maps: dict[Any, dict[int, Any]] | None) -> Iterator[None]:
    """The classes read with these readers meanwhile (None: as they are)."""
    saved = {cls: cls._READERS for cls in maps or {}}
    try:
        for cls, readers in (maps or {}).items():
            cls._READERS = readers
        coordinator._all_record_types.cache_clear()
        coordinator._shared_decoder.cache_clear()
        yield
    finally:
        for cls, readers in saved.items():
            cls._READERS = readers
        coordinator._all_record_types.cache_clear()
        coordinator._shared_decoder.cache_clear()


def consume(path: str, limit: int | None = None) -> list[Any] | int:
    """Count the records (as a consumer iterates them), or keep the first ``limit``."""
    records = coordinator.decode_records(path)
    if limit is not None:
        return list(itertools.islice(records, limit))
    count = 0
    for _ in records:
        count += 1
    return count


def consume_columns(path: str, native: bool, limit: int | None = None) -> list[Any] | int:
    """Count the rows of the Arrow batches, or keep the first ``limit`` rows' batches."""
    batches = record_batches(path, native=native)
    if limit is not None:
        kept, rows = [], 0
        for batch in batches:
            kept.append(batch)
            rows += batch.num_rows
            if rows >= limit:
                return kept
        return kept
    count: int = sum(batch.num_rows for batch in batches)
    return count


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=1_000_000, help="records in the segment")
    parser.add_argument("--repeat", type=int, default=3, help="best of this many rounds")
    parser.add_argument("--clock", choices=sorted(CLOCKS), default="wall")
    parser.add_argument("--codec", default="none", choices=[c.name.lower() for c in Codec])
    parser.add_argument("--per-batch", type=int, default=bench_dumps.BATCH, help="records a batch")
    args = parser.parse_args()
    clock = CLOCKS[args.clock]
    for module, seconds in build_modules().items():
        print(f"built {module} in {seconds:.2f} s")
    if not coordinator.native_record_loop_enabled():
        sys.exit(
            f"the native record loop is not available ({backends.ENVIRONMENT_VARIABLE} = pure?)"
        )
    pure_maps, native_maps = reader_maps()
    combos: dict[str, tuple[str, dict[Any, dict[int, Any]] | None]] = {
        "pure loop, pure readers": ("pure", pure_maps),
        "pure loop, native readers": ("pure", native_maps),
        "native loop, pure readers": ("native", pure_maps),
        "native loop, native readers": ("native", native_maps),
        "columnar loop, pure": ("pure", None),
        "columnar loop, native": ("native", None),
    }
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "offsets.log")
        bench_dumps.write_segment(path, args.n, Codec[args.codec.upper()], args.per_batch)
        size = os.path.getsize(path) / 1e6
        best = dict.fromkeys(combos, float("inf"))
        reference: list[Any] | int | None = None
        columns_reference: list[Any] | int = []
        for rnd in range(args.repeat + 1):
            for label, (loop, maps) in combos.items():
                os.environ[backends.ENVIRONMENT_VARIABLE] = loop
                if label.startswith("columnar"):
                    native = loop == "native"
                    if rnd == 0:  # same batches first
                        got = consume_columns(path, native, limit=20_000)
                        if native:  # the pure one ran first
                            assert got == columns_reference, f"{label} gives other batches"
                        else:
                            columns_reference = got
                        continue
                    start = clock()
                    count = consume_columns(path, native)
                    seconds = clock() - start
                    assert count == args.n, (label, count)
                    best[label] = min(best[label], seconds)
                    continue
                with readers_installed(maps):
                    assert coordinator.coordinator_decoder(TOPIC).native == (loop == "native")
                    if rnd == 0:  # same records first
                        got = consume(path, limit=20_000)
                        reference = got if reference is None else reference
                        assert got == reference, f"{label} gives other records"
                        continue
                    start = clock()
                    count = consume(path)
                    seconds = clock() - start
                assert count == args.n, (label, count)
                best[label] = min(best[label], seconds)
        os.environ.pop(backends.ENVIRONMENT_VARIABLE)
    base = args.n / best["pure loop, pure readers"]
    print(
        f"decode_records: {args.n:,} OffsetCommit records ({size:.1f} MB, {args.codec}, "
        f"{args.per_batch} per batch), best of {args.repeat}, {args.clock} clock; "
        "the columnar loop builds the raw Arrow columns (no decode)"
    )
    for label, seconds in best.items():
        rate = args.n / seconds
        print(f"  {label:28} {seconds:6.2f} s {rate:>12,.0f} records/s  {rate / base:5.2f}x")


if __name__ == "__main__":
    main()
