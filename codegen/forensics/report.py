"""``--format html``: one self-contained HTML report of groups, offsets and lag.

Plots are drawn with matplotlib (the ``report`` extra) and embedded as inline SVG, so the file
needs no network, no script and no other file to show. The answer first: a table of every group
with its state and lag status; then per group its state, its partitions (committed offset and
log end offset over time, lag over time from 0, integer offset ticks, the Burrow-like status),
and after them the events (a timeline by kind, one colour per kind across the report, and the
event table). Where there is nothing to plot (one commit, no event with a time) a sentence says
so instead of an empty frame.
"""

from __future__ import annotations

import datetime as _dt
import html
import io
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from codegen.dumps.model import ReadError, error_line
from codegen.extras import missing_extra
from codegen.forensics.groups import GroupReport, group_reports
from codegen.forensics.inputs import discover, parse_as_of
from codegen.forensics.lag import GroupLag, PartitionLag, lag_reports
from codegen.forensics.output import ReadErrors, emit, require_groups
from codegen.forensics.shares import DELIVERY_STATES
from codegen.text import plural, utc_text

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["html_report", "render_html", "require_plotting"]

_STATUS_COLOURS: Final = {
    "OK": "#2e7d32",
    "WARN": "#ef6c00",
    "ERR": "#c62828",
    "STOP": "#c62828",
    "STALL": "#c62828",
    "REWIND": "#c62828",
}
_EVENT_COLOURS: Final = {
    "created": "#1f77b4",
    "rebalance": "#ff7f0e",
    "member-joined": "#2ca02c",
    "member-left": "#d62728",
    "protocol-conversion": "#9467bd",
    "assignor-changed": "#8c564b",
    "offset-deleted": "#e377c2",
    "group-deleted": "#7f7f7f",
    "member-epoch": "#17becf",
}
"""One colour per event kind, the same in every plot of a report."""
_OTHER_EVENT_COLOUR: Final = "#bcbd22"
_CSS: Final = """
body { font-family: system-ui, sans-serif; margin: 2em; color: #222; }
h1 { font-size: 1.5em; } h2 { font-size: 1.25em; border-bottom: 1px solid #ccc; }
h3 { font-size: 1.05em; }
table { border-collapse: collapse; margin: .5em 0; font-size: .9em; }
td, th { border: 1px solid #ddd; padding: 2px 6px; text-align: left; vertical-align: top; }
.status { color: #fff; padding: 1px 6px; border-radius: 3px; font-weight: bold; }
.plot svg { max-width: 100%; height: auto; }
.damage { color: #c62828; font-weight: bold; }
"""


def html_report(
    paths: tuple[str, ...],
    wanted: tuple[str, ...],
    as_of: str | None,
    window: int,
    output: Path | None,
) -> None:
    """``groups`` and ``lag`` with ``--format html``: the report of the groups of ``paths``
    (``wanted``: only these), lag judged over ``window`` commits, to ``output``."""
    require_plotting()  # before the work: a missing extra is said at once
    point = parse_as_of(as_of) if as_of is not None else None
    dirs = discover(list(paths))
    damage = ReadErrors()
    lag_errors: list[ReadError] = []
    lags = lag_reports(dirs, None, point, window, lag_errors)
    # groups' read reports what lag's does of the coordinator partitions (the same segments,
    # the same check of each commit) and the other records that do not decode; lag's adds the
    # data partitions' segment errors
    groups = group_reports(dirs, None, point, damage.errors)
    said = set(map(error_line, damage.errors))
    damage.errors += [e for e in lag_errors if error_line(e) not in said]
    damage.write_new()
    if wanted:
        require_groups(wanted, {g.group for g in lags} | {g.group for g in groups})
        lags = [g for g in lags if g.group in wanted]
        groups = [g for g in groups if g.group in wanted]
    names = ", ".join(Path(p).name for p in paths)
    emit(render_html(groups, lags, f"Consumer groups of {names}", damage.errors), output)
    damage.finish()


def require_plotting() -> None:
    """Import what draws the plots, or raise the ``MissingExtraError`` of the ``report``
    extra: the one guard of every matplotlib import here, called before any work."""
    try:
        import matplotlib.figure
        import matplotlib.ticker  # noqa: F401
    except ModuleNotFoundError as exc:
        raise missing_extra("the HTML report", "report", exc, option="--format html") from None


def _figure(width: float, height: float) -> Figure:
    from matplotlib.figure import Figure

    return Figure(figsize=(width, height), layout="constrained")


def _svg(fig: Figure) -> str:
    import matplotlib

    buf = io.StringIO()
    # A fixed salt and no date: the same input gives the same file.
    with matplotlib.rc_context(
        {
            "svg.hashsalt": "kafka-specgen",
            "svg.fonttype": "path",
            "date.epoch": "1970-01-01T00:00:00",  # the unit _days() gives
        }
    ):
        fig.savefig(buf, format="svg", metadata={"Date": None})
    text = buf.getvalue()
    return text[text.index("<svg") :]


