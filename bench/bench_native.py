"""Native decoder speed: the pure generated readers against the table-driven C engine.

    .venv/bin/python bench/bench_native.py [--quick] [--clock wall|cpu] [--instructions]

Cases: the `__consumer_offsets` pair of bench_codecs.py (OffsetCommitKey + OffsetCommitValue
v3, and with value v4), where bench_codecs's hand-written struct decoder is the floor, and
the four request/response messages of bench_codecs.py. Every contender is checked to give
the same objects first; then they are timed in alternating rounds in one run, best of N
(ns per message; "pair_reader" is the engine's fused key+value call, which reads the
prefixes itself). ``--clock cpu`` times
with process CPU time instead of wall time, which a busy shared machine disturbs less. ``--instructions`` also counts instructions per message
under valgrind (callgrind), when it is installed.

``--columnar N`` times instead the binary column to Arrow columns path of the Spark layer
(``codegen.columnar.decode.decode_message_array``) on N OffsetCommitValue v3 rows with their version
prefix (bench_spark.py's values, 1 % null): the engine's columnar decoder (native backend)
against the generated decode row by row (``_generic``; on the pure backend, and on the
native backend's readers), as one array and in batches of 10,000 rows (Spark's Arrow batch
size), best of N rounds, ns per row.

The engine is compiled in place first if it is not built (and the build time is printed).
"""

from __future__ import annotations

import argparse
import pickle
import shutil
import subprocess
import sys
import time
import timeit
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import bench_codecs  # noqa: E402  (bench/ is not a package)

from codegen.emit import load_messages  # noqa: E402
from codegen.ir import Message  # noqa: E402
from codegen.native_tables import message_table  # noqa: E402
from codegen.runtime.wire import NO_TAGS  # noqa: E402
from tests.corpus import kafka_specs  # noqa: E402

CLOCKS: dict[str, Callable[[], float]] = {"wall": time.perf_counter, "cpu": time.process_time}


def load_engine() -> tuple[Any, float | None]:
    """The engine module, and the seconds its build took when it had to be built."""
    from codegen import native
    from codegen.native import build

    module = native.engine()
    if module is not None:
        return module, None
    _, seconds = build.build()
    module = native.engine()
    assert module is not None
    return module, seconds


# Layout tables by (spec root, message, version). The callgrind children get them from a file,
# so they do not load the spec corpora under valgrind.
TABLES: dict[tuple[str, str, int], Any] = {}
_MESSAGES: dict[str, dict[str, Message]] = {}
CHILD = False


def table_for(root: Path, name: str, version: int) -> Any:
    key = (str(root), name, version)
    if key not in TABLES:
        if str(root) not in _MESSAGES:
            _MESSAGES[str(root)] = {m.name: m for m in load_messages([root])}
        TABLES[key] = message_table(_MESSAGES[str(root)][name], version)
    return TABLES[key]


def native_reader(engine: Any, table: Any, cls: Any, rows: bool = False) -> Any:
    """The engine's reader (or row reader) of one table, made as the native backend makes it."""
    from codegen.runtime.backends import native_readers

    module = sys.modules[cls.__module__]
    classes = {struct[0]: getattr(module, struct[0]) for struct in table[4]}
    readers, row_readers = native_readers(engine, classes, {table[3]: table})
    return (row_readers if rows else readers)[table[3]]


def corpus_package() -> Any:
    """bench_codecs's corpus package; a child imports what the parent generated."""
    if not CHILD:
        return bench_codecs.corpus_package()
    sys.path.insert(0, str(bench_codecs.CACHE))
    import bench_corpus  # type: ignore[import-not-found]

    return bench_corpus


def interleaved(fns: dict[str, Callable[[], object]], runs: int, clock: str) -> dict[str, float]:
    """Best ns per call of each function, timed in alternating rounds."""
    timer = CLOCKS[clock]
    numbers = {}
    for name, fn in fns.items():
        number, seconds = timeit.Timer(fn, timer=timer).autorange()
        # About 0.1 s a round: CPU time has a coarse tick, so never less.
        numbers[name] = max(int(number * 0.1 / max(seconds, 1e-9)), 1)
    best = dict.fromkeys(fns, float("inf"))
    for _ in range(runs):
        for name, fn in fns.items():
            seconds = timeit.Timer(fn, timer=timer).timeit(numbers[name])
            best[name] = min(best[name], seconds / numbers[name] * 1e9)
    return best


