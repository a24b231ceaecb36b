"""Shared fixtures: codec packages generated into the session's tmp dir, and the coverage line
of the Kafka oracle tests (printed in the terminal summary, merged across xdist workers); the
run's time-weighted progress (``--time-progress``, tests/progress.py) and, under ``CI=true``,
skips reported as failures (tests/skips.py)."""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from progress import TimeProgress
from skips import SkipsFailInCi, ci_requires_everything

CodecPackage = Callable[[str, Sequence[Path]], ModuleType]


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--time-progress",
        action="store_true",
        help="print the run's progress weighted by each test's time (tests/progress.py); "
        "make test turns it on",
    )


def pytest_configure(config: pytest.Config) -> None:
    # The process that reports: the only one under plain pytest, xdist's controller under -n.
    if config.getoption("--time-progress") and not hasattr(config, "workerinput"):
        config.pluginmanager.register(TimeProgress(config), "kafka-specgen-time-progress")
    if ci_requires_everything():
        config.pluginmanager.register(SkipsFailInCi(), "kafka-specgen-skips-fail-in-ci")
    _sanitized_native(config)


def _sanitized_native(config: pytest.Config) -> None:
    """With ``SPECGEN_NATIVE_CFLAGS`` set (``make sanitize``), the native modules every test
    uses, the backend's included, are built with those flags for this session (into a tmp
    dir, never over the checkout's build) before anything imports them."""
    if not os.environ.get("SPECGEN_NATIVE_CFLAGS"):
        return
    import shutil
    import tempfile

    from codegen.native import build

    out_dir = Path(tempfile.mkdtemp(prefix="specgen-native-"))
    config.add_cleanup(lambda: shutil.rmtree(out_dir, ignore_errors=True))
    for module in ("_engine", "_records", "_jsontext"):
        _load_native(
            module, build.build(out=out_dir / build.output_path(module).name, module=module)[0]
        )


def _load_native(module: str, path: Path) -> ModuleType:
    """Import a built native module file as ``codegen.native.<module>``."""
    name = f"codegen.native.{module}"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    loaded = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(loaded)
    sys.modules[name] = loaded
    return loaded


@pytest.fixture(scope="session")
def codec_package(tmp_path_factory: pytest.TempPathFactory) -> Iterator[CodecPackage]:
    """``make(package, spec_roots)``: generate the specs into ``<tmp>/<package>`` (once per
    worker) and import the package. Give each spec corpus its own package name: spec names
    repeat between corpora."""
    from codegen.emit import write_package

    root = tmp_path_factory.mktemp("codecs")
    sys.path.insert(0, str(root))
    made: dict[str, ModuleType] = {}

    def make(package: str, spec_roots: Sequence[Path]) -> ModuleType:
        if package not in made:
            write_package(list(spec_roots), root / package)
            made[package] = importlib.import_module(package)
        return made[package]

    yield make
    sys.path.remove(str(root))


