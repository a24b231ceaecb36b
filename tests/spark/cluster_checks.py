"""What the standalone cluster test compares between the cluster and local mode: every row of
``kafka-log`` (decoded) and the forensics views of a log dir, as JSON-able sorted lists. Imported
by the cluster's driver (a subprocess) and by the test itself."""

from __future__ import annotations

from typing import Any

FACTS = ("rows", "group_states", "offset_history", "log_ends")


def _sorted(df: Any) -> list[str]:
    return sorted(repr(tuple(r)) for r in df.collect())


def facts(spark: Any, url: str, options: dict[str, str]) -> dict[str, Any]:
    from codegen.dumps import storage
    from spark_udfs import forensics
    from spark_udfs.session import kafka_log_reader

    decoded = kafka_log_reader(spark, options).option("decode", "true").load(url)
    columns = ["topic", "partition", "offset", "recordName", "file", "_error"]
    path = storage.path(url, options)
    dump = forensics.read_dump(spark, path)
    ends = forensics.read_log_ends(spark, path)
    return {
        "rows": _sorted(decoded.select(*columns)),
        "group_states": _sorted(forensics.group_states(dump)),
        "offset_history": _sorted(forensics.offset_history(dump)),
        "log_ends": [] if ends is None else _sorted(ends),
    }