# ------------------------------------------------------------------------------- cases


def offsets_contenders(engine: Any, value_version: int) -> dict[str, Callable[[], object]]:
    """The pair as a topic decoder reads it: int16 prefixes, then key v0 and the value."""
    from generated.offset_commit_key import OffsetCommitKey
    from generated.offset_commit_value import OffsetCommitValue

    specs = ROOT / "message_specs"
    key_obj = OffsetCommitKey(group="payments-consumer", topic="payments-events", partition=7)
    value_obj = OffsetCommitValue(
        offset=1_234_567, leader_epoch=5, metadata="", commit_timestamp=1_700_000_000_000
    )
    h = bench_codecs._H
    key = h.pack(1) + key_obj.encode(0)
    value = h.pack(value_version) + value_obj.encode(value_version)
    pure_key = OffsetCommitKey._PURE_READERS[0]
    pure_value = OffsetCommitValue._PURE_READERS[value_version]
    native_key = native_reader(engine, table_for(specs, "OffsetCommitKey", 0), OffsetCommitKey)
    native_value = native_reader(
        engine, table_for(specs, "OffsetCommitValue", value_version), OffsetCommitValue
    )

    def pure() -> tuple[object, object]:
        (_key_type,) = h.unpack_from(key)
        (_value_version,) = h.unpack_from(value)
        k, _ = pure_key(key, 2)
        v, _ = pure_value(value, 2)
        return k, v

    def native() -> tuple[object, object]:
        (_key_type,) = h.unpack_from(key)
        (_value_version,) = h.unpack_from(value)
        k, _ = native_key(key, 2)
        v, _ = native_value(value, 2)
        return k, v

    key_rows = native_reader(engine, table_for(specs, "OffsetCommitKey", 0), OffsetCommitKey, True)
    value_table = table_for(specs, "OffsetCommitValue", value_version)
    value_rows = native_reader(engine, value_table, OffsetCommitValue, True)

    def slow(key: bytes, value: bytes | None) -> tuple[object, object]:
        raise AssertionError("the bench pair stays on the native fast path")

    def pair_reader(key_reader: Any, value_reader: Any) -> Any:
        by_version = (None,) * value_version + (value_reader,)
        return engine.pair_reader({1: (key_reader, by_version, -1)}, slow)

    # The int16 prefixes pick the readers inside the one native call.
    read_objects = pair_reader(native_key, native_value)
    read_rows = pair_reader(key_rows, value_rows)

    def fused() -> tuple[object, object]:
        k, v = read_objects(key, value)
        return k, v

    def rows() -> tuple[object, object]:
        k, v = read_rows(key, value)
        return k, v

    assert pure() == native() == fused() == (key_obj, value_obj)
    assert rows()[0] == ("payments-consumer", "payments-events", 7, NO_TAGS)
    contenders: dict[str, Callable[[], object]] = {
        "pure": pure,
        "native": native,
        "fused": fused,
        "rows": rows,
    }
    if value_version == 3:  # the hand-written decoder reads value v3 only
        assert bench_codecs.hand_written_pair(key, value)[0] == (
            "payments-consumer",
            "payments-events",
            7,
        )
        contenders["hand"] = lambda: bench_codecs.hand_written_pair(key, value)
    return contenders


def codec_cases() -> list[tuple[str, str, int, dict[str, Any]]]:
    return [
        (
            "MetadataResponse v12 (100 topics x 10 partitions)",
            "MetadataResponse",
            12,
            bench_codecs.metadata_response(),
        ),
        (
            "OffsetCommitRequest v9 (3 x 8 partitions)",
            "OffsetCommitRequest",
            9,
            bench_codecs.offset_commit_request(),
        ),
        (
            "FetchResponse v16 (50 partitions, 1 tag each)",
            "FetchResponse",
            16,
            bench_codecs.fetch_response(),
        ),
        (
            "ConsumerProtocolSubscription v3",
            "ConsumerProtocolSubscription",
            3,
            bench_codecs.consumer_subscription(),
        ),
    ]