@pytest.fixture(scope="session")
def user_wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A user project's wheel (the TaggedDemo spec, package ``demo_codecs``), built by the
    build hook (tests/test_hatch_hook.py's project)."""
    from test_hatch_hook import _pip_wheel_here, _user_project

    project = _user_project(tmp_path_factory.mktemp("user"), spec_text=None)
    spec = Path(__file__).resolve().parent / "cases" / "tagged_demo" / "TaggedDemo.json"
    (project / "specs" / "TaggedDemo.json").write_text(spec.read_text())
    built = _pip_wheel_here(project)
    assert built.returncode == 0, built.stdout + built.stderr
    (wheel,) = (project / "dist").glob("*.whl")
    return wheel


@pytest.fixture(scope="session")
def installed_user_package(user_wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The user's wheel installed with pip into a folder of its own (returned)."""
    import subprocess

    site = tmp_path_factory.mktemp("site")
    pip = [sys.executable, "-m", "pip", "install", "--no-deps", "--no-index", "--target"]
    subprocess.run([*pip, str(site), str(user_wheel)], check=True, capture_output=True, timeout=300)
    assert (site / "demo_codecs" / "_spark_schemas.py").is_file()
    return site


@pytest.fixture(scope="session")
def user_codecs(installed_user_package: Path) -> ModuleType:
    """The installed user package, imported (its folder stays on sys.path)."""
    if str(installed_user_package) not in sys.path:
        sys.path.insert(0, str(installed_user_package))
    return importlib.import_module("demo_codecs")


@pytest.fixture(scope="session")
def compiled_native(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], ModuleType]:
    """``compile(module)``: a native module (``_engine``, ``_records``) compiled for this session
    into the tmp dir and imported as ``codegen.native.<module>``. Skips without a C compiler,
    unless ``SPECGEN_REQUIRE_NATIVE`` is set (CI): then that is a failure."""
    from codegen.native import build

    try:
        build.compiler()
    except build.CompilerNotFound as exc:
        if os.environ.get("SPECGEN_REQUIRE_NATIVE"):
            pytest.fail(f"SPECGEN_REQUIRE_NATIVE is set, but {exc}")
        pytest.skip(f"native modules not built: {exc}")
    out_dir = tmp_path_factory.mktemp("native")

    def compile_module(module: str) -> ModuleType:
        out = out_dir / build.output_path(module).name
        build.build(out=out, module=module)
        return _load_native(module, out)

    return compile_module


@pytest.fixture(scope="session")
def records_module(compiled_native: Callable[[str], ModuleType]) -> ModuleType:
    """The native record loop (``_records``), compiled for this session, and the engine it
    imports: compiled too, unless a test has loaded one already."""
    if "codegen.native._engine" not in sys.modules:
        compiled_native("_engine")
    return compiled_native("_records")


class OracleCoverage:
    """What the Kafka differential tests compared."""

    def __init__(self) -> None:
        self.messages: set[str] = set()
        self.pairs: set[tuple[str, int]] = set()
        self.cases = 0
        self.mismatches: set[str] = set()  # what differed (shrinking reruns counted once)

    def dump(self) -> dict[str, Any]:
        return {
            "messages": sorted(self.messages),
            "pairs": sorted([list(p) for p in self.pairs]),
            "cases": self.cases,
            "mismatches": sorted(self.mismatches),
        }

    def merge(self, data: dict[str, Any]) -> None:
        self.messages.update(data["messages"])
        self.pairs.update((str(n), int(v)) for n, v in data["pairs"])
        self.cases += int(data["cases"])
        self.mismatches.update(data["mismatches"])

    def line(self) -> str:
        return (
            f"Kafka oracle coverage: {len(self.messages)} messages, "
            f"{len(self.pairs)} (message, version) pairs, {self.cases} cases, "
            f"{len(self.mismatches)} mismatches"
        )


_COVERAGE = pytest.StashKey[OracleCoverage]()


def _coverage(config: pytest.Config) -> OracleCoverage:
    return config.stash.setdefault(_COVERAGE, OracleCoverage())


@pytest.fixture(scope="session")
def oracle_coverage(request: pytest.FixtureRequest) -> OracleCoverage:
    return _coverage(request.config)


def pytest_sessionfinish(session: pytest.Session) -> None:
    output = getattr(session.config, "workeroutput", None)  # set on xdist workers
    if output is not None and _COVERAGE in session.config.stash:
        output["oracle_coverage"] = session.config.stash[_COVERAGE].dump()


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: Any) -> None:
    data = getattr(node, "workeroutput", {}).get("oracle_coverage")
    if data is not None:
        _coverage(node.config).merge(data)


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    if _COVERAGE in config.stash:
        terminalreporter.write_line(config.stash[_COVERAGE].line())


# The tests that exercise the generated codecs (decode, encode, rows, errors, the Kafka oracle,
# real data): marked ``codec``, so ``make test`` runs them once more on the pure backend.
CODEC_TESTS = {
    "test_arrow_columnar.py",
    "test_backends.py",
    "test_buffers.py",
    "test_dumps_fast_path.py",
    "test_dumps_records.py",
    "test_encode_checks.py",
    "test_oracle_diff.py",
    "test_record_pair_reader.py",
    "test_roundtrip.py",
    "test_row_readers.py",
    "test_vectors_codecs.py",
    "fuzz/test_fuzz_decode.py",
    "fuzz/test_fuzz_encode.py",
}
TESTS = Path(__file__).resolve().parent


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    import connect_server

    # In the spark_connect pass a Spark test not marked for it is skipped: it needs what a Spark
    # Connect client lacks (sparkContext, rdd) or is not one users meet.
    connect = connect_server.enabled()
    classic_only = pytest.mark.skip(reason=f"{connect_server.ENV}: a classic-session test")
    # A test of what only a Connect client meets has nothing to check on a classic session, and
    # a test of the native loop nothing on the pure backend: such tests are left out of those
    # passes, not skipped (a skip fails under CI=true).
    pure = os.environ.get("SPECGEN_BACKEND") == "pure"
    # The replay of every release is make test-replay-matrix's (minutes of JVMs), not make test's.
    matrix = os.environ.get("KAFKA_SPECGEN_REPLAY_MATRIX") == "1"
    downgrades = os.environ.get("KAFKA_SPECGEN_BROKER_DOWNGRADES") == "1"
    kept: list[pytest.Item] = []
    not_here: list[pytest.Item] = []
    for item in items:
        if item.path.relative_to(TESTS).as_posix() in CODEC_TESTS:
            item.add_marker(pytest.mark.codec)
        if connect and "spark" in item.keywords and "spark_connect" not in item.keywords:
            item.add_marker(classic_only)
        left_out = (
            (not connect and "connect_only" in item.keywords)
            or (pure and "native_only" in item.keywords)
            or ("replay_matrix" in item.keywords and not matrix)
            or ("broker_downgrades" in item.keywords and not downgrades)
        )
        (not_here if left_out else kept).append(item)
    if not_here:
        config.hook.pytest_deselected(items=not_here)
        items[:] = kept


