"""``python -m codegen dump``: decode internal-topic segments and snapshots.

The command's options and their validation; :mod:`codegen.dumps.run` reads the files
(:mod:`codegen.dumps.log_dirs` lists them) and prints them (:mod:`codegen.dumps.jsonl`,
:mod:`codegen.dumps.table`, :mod:`codegen.dumps.dumplog_json`).
"""

from __future__ import annotations

import importlib
import sys
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Final

import click

from codegen.dumps.batches import DEFAULT_MAX_BATCH_RECORDS, RECORD_BATCH_OVERHEAD
from codegen.dumps.compression import DEFAULT_MAX_DECOMPRESSED_SIZE
from codegen.dumps.coordinator import CONSUMER_OFFSETS, SHARE_GROUP_STATE, TRANSACTION_STATE
from codegen.dumps.entry_format import DEFAULT_MAX_MESSAGE_SIZE
from codegen.dumps.log_dirs import (
    LOG_FOLDER_SUFFIXES,
    TXN_INDEX,
    RowSource,
    guess_topic,
    input_files,
    tiered_order,
)
from codegen.dumps.metadata import CLUSTER_METADATA, REMOTE_LOG_METADATA
from codegen.dumps.packages import SHIPPED_PACKAGE, PackageError, package_messages
from codegen.dumps.pyproject_map import pyproject_with_map
from codegen.dumps.recognize import require_kafka_data
from codegen.dumps.storage import StoragePath
from codegen.dumps.storage_params import StoragePathParam
from codegen.errors import NoSpecsError, SpecErrors
from codegen.extras import MissingExtraError
from codegen.failures import EXIT_DAMAGE, GuardedCommand
from codegen.text import plural

if TYPE_CHECKING:
    from codegen.dumps.user_topics import UserTopicDecoder

__all__ = ["EXIT_CLEAN", "EXIT_DAMAGE", "EXIT_USAGE", "PLAIN", "TOPIC_CHOICES", "dump_command"]

EXIT_CLEAN: Final = 0
"""Every entry read and every record decoded (unknown record types, skipped by design, too)."""
EXIT_USAGE: Final = 2
"""Bad options or paths (click's usage errors)."""

TOPIC_CHOICES: Final = {
    "offsets": CONSUMER_OFFSETS,
    "transactions": TRANSACTION_STATE,
    "share-state": SHARE_GROUP_STATE,
    "cluster-metadata": CLUSTER_METADATA,
    "remote-log-metadata": REMOTE_LOG_METADATA,
}
PLAIN: Final = "plain"
"""``--topic`` of any topic but the internal ones: keys and values are printed as they are."""


