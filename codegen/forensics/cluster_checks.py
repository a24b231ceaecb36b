"""The checks of a downgrade verdict that read ``__cluster_metadata``.

``metadata records``
    Every record type and version of the metadata log a broker of the release loads (the
    latest snapshot, then the log after it), read by the release's ``MetadataRecordSerde``: an
    unknown type, or a newer version its generated class cannot read (a nested struct's
    ``read()`` refuses a version above its own; new non-tagged fields leave "garbage"), throws
    ``MetadataParseException`` and the node dies at start-up. This is the first thing a release
    fails on, before any coordinator loads.
``cluster features``
    The finalized ``metadata.version`` and feature levels (``FeatureLevelRecord``; the latest
    snapshot, then the log after it; ``kraft.version`` from ``KRaftVersionRecord``) against the
    latest production levels of the release (its ``MetadataVersion`` and feature enums). A
    KRaft cluster cannot run a release before 3.3 (KIP-833).
``dynamic configs``
    Live ``ConfigRecord`` of a resource type the release does not know, such as the ``GROUP``
    configs of KIP-848 (``group.consumer.session.timeout.ms``...), which must be deleted before
    brokers are downgraded.
"""

from __future__ import annotations

from codegen.forensics.cluster import ClusterMetadata
from codegen.forensics.releases import KRaftSupport, Release, release, release_lines
from codegen.forensics.verdict import BLOCKED, NOT_CHECKED, PARTLY_CHECKED, PASSED, Check

__all__ = ["configs_check", "features_check", "metadata_records_check", "shell_word"]


def metadata_records_check(target: Release, meta: ClusterMetadata | None) -> Check:
    """Every metadata record type and version the release would load, in load order."""
    name = "metadata records"
    if meta is None:
        return Check(name, NOT_CHECKED, "the input holds no __cluster_metadata")
    if target.kraft is None or not target.metadata_types:
        return Check(
            name,
            NOT_CHECKED,
            f"Kafka {target.label} has no KRaft metadata loader (see cluster features)",
        )
    findings: list[str] = []
    for (api_key, version), (source, offset, record) in meta.record_kinds.items():
        reads = target.metadata_types.get(api_key)
        where = f"__cluster_metadata-0 {source}@{offset}"
        if reads is None:
            findings.append(
                f"{where}: {record} (type {api_key}) v{version}: Kafka {target.label} does not "
                "know the record type: org.apache.kafka.server.common.serialization."
                f"MetadataParseException (unknown metadata id {api_key})"
            )
        elif version in reads.unreadable:
            findings.append(
                f"{where}: {record} (type {api_key}) v{version}: Kafka {target.label} reads it "
                f"up to v{reads.highest_version}: MetadataParseException: Failed to deserialize "
                f"record with type {api_key}: {reads.unreadable[version]}"
            )
    kinds = len(meta.record_kinds)
    summary = f"{kinds} record type/version pair(s) of the snapshot and log"
    if not findings:
        return Check(name, PASSED, summary + f", all read by Kafka {target.label}")
    summary += f"; the node dies at start-up on the first ({len(findings)} unreadable)"
    return Check(
        name,
        BLOCKED,
        summary,
        findings,
        [
            f"Kafka {target.label} cannot load this metadata log: a broker or controller of it "
            "stops with MetadataParseException while loading __cluster_metadata (the records "
            "were written at a metadata.version it does not support): keep a release that "
            "reads them"
        ],
    )