def codec_contenders(
    engine: Any, spec: str, version: int, js: Any
) -> tuple[int, dict[str, Callable[[], object]]]:
    cls = corpus_package().MESSAGES[spec]
    data = cls.from_json(js, version).encode(version)
    pure_read = cls._PURE_READERS[version]
    native_read = native_reader(engine, table_for(kafka_specs("kafka-clients"), spec, version), cls)
    assert pure_read(data, 0) == native_read(data, 0)
    return len(data), {
        "pure": lambda: pure_read(data, 0),
        "native": lambda: native_read(data, 0),
    }


Case = tuple[str, int | None, dict[str, Callable[[], object]]]


def case_makers() -> list[Callable[[Any], Case]]:
    """One maker per case: (label, bytes, contenders) from the engine."""

    def pair(value_version: int) -> Callable[[Any], Case]:
        label = f"OffsetCommitKey v0 + OffsetCommitValue v{value_version} pair"
        return lambda engine: (label, None, offsets_contenders(engine, value_version))

    def codec(label: str, spec: str, version: int, js: Any) -> Callable[[Any], Case]:
        return lambda engine: (label, *codec_contenders(engine, spec, version, js))

    return [pair(3), pair(4), *(codec(*case) for case in codec_cases())]


# ------------------------------------------------------------------------------- instructions


def count_child(tables: Path, case: int, contender: str, loops: int) -> None:
    """Run one contender ``loops`` times (the callgrind child: see instructions())."""
    global CHILD
    CHILD = True
    TABLES.update(pickle.loads(tables.read_bytes()))
    engine, _ = load_engine()
    fn = case_makers()[case](engine)[2][contender]
    fn()  # warm: the first call may import or cache
    for _ in range(loops):
        fn()


def callgrind_total(args: list[str]) -> int:
    done = subprocess.run(
        ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", *args],
        capture_output=True,
        text=True,
        check=True,
    )
    for line in done.stderr.splitlines():
        if "Collected :" in line:
            return int(line.split(":")[-1].strip())
    raise RuntimeError(f"no instruction count in callgrind's output:\n{done.stderr[-2000:]}")


def instructions(tables: Path, case: int, names: list[str], loops: int = 1000) -> dict[str, float]:
    """Instructions per call: the difference between ``loops`` calls and none, over loops."""
    me = [sys.executable, str(Path(__file__).resolve()), "--count-child", str(tables), str(case)]
    base = callgrind_total([*me, names[0], "0"])
    return {n: (callgrind_total([*me, n, str(loops)]) - base) / loops for n in names}


# ------------------------------------------------------------------------------- main