@click.command(name="dump", cls=GuardedCommand)
@click.argument("paths", nargs=-1, required=True, type=StoragePathParam())
@click.option(
    "--topic",
    type=click.Choice([*TOPIC_CHOICES, PLAIN, "auto"]),
    default="auto",
    show_default=True,
    help="Internal topic the files belong to, or plain for any other topic (keys and values "
    "as they are); auto tells internal topics by their folder or file name, decodes the "
    "topics the topic map (--topics) names and reads the others plain.",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["jsonl", "table", "dump-log"]),
    default="jsonl",
    show_default=True,
    help="One JSON object per line, a table, or kafka-dump-log's own text.",
)
@click.option(
    "--compacted",
    is_flag=True,
    help="Print the latest state instead of every record: committed offsets and groups "
    "(__consumer_offsets), each remote segment's state (__remote_log_metadata), or the last "
    "value per key (topics the topic map names).",
)
@click.option(
    "--max-batch-bytes",
    type=click.IntRange(min=RECORD_BATCH_OVERHEAD),
    default=DEFAULT_MAX_DECOMPRESSED_SIZE,
    show_default=True,
    help="Largest batch read, as stored and decompressed; a larger one is a too-large error.",
)
@click.option(
    "--max-batch-records",
    type=click.IntRange(min=1),
    default=DEFAULT_MAX_BATCH_RECORDS,
    show_default=True,
    help="Most records a batch may hold; a batch claiming more is a too-many-records error "
    "(found before it is decompressed).",
)
@click.option(
    "--max-bytes",
    type=click.IntRange(min=0),
    default=None,
    help="--format dump-log: read only the batches within the first N bytes of each file "
    "(kafka-dump-log's --max-bytes).",
)
@click.option(
    "--skip-record-metadata",
    is_flag=True,
    help="--format dump-log: print only the keys and values of records, not their offsets, "
    "sizes and control records (kafka-dump-log's option).",
)
@click.option(
    "--verify-index-only",
    is_flag=True,
    help="--format dump-log: check .index and .timeindex files against their segment "
    "without printing their entries (kafka-dump-log's option).",
)
@click.option(
    "--index-sanity-check",
    is_flag=True,
    help="--format dump-log: only run the broker's start-up sanity check of .index and "
    ".timeindex files (kafka-dump-log's option).",
)
@click.option(
    "--max-message-size",
    type=click.IntRange(min=1),
    default=DEFAULT_MAX_MESSAGE_SIZE,
    show_default=True,
    help="--format dump-log: bytes read at each .index entry (kafka-dump-log's option).",
)
@click.option(
    "--package",
    "package",
    metavar="NAME",
    help="Decode with this importable generated package (dotted name) instead of the shipped "
    "codecs, e.g. one generated from the specs of the Kafka release that wrote the files.",
)
@click.option(
    "--specs",
    "specs",
    type=click.Path(exists=True, path_type=Path),
    multiple=True,
    help="Spec file or folder (repeatable): generate codecs from these specs into a temporary "
    "folder, removed at the end, and decode with them (needs the generator extra). Keep the "
    "specs in folders named as Kafka's (consumer_offsets, transaction_state, "
    "share_group_state, cluster_metadata): the folder says which topic a record type is of.",
)
@click.option(
    "--topics",
    "topics_file",
    metavar="FILE",
    type=StoragePathParam(dir_okay=False),
    help="Topic map: which message the keys and values of your own topics hold and how their "
    "version is known (a TOML file, or a pyproject.toml with [tool.kafka-specgen.topics]; "
    "docs/dumps.md). Default: the current folder's pyproject.toml when it has that table. "
    "Records of the topics it names are decoded in every format.",
)
@click.option(
    "--quiet", "-q", is_flag=True, help="Print neither the errors nor the summary on stderr."
)
def dump_command(
    paths: tuple[StoragePath, ...],
    topic: str,
    fmt: str,
    compacted: bool,
    max_batch_bytes: int,
    max_batch_records: int,
    max_bytes: int | None,
    skip_record_metadata: bool,
    verify_index_only: bool,
    index_sanity_check: bool,
    max_message_size: int,
    package: str | None,
    specs: tuple[Path, ...],
    topics_file: StoragePath | None,
    quiet: bool,
) -> None:
    """Decode __consumer_offsets, __transaction_state, __share_group_state and
    __cluster_metadata segments (.log) and KRaft snapshots (.checkpoint); read any other
    topic's segments plain, or as the topic map (--topics) says.

    PATH is a segment file, a snapshot, a partition folder (its .log and .checkpoint files
    are read in name order), a broker's log folder (its partition folders, of --topic only
    when given), or a tiered topic's remote storage (LocalTieredStorage's folder, or one of
    its <topic>-<partition>-<topic id> folders): one complete copy of each remote segment, and
    with the partition's local folder given too, its remote then its local records in offset
    order, each offset once. Each record of an internal topic becomes one JSON line holding the
    same key and value JSON kafka-dump-log prints with its --offsets-decoder,
    --transaction-log-decoder, --share-group-state-decoder, --cluster-metadata-decoder and
    --remote-log-metadata-decoder; a record of any other topic
    has its key and value as base64 and, when valid UTF-8, as text. --format dump-log prints
    what kafka-dump-log --deep-iteration --print-data-log prints, for the index and
    producer-state files of a folder too. A .txnindex file given by name is read in every
    format, an entry per line or row (Kafka 4.4.0's AbortedTxn). Each error is in the output
    too: a segment-error line (file, position, size, errorKind, error) for a stretch of a file
    that could not be read, an error line for a record that did not decode (a row of the
    table; kafka-dump-log's own lines with --format dump-log). The errors and a summary
    (records, errors, unknown records) go to stderr.

    \b
    Exit codes:
      0  clean: every entry read and every record decoded (records of unknown types, which
         KIP-915 readers skip by design, are counted but are not errors)
      1  damage: a segment error (corrupt or cut-short batch, zero padding, a batch over
         --max-batch-bytes or --max-batch-records) or a record that did not decode; with
         --format dump-log also where kafka-dump-log stops or reports an index mismatch
      2  usage error: bad options, a path that does not exist or cannot be read, a folder
         with nothing to read, a file that is not Kafka log data ("not a Kafka log
         segment": its first entry has no valid header, magic byte, size or checksum), an
         index or producer-state file other than .txnindex without --format dump-log

    \b
    Examples:
      python -m codegen dump /var/kafka/__consumer_offsets-0
      python -m codegen dump /var/kafka --topic transactions
      python -m codegen dump 00000000000000000000.log --topic offsets --format table
      python -m codegen dump /var/kafka/__consumer_offsets-* --compacted
      python -m codegen dump __cluster_metadata-0/00000000000000007259-0000000001.checkpoint
      python -m codegen dump /var/kafka/__consumer_offsets-0 --format dump-log
      python -m codegen dump /var/kafka/orders-0 --format dump-log --verify-index-only
      python -m codegen dump /var/kafka /var/kafka-remote   # tiered: remote and local records
      python -m codegen dump /var/kafka --topic remote-log-metadata --format dump-log
      python -m codegen dump /var/kafka --topic remote-log-metadata --compacted
      python -m codegen dump /var/kafka/__consumer_offsets-0 --package mycodecs
      python -m codegen dump /var/kafka/__consumer_offsets-0 --specs kafka-4.2/specs
      python -m codegen dump /var/kafka/sensors-0 --topics topics.toml --package myproject.kafka
      python -m codegen dump /var/kafka/sensors-0 --topics pyproject.toml --compacted
    """
    if package and specs:
        raise click.UsageError("give --package or --specs, not both")
    if compacted and fmt == "dump-log":
        raise click.UsageError(
            "--compacted prints the latest state as jsonl or a table; kafka-dump-log's text "
            "(--format dump-log) has every record: drop one of the two"
        )
    dump_log_only = {
        "--max-bytes": max_bytes is not None,
        "--skip-record-metadata": skip_record_metadata,
        "--verify-index-only": verify_index_only,
        "--index-sanity-check": index_sanity_check,
    }
    misplaced = [name for name, given in dump_log_only.items() if given]
    if misplaced and fmt != "dump-log":
        raise click.UsageError(f"{', '.join(misplaced)} only apply to --format dump-log")
    chosen = None if topic in ("auto", PLAIN) else TOPIC_CHOICES[topic]
    # --compacted on a broker's log folder: its __consumer_offsets partitions
    listed = CONSUMER_OFFSETS if compacted and topic == "auto" else chosen
    # Bad input (NothingToRead, NotKafkaData): "dump: ..." and exit 2, without the usage
    # banner: the command line was right, the files are not.
    files = input_files(paths, listed, every_kind=fmt == "dump-log", txn_index=not compacted)
    # Segments and snapshots, and files of no kind the folder holds (read as segments);
    # kafka-dump-log's text passes over those, as Kafka's tool does.
    require_kafka_data(
        f
        for f in files
        if f.suffix in LOG_FOLDER_SUFFIXES[:2]
        or (fmt != "dump-log" and f.suffix not in LOG_FOLDER_SUFFIXES)
    )
    if fmt != "dump-log":
        index_files = [
            f for f in files if f.suffix in LOG_FOLDER_SUFFIXES[2:] and f.suffix != TXN_INDEX
        ]
        if index_files:
            raise click.UsageError(
                f"{index_files[0]} is an index or producer-state file, not a segment: pass "
                "--format dump-log to print it as kafka-dump-log does (.txnindex files are read "
                "in every format)"
            )
    bounds: dict[StoragePath, int] = {}
    if fmt != "dump-log":  # records in offset order: a tiered partition's remote, then local
        files, bounds = tiered_order(files)
    topics: list[tuple[StoragePath, str | None]] = []
    for f in files:
        topics.append((f, None if topic == PLAIN else chosen or guess_topic(f)))
    # Imported here for start-up: dump's loop and its printers (jsonl, table, orjson) are
    # not loaded for --help or a usage error (tests/test_cli_startup.py).
    from codegen.dumps.run import Counts, decode_files, dump_log_run, remote_log_compacted

    counts = Counts(quiet)
    try:
        with _codecs(package, specs) as codecs:
            user, topics = _user_topics(topics_file, codecs, topics, topic == "auto")
            remote_states = compacted and all(t == REMOTE_LOG_METADATA for _, t in topics)
            if (
                compacted
                and not remote_states
                and any(t != CONSUMER_OFFSETS for _, t in topics)
                and not (user and all(t in user for _, t in topics))
            ):
                raise click.UsageError(
                    "--compacted works on __consumer_offsets files, on __remote_log_metadata "
                    "files, or on files of topics the topic map names: one kind at a time, "
                    "not both at once; "
                    "pass __consumer_offsets or __remote_log_metadata partition folders or "
                    "segments, a broker's log folder (with --topic remote-log-metadata for its "
                    "tiered storage's states), or your topics' folders"
                )
            if remote_states:
                remote_log_compacted([f for f, _ in topics], counts, fmt)
            elif fmt == "dump-log":
                aborted = dump_log_run(
                    [f for f, _ in topics],
                    [t for _, t in topics],
                    skip_record_metadata=skip_record_metadata,
                    max_bytes=max_bytes,
                    verify_index_only=verify_index_only,
                    index_sanity_check=index_sanity_check,
                    max_message_size=max_message_size,
                    max_batch_size=max_batch_bytes,
                    max_batch_records=max_batch_records,
                    counts=counts,
                    package=codecs,
                    user=user,
                )
                if aborted:
                    counts.errors += 1
            else:
                decode_files(
                    topics,
                    counts,
                    fmt,
                    compacted,
                    max_batch_bytes,
                    max_batch_records,
                    codecs,
                    user,
                    bounds,
                )
    except OSError as exc:
        raise click.UsageError(f"cannot read {exc.filename or 'the input'}: {exc}") from None
    if not quiet:
        click.echo(counts.summary(), err=True)
    if counts.damaged:
        raise SystemExit(EXIT_DAMAGE)