def features_check(target: Release, meta: ClusterMetadata | None, mode: str) -> Check:
    name = "cluster features"
    if meta is None:
        why = "the input holds no __cluster_metadata: " + (
            "a ZooKeeper cluster keeps inter.broker.protocol.version in server.properties "
            "and its finalized features in ZooKeeper, not on the brokers' disks"
            if mode != "KRaft"
            else "give a log dir holding __cluster_metadata-0"
        )
        return Check(name, NOT_CHECKED, why)
    kraft = target.kraft
    if kraft is None:
        return Check(
            name,
            BLOCKED,
            f"a KRaft cluster (metadata.version "
            f"{'unknown' if meta.metadata_version is None else meta.metadata_version}); "
            f"Kafka {target.label} has no production KRaft mode",
            [f"Kafka {target.label} predates production KRaft (3.3, KIP-833)"],
            [
                f"a KRaft cluster cannot run Kafka {target.label} (KRaft is production from 3.3, "
                "KIP-833, and there is no migration from KRaft back to ZooKeeper): choose 3.3 "
                "or later"
            ],
        )
    findings: list[str] = []
    steps: list[str] = []
    level = meta.metadata_version
    names = _newest_kraft()
    if level is None:
        summary = "no metadata.version FeatureLevelRecord in __cluster_metadata"
    else:
        have = names.metadata_version_name(level) if names else f"level {level}"
        top = kraft.highest_metadata_version
        summary = (
            f"metadata.version {level} ({have}) against at most "
            f"{top} ({kraft.metadata_version_name(top)}) in Kafka {target.label}"
        )
        if level > kraft.highest_metadata_version:
            first = _first_line_supporting(level)
            findings.append(
                f"metadata.version {level} ({have}) is above the highest Kafka {target.label} "
                f"supports, {kraft.highest_metadata_version} "
                f"({kraft.metadata_version_name(kraft.highest_metadata_version)})"
            )
            steps.append(
                f"metadata.version {level} cannot in general be lowered to "
                f"{kraft.highest_metadata_version} (kafka-features.sh downgrade --metadata "
                "refuses a downgrade that would lose metadata, and --unsafe loses it): this "
                f"cluster cannot be downgraded to Kafka {target.label}"
                + (f"; the oldest release line supporting it is {first}" if first else "")
            )
    for feature, finalized in sorted(meta.features.items()):
        supported = kraft.features.get(feature, 0)
        summary += f"; {feature} {finalized} (at most {supported})"
        if finalized > supported:
            findings.append(
                f"{feature} is finalized at {finalized}, above the {supported} Kafka "
                f"{target.label} supports"
            )
            steps.append(
                f"lower {feature} to {supported}: kafka-features.sh --bootstrap-server B "
                f"downgrade --feature {feature}={supported}"
                + (
                    " (after no consumer, share or streams group is left)"
                    if feature in ("group.version", "share.version", "streams.version")
                    else ""
                )
            )
    status = BLOCKED if findings else (PASSED if level is not None else PARTLY_CHECKED)
    return Check(name, status, summary, findings, steps)


def _newest_kraft() -> KRaftSupport | None:
    """The newest release's table, which names every older metadata.version too."""
    return release(release_lines()[-1]).kraft


def _first_line_supporting(level: int) -> str | None:
    for line in release_lines():
        k = release(line).kraft
        if k is not None and k.highest_metadata_version >= level:
            return line
    return None


def configs_check(target: Release, meta: ClusterMetadata | None) -> Check:
    name = "dynamic configs"
    if meta is None:
        return Check(name, NOT_CHECKED, "the input holds no __cluster_metadata")
    kraft = target.kraft
    if kraft is None:
        return Check(
            name,
            NOT_CHECKED,
            f"Kafka {target.label} has no KRaft controller to read them (see cluster features)",
        )
    findings: list[str] = []
    steps: list[str] = []
    for (rtype, resource), names in sorted(meta.configs.items()):
        if rtype in kraft.config_resource_types:
            continue
        type_name = meta.config_type_name(rtype)
        findings.append(
            f"{type_name} ({rtype}) config(s) of {resource!r}: {', '.join(sorted(names))}; "
            f"Kafka {target.label} does not know that resource type"
        )
        entity = {"GROUP": "groups", "CLIENT_METRICS": "client-metrics"}.get(type_name)
        if entity is not None:
            steps.append(
                f"delete them before downgrading brokers (KIP-848): kafka-configs.sh "
                f"--bootstrap-server B --alter --entity-type {entity} --entity-name "
                f"{shell_word(resource)} --delete-config {','.join(sorted(names))}"
            )
        else:
            steps.append(f"delete the {type_name} configs of {resource!r} before downgrading")
    total = sum(len(n) for n in meta.configs.values())
    summary = f"{total} live dynamic config(s) of {len(meta.configs)} resource(s)"
    return Check(name, BLOCKED if findings else PASSED, summary, findings, steps)


def shell_word(group: str | None) -> str:
    """A group id or resource name as one shell word."""
    if not group:
        return "''"
    return (
        group
        if group.replace("-", "").replace("_", "").replace(".", "").isalnum()
        else ("'" + group.replace("'", "'\\''") + "'")
    )