def columnar(rows: int, runs: int, clock: str) -> None:
    """The binary column to Arrow columns path: native columnar against the generated decode."""
    import pyarrow as pa
    from bench_spark import records

    from codegen.columnar.decode import decode_message_array
    from codegen.runtime import use_backend

    timer = CLOCKS[clock]
    _, values = records(rows)
    whole = pa.array(values, pa.binary())
    batches = [whole.slice(i, 10_000) for i in range(0, rows, 10_000)]
    # The row-by-row reference is slow: a tenth of the rows gives the same ns per row.
    sample = whole.slice(0, max(rows // 10, 1))
    name = "OffsetCommitValue"

    def best(fn: Callable[[], object], n: int) -> float:
        seconds = float("inf")
        for _ in range(runs):
            started = timer()
            fn()
            seconds = min(seconds, timer() - started)
        return seconds / n * 1e9

    use_backend("native")
    reference = decode_message_array(sample, name)
    use_backend("pure")
    assert decode_message_array(sample, name).values.equals(reference.values)
    assert decode_message_array(sample, name).errors == reference.errors
    results: dict[str, float] = {}
    for backend in ("native", "pure"):
        use_backend(backend)
        if backend == "native":
            results["native columnar, one array"] = best(
                lambda: decode_message_array(whole, name), rows
            )
            results["native columnar, 10,000-row batches"] = best(
                lambda: [decode_message_array(b, name) for b in batches], rows
            )
            results["generated decode per row, native readers"] = best(
                lambda: _generic_rows(sample, name), len(sample)
            )
        else:
            results["generated decode per row, pure readers"] = best(
                lambda: decode_message_array(sample, name), len(sample)
            )
    use_backend(None)
    base = results["native columnar, one array"]
    print(f"binary column to Arrow columns: {rows:,} {name} v3 rows, best of {runs}, {clock} clock")
    for label, ns in results.items():
        print(f"  {label:<45} {ns:8,.1f} ns/row  {ns / base:6.2f}x")


def _generic_rows(arr: Any, name: str) -> object:
    """decode_message_array's work with the row-by-row reference whatever the backend."""
    import numpy as np

    from codegen.columnar import decode as arrow

    rows = arrow.Rows(arr)
    versions = np.full(rows.n, 3, np.int64)
    live = rows.valid
    sel = np.nonzero(live)[0]
    starts = rows.starts[sel] + 2
    return arrow._generic(name, rows, starts, rows.ends[sel], versions[sel])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer timed rounds")
    parser.add_argument("--clock", choices=sorted(CLOCKS), default="wall")
    parser.add_argument(
        "--instructions", action="store_true", help="also count instructions under valgrind"
    )
    parser.add_argument("--only", default="", help="only the cases whose label starts so")
    parser.add_argument("--count-child", nargs=4, help=argparse.SUPPRESS)
    parser.add_argument(
        "--columnar", type=int, metavar="N", help="time the columnar path on N rows instead"
    )
    args = parser.parse_args()
    if args.count_child:
        tables, case, contender, loops = args.count_child
        count_child(Path(tables), int(case), contender, int(loops))
        return
    engine, build_seconds = load_engine()
    runs = 3 if args.quick else 7
    if args.columnar:
        columnar(args.columnar, runs, args.clock)
        return
    print(f"Python {sys.version.split()[0]}; best of {runs} rounds; {args.clock} clock; ns/message")
    if build_seconds is not None:
        print(f"engine built in {build_seconds:.2f} s")
    print()
    makers = case_makers()
    cases = [make(engine) for make in makers]
    tables = bench_codecs.CACHE / "native_tables.pickle"
    tables.parent.mkdir(parents=True, exist_ok=True)
    tables.write_bytes(pickle.dumps(TABLES))
    counting = args.instructions and shutil.which("valgrind") is not None
    if args.instructions and not counting:
        print("valgrind is not installed: no instruction counts\n")
    print(
        "| case | bytes | pure ns | native ns | native pair_reader ns | native rows ns | hand ns "
        "| pure / native | pair_reader / hand | rows / hand |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for i, (label, size, fns) in enumerate(cases):
        if not label.startswith(args.only):
            continue
        t = interleaved(fns, runs, args.clock)
        hand = t.get("hand")
        hand_ns = f"{hand:,.0f}" if hand else "-"
        fused_ns = f"{t['fused']:,.0f}" if "fused" in t else "-"
        rows_ns = f"{t['rows']:,.0f}" if "rows" in t else "-"
        fused_vs_hand = f"{t['fused'] / hand:.2f}x" if hand else "-"
        rows_vs_hand = f"{t['rows'] / hand:.2f}x" if hand else "-"
        print(
            f"| {label} | {size if size is not None else '-'} | {t['pure']:,.0f} "
            f"| {t['native']:,.0f} | {fused_ns} | {rows_ns} | {hand_ns} "
            f"| {t['pure'] / t['native']:.2f}x | {fused_vs_hand} | {rows_vs_hand} |"
        )
        if counting:
            # Enough calls to stand out of the start-up's count, few enough for valgrind.
            loops = max(5, min(1000, int(5e6 / t["pure"])))
            counts = instructions(tables, i, list(fns), loops)
            names = ("pure", "native", "fused", "rows", "hand")
            cells = [f"{counts[n]:,.0f}" if n in counts else "-" for n in names]
            ratio = f"{counts['pure'] / counts['native']:.2f}x"
            print(f"| (instructions per message) | | {' | '.join(cells)} | {ratio} | | |")


if __name__ == "__main__":
    main()
