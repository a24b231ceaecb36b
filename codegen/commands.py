"""The subcommands of ``python -m codegen`` that live with the stages they drive, and the
extra each needs: a table without click, which ``codegen.__main__`` reads where click itself is
missing."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from codegen.extras import EXTRA_MODULES

__all__ = ["BUILT_IN_EXTRA", "SUBCOMMANDS", "Subcommand", "extra_of"]

BUILT_IN_EXTRA: Final = "generator"
"""The extra of the commands ``codegen.cli`` defines itself (validate, generate, check)."""


@dataclass(frozen=True, slots=True)
class Subcommand:
    """A subcommand that lives with the stage it drives, imported only when it runs: the
    commands' modules bring numpy, pyarrow, jsonschema... which cost more than many a run."""

    module: str
    attribute: str
    summary: str
    """The first paragraph of its help: the command list of ``--help`` shows it without
    importing the module (a test keeps the two equal)."""
    extra: str
    """The extra whose libraries it needs (``codegen.extras.EXTRA_MODULES``)."""


SUBCOMMANDS: Final[Mapping[str, Subcommand]] = {
    "lint": Subcommand(
        "codegen.lint.command",
        "lint_command",
        "Check that the specs NEW are compatible with the specs OLD.",
        "generator",
    ),
    "dump": Subcommand(
        "codegen.dumps.command",
        "dump_command",
        "Decode __consumer_offsets, __transaction_state, __share_group_state and "
        "__cluster_metadata segments (.log) and KRaft snapshots (.checkpoint); read any other "
        "topic's segments plain, or as the topic map (--topics) says.",
        "dumps",
    ),
    "downgrade-check": Subcommand(
        "codegen.forensics.downgrade_command",
        "downgrade_check_command",
        "Tell whether the brokers of Kafka VERSION can run a cluster's disks.",
        "dumps",
    ),
    "groups": Subcommand(
        "codegen.forensics.groups_command",
        "groups_command",
        "Each group of a __consumer_offsets dump at a point in time, and its timeline.",
        "dumps",
    ),
    "lag": Subcommand(
        "codegen.forensics.lag_command",
        "lag_command",
        "Committed offsets over time, lag and a Burrow-like status (OK, WARN, ERR, STOP, "
        "REWIND, STALL).",
        "dumps",
    ),
    "tiered": Subcommand(
        "codegen.tiered.command",
        "tiered_command",
        "Tiered storage from the disk: remote segments and their states, uploads that never "
        "finished, deletions that hang, holes, and bytes and records remote versus local.",
        "dumps",
    ),
    "transactions": Subcommand(
        "codegen.forensics.transactions_command",
        "transactions_command",
        "Transactions from the disk: open and hanging transactions, stuck last stable "
        "offsets, producer state and aborted ranges.",
        "dumps",
    ),
}


def extra_of(command: str, module: str | None) -> str | None:
    """The extra to install for ``module`` (a top-level name) missing in ``command``: the
    command's own extra when it lists the module, else the first that does (None: no extra
    brings it, so its absence is not the user's to fix by an install)."""
    sub = SUBCOMMANDS.get(command)
    own = sub.extra if sub is not None else BUILT_IN_EXTRA
    if module in EXTRA_MODULES[own]:
        return own
    return next((extra for extra, names in EXTRA_MODULES.items() if module in names), None)