def _user_topics(
    path: StoragePath | None,
    package: str,
    topics: list[tuple[StoragePath, str | None]],
    auto: bool,
) -> tuple[dict[str, UserTopicDecoder], list[tuple[StoragePath, str | None]]]:
    """The decoders of the user topics among ``topics`` (the map of ``--topics``, else of the
    current folder's pyproject.toml, its messages in ``package`` unless the map names its own),
    and ``topics`` with theirs named (with ``--topic auto``: files of other topics stay plain)."""
    path = pyproject_with_map(".") if path is None else path
    if path is None:
        return {}, topics
    # the map's model and parser, for a map only
    from codegen.dumps.topic_map import TopicMapError, load_topic_map

    try:
        topic_map = load_topic_map(path, package)
        if not auto:
            return {}, topics
        named = [(f, RowSource.of(f, None).topic if t is None else None) for f, t in topics]
        from codegen.dumps.user_topics import user_decoders  # for a map only

        user = user_decoders(topic_map, [t for _, t in named])
    except TopicMapError as exc:
        raise click.BadParameter(str(exc), param_hint="--topics") from None
    return user, [(f, n if n in user else t) for (f, t), (_, n) in zip(topics, named, strict=True)]


@contextmanager
def _codecs(package: str | None, specs: tuple[Path, ...]) -> Iterator[str]:
    """The name of the package to decode with: ``--package``, the shipped one, or a package
    generated from ``--specs`` into a temporary folder (importable while the command runs)."""
    if not specs:
        name = package or SHIPPED_PACKAGE
        try:
            package_messages(name)
        except PackageError as exc:
            raise click.BadParameter(str(exc), param_hint="--package") from None
        yield name
        return
    try:
        from codegen.emit import write_package  # the generator extra, for --specs only
    except MissingExtraError as exc:
        raise click.UsageError(exc.text("dump --specs")) from None
    name = f"kafka_specgen_dump_{uuid.uuid4().hex[:12]}"
    with tempfile.TemporaryDirectory(prefix="kafka-specgen-dump-") as tmp:
        try:
            write_package(list(specs), Path(tmp) / name)
        except SpecErrors as exc:
            problems = "\n".join(str(p) for p in exc.problems)
            raise click.UsageError(
                f"--specs: {plural(len(exc.problems), 'problem')}:\n{problems}"
            ) from None
        except NoSpecsError as exc:
            raise click.BadParameter(str(exc), param_hint="--specs") from None
        sys.path.insert(0, tmp)
        try:
            importlib.import_module(name)
            yield name
        finally:
            sys.path.remove(tmp)
            for mod in [m for m in sys.modules if m == name or m.startswith(name + ".")]:
                del sys.modules[mod]