def _when(ms: int) -> _dt.datetime:
    return _dt.datetime.fromtimestamp(ms / 1000, tz=_dt.UTC)


def _days(ms: int) -> float:
    """matplotlib's date axis unit: days since 1970-01-01 (its default epoch)."""
    return ms / 86_400_000


def _iso(ms: int) -> str:
    return utc_text(ms, none="-")


def _badge(status: str | None) -> str:
    if status is None:
        return "<span>no status</span>"
    colour = _STATUS_COLOURS.get(status, "#555")
    return f'<span class="status" style="background:{colour}">{html.escape(status)}</span>'


def _pad_single_instant(ax: Any, xs: list[float]) -> None:
    # Everything at one instant: show a minute either side, not matplotlib's default years.
    if xs and min(xs) == max(xs):
        ax.set_xlim(xs[0] - 1 / 1440, xs[0] + 1 / 1440)


def group_label(group: str) -> str:
    """A group id as the report shows it: the empty one named."""
    return '"" (empty group id)' if group == "" else group


def _sentence(text: str) -> str:
    return f"<p><i>{html.escape(text)}</i></p>"


def _timeline_plot(report: GroupReport) -> str:
    events = [e for e in report.events if e.timestamp >= 0]
    if not events:
        return _sentence("No event with a timestamp to plot.")
    kinds = sorted({e.kind for e in events})
    fig = _figure(9, 0.5 + 0.35 * len(kinds))
    ax = fig.add_subplot()
    for i, kind in enumerate(kinds):
        xs = [_days(e.timestamp) for e in events if e.kind == kind]
        colour = _EVENT_COLOURS.get(kind, _OTHER_EVENT_COLOUR)
        ax.scatter(xs, [i] * len(xs), s=18, label=kind, color=colour)
    ax.xaxis_date()
    _pad_single_instant(ax, [_days(e.timestamp) for e in events])
    ax.set_yticks(range(len(kinds)), kinds)
    ax.set_title(f"{group_label(report.group)}: timeline")
    ax.grid(axis="x", alpha=0.3)
    return f'<div class="plot">{_svg(fig)}</div>'


def _partition_plot(p: PartitionLag) -> str:
    commits = p.commits  # built once: a property
    if len(commits) < 2:
        (only,) = commits
        return _sentence(
            f"One commit (offset {only.offset} at {_iso(only.commit_timestamp)}): nothing to "
            "plot over time."
        )
    from matplotlib.ticker import MaxNLocator

    lags = [c.lag for c in commits if c.lag is not None]
    fig = _figure(9, 4 if lags else 2.5)
    if lags:
        top, bottom = fig.subplots(2, 1, sharex=True)
    else:
        top, bottom = fig.subplots(1, 1), None
    xs = [_days(c.commit_timestamp) for c in commits]
    known = [(x, c.log_end_offset) for x, c in zip(xs, commits, strict=True)]
    ends = [(x, e) for x, e in known if e is not None]
    if ends:
        top.step(
            [x for x, _ in ends],
            [e for _, e in ends],
            where="post",
            label="log end offset",
            color="#ff7f0e",
            linewidth=3,
            alpha=0.5,
        )
    # Drawn over the log end, so a consumer that keeps up shows both lines.
    top.step(
        xs, [c.offset for c in commits], where="post", label="committed offset", color="#1f77b4"
    )
    top.set_ylabel("offset")
    top.yaxis.set_major_locator(MaxNLocator(integer=True))
    top.legend(loc="upper left")
    top.set_title(f"{group_label(p.group)}: {p.topic}-{p.partition}")
    axes = [top]
    if bottom is not None:
        points = [(x, c.lag) for x, c in zip(xs, commits, strict=True) if c.lag is not None]
        bottom.plot([x for x, _ in points], [lag for _, lag in points], marker="o", markersize=3)
        bottom.set_ylabel("lag")
        bottom.set_ylim(0, max(1, max(lags)) * 1.05)
        bottom.yaxis.set_major_locator(MaxNLocator(integer=True))
        axes.append(bottom)
    last = axes[-1]
    _pad_single_instant(last, xs)
    last.xaxis_date()
    for ax in axes:
        ax.grid(alpha=0.3)
    plot = f'<div class="plot">{_svg(fig)}</div>'
    return plot if lags else plot + _sentence("Lag unknown: no log end history here.")