def pytest_report_header(config: pytest.Config) -> str:
    from codegen.runtime import backend

    return (
        f"codec backend: {backend()} (SPECGEN_BACKEND={os.environ.get('SPECGEN_BACKEND', 'auto')})"
    )


@pytest.fixture(scope="session")
def broker_run(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """A real broker of the pinned release, loaded by the group workload and stopped: its log
    folder and the truth it answered (``tests/broker/client.py``). Once per session (all
    ``kafka`` tests share one xdist group)."""
    from broker.client import missing_reason, run_broker

    reason = missing_reason()
    if reason is not None:
        if os.environ.get("CI") == "true":  # make setup fetches the broker: CI must run these
            pytest.fail(f"Kafka broker: {reason}")
        pytest.skip(f"Kafka broker: {reason}")
    return run_broker(tmp_path_factory.mktemp("broker"))


@pytest.fixture(scope="session")
def live_broker(broker_run: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """The broker of ``broker_run`` running again, on a copy of its log folder (so the stopped
    run's files stay as they were), for clients that read topics live; stopped by its process id
    at the end of the session."""
    from broker.client import start_live_copy

    live = start_live_copy(broker_run, tmp_path_factory.mktemp("live-broker"))
    yield live
    live.stop()


@pytest.fixture(scope="session")
def kafka_spark() -> Iterator[Any]:
    """The Spark session of the broker tests, with Spark's Kafka source on its class path
    (``spark.jars``) when ``make setup`` fetched it. Shared with tests/spark's session when that
    one started first (it adds the same jars); stopped at the end only when started here."""
    pytest.importorskip("pyspark")
    pytest.importorskip("pyarrow")
    from broker.client import spark_kafka_conf
    from pyspark import SparkContext

    from spark_udfs.session import get_session

    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    started_here = SparkContext._active_spark_context is None
    session = get_session(
        "local[2]",
        app_name="kafka-specgen-tests",
        driver_memory="2g",
        shuffle_partitions=2,
        extra_conf=spark_kafka_conf()[0],
    )
    yield session
    if started_here:
        session.stop()


@pytest.fixture(scope="session")
def live_spark(request: pytest.FixtureRequest, spark_connect_url: str | None) -> Iterator[Any]:
    """A session with Spark's Kafka source (``spark.read.format("kafka")``): ``kafka_spark``;
    in the ``spark_connect`` pass a Spark Connect client of the run's server, which has the
    source's jars on its class path (``spark_connect_url``), released before the server stops."""
    from broker.client import spark_kafka_conf

    _, reason = spark_kafka_conf()
    if reason is not None:
        if os.environ.get("CI") == "true":  # make setup fetches it: CI must run these
            pytest.fail(f"Spark's Kafka source: {reason}")
        pytest.skip(f"Spark's Kafka source: {reason}")
    if spark_connect_url is not None:
        from spark_udfs.session import get_session

        client = get_session(
            app_name="kafka-specgen-tests", shuffle_partitions=2, remote=spark_connect_url
        )
        yield client
        client.stop()  # idempotent: tests/spark's session may be this one
        return
    kafka_spark = request.getfixturevalue("kafka_spark")
    if "spark-sql-kafka" not in kafka_spark.sparkContext.getConf().get("spark.jars", ""):
        pytest.fail("a Spark session without Spark's Kafka source was started earlier in this run")
    yield kafka_spark


@pytest.fixture(scope="session")
def spark_connect_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """In the ``spark_connect`` pass (``SPECGEN_SPARK_CONNECT=1``): a local Spark Connect
    server started for this run (``connect_server``), stopped at the end; else None."""
    import connect_server

    if not connect_server.enabled():
        yield None
        return
    pytest.importorskip("pyspark")
    from broker.client import spark_kafka_conf

    conf = {
        "spark.sql.shuffle.partitions": "2",
        "spark.sql.execution.arrow.maxRecordsPerBatch": "1000",
        # the pass is a few client sessions: forked workers cost less CPU per task, and a few
        # sessions' pools are all a fork server keeps (tests/spark/test_connect.py checks the
        # default, which is bounded over many sessions, on a server of its own)
        "spark.python.use.daemon": "true",
        **spark_kafka_conf()[0],
    }
    server = connect_server.start_server(tmp_path_factory.mktemp("connect"), conf)
    yield server
    server.stop()


@pytest.fixture(scope="session")
def spark_connect_url(spark_connect_server: Any) -> str | None:
    """The URL of ``spark_connect_server`` in the ``spark_connect`` pass; else None."""
    return None if spark_connect_server is None else str(spark_connect_server.url)


@pytest.fixture(scope="session")
def s3_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """A real S3-compatible server (s3proxy, ``tests/s3server.py``) on 127.0.0.1, for this
    session's worker; stopped by its process id at the end."""
    import s3server

    reason = s3server.missing_reason()
    if reason is not None:
        if os.environ.get("CI") == "true":  # make setup fetches it: CI must run these
            pytest.fail(f"S3 server: {reason}")
        pytest.skip(f"S3 server: {reason}")
    server = s3server.start(tmp_path_factory.mktemp("s3"))
    yield server
    server.stop()