def _table(head: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    out = ["<table><tr>", *(f"<th>{html.escape(h)}</th>" for h in head), "</tr>"]
    for row in rows:
        out.append("<tr>" + "".join(f"<td>{html.escape(str(v))}</td>" for v in row) + "</tr>")
    out.append("</table>")
    return "".join(out)


def _anchor(name: str) -> str:
    return "group-" + (html.escape(name) if name else "-empty")


def _group_section(report: GroupReport | None, lag: GroupLag | None, name: str) -> str:
    label = group_label(name)
    parts = [f'<section id="{_anchor(name)}"><h2>{html.escape(label)}</h2>']
    if report is not None:
        gen = report.generation if report.type == "classic" else report.epoch
        parts.append(
            _table(
                [
                    "type",
                    "state",
                    "protocol type",
                    "protocol",
                    "generation / epoch",
                    "members",
                    "partition",
                ],
                [
                    [
                        report.type or "deleted",
                        report.state,
                        "-" if report.protocol_type is None else repr(report.protocol_type),
                        report.protocol or "-",
                        "-" if gen is None else gen,
                        len(report.members),
                        report.partition,
                    ]
                ],
            )
        )
        if report.inventory is not None and report.inventory.cooperative_switch:
            inv = report.inventory
            parts.append(
                f"<p>Assignor {html.escape(inv.chosen or '-')}; cooperative switch: "
                f"<b>{html.escape(inv.cooperative_switch or '')}</b>: {html.escape(inv.why)}</p>"
            )
    if lag is not None and lag.partitions:
        parts.append(f"<h3>Offsets and lag {_badge(lag.status)}</h3>")
        for p in lag.partitions:
            source = f" (from {p.log_end_source})" if p.log_end_source else ""
            parts.append(
                f"<h3>{html.escape(p.topic)}-{p.partition} {_badge(p.status)}</h3>"
                f"<p>{html.escape(p.reason)}; committed {p.history.newest().offset}, log end "
                f"{'-' if p.log_end_offset is None else p.log_end_offset}"
                f"{html.escape(source)}, lag {'-' if p.lag is None else p.lag}"
                f"{'' if p.live else ' (offset deleted)'}</p>"
                f"{_partition_plot(p)}"
            )
    if lag is not None and lag.share_partitions:
        parts.append("<h3>Share partitions (start offset, in-flight records)</h3>")
        parts.append(
            _table(
                ["partition", "start offset", "log end", "lag", "state epoch", "in flight"],
                [
                    [
                        f"{sp.state.topic_label}-{sp.state.partition}",
                        sp.state.start_offset,
                        "-" if sp.log_end_offset is None else sp.log_end_offset,
                        "-" if sp.lag is None else sp.lag,
                        sp.state.state_epoch,
                        ", ".join(
                            f"{b.first_offset}-{b.last_offset} "
                            f"{DELIVERY_STATES.get(b.delivery_state, b.delivery_state)}"
                            for b in sp.state.in_flight
                        )
                        or "-",
                    ]
                    for sp in lag.share_partitions
                ],
            )
        )
    if report is not None:
        parts.append("<h3>Events</h3>")
        parts.append(_timeline_plot(report))
        parts.append(
            _table(
                ["offset", "time", "event", "detail"],
                [
                    [
                        e.offset,
                        _iso(e.timestamp),
                        e.kind,
                        " ".join(f"{k}={v}" for k, v in e.detail.items()),
                    ]
                    for e in report.events
                ],
            )
        )
    parts.append("</section>")
    return "".join(parts)


def _total_lag(lag: GroupLag | None) -> str:
    if lag is None:
        return "-"
    lags = [p.lag for p in lag.partitions] + [s.lag for s in lag.share_partitions]
    known = [x for x in lags if x is not None]
    if not known:
        return "unknown"
    missing = len(lags) - len(known)
    return f"{sum(known)}" + (f" ({missing} partition(s) unknown)" if missing else "")


def _damage(errors: Sequence[ReadError]) -> str:
    """What could not be read, as ``dump`` says it: a paragraph and a line per error."""
    if not errors:
        return ""
    lines = "".join(f"<li><code>{html.escape(error_line(e))}</code></li>" for e in errors)
    return (
        f'<p class="damage">{plural(len(errors), "error")} reading the dump: this report is '
        f"of what was read, without these.</p><ul>{lines}</ul>"
    )


def render_html(
    groups: Sequence[GroupReport],
    lags: Sequence[GroupLag],
    title: str,
    errors: Sequence[ReadError] = (),
) -> str:
    """The report of the given groups and their offsets, as one HTML document; ``errors``: what
    could not be read of the dump, listed first (the report goes without it)."""
    require_plotting()
    by_group = {r.group: r for r in groups}
    lag_by_group = {g.group: g for g in lags}
    names = sorted(set(by_group) | set(lag_by_group))
    sections = [_group_section(by_group.get(n), lag_by_group.get(n), n) for n in names]
    summary = _table(
        ["group", "type", "state", "members", "lag status", "lag now"],
        [
            [
                group_label(n),
                (by_group[n].type or "deleted") if n in by_group else "-",
                by_group[n].state if n in by_group else "-",
                len(by_group[n].members) if n in by_group else "-",
                (lag_by_group[n].status or "-") if n in lag_by_group else "-",
                _total_lag(lag_by_group.get(n)),
            ]
            for n in names
        ],
    )
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{html.escape(title)}</title><style>{_CSS}</style></head><body>"
        f"<h1>{html.escape(title)}</h1>{_damage(errors)}{summary}{''.join(sections)}"
        "</body></html>\n"
    )
