"""The real data sets of tests/data replayed through older releases' own loaders: the model's
answer and the code's agree on each (and on what survives), for the releases make test
replays; make test-replay-matrix replays them through every release."""

from __future__ import annotations

from pathlib import Path

import pytest
from replay_support import TESTED, require, use_project_cache

from codegen.forensics.downgrade import check_downgrade
from codegen.forensics.replay import agreements, replay

ROOT = Path(__file__).resolve().parent.parent
DATA = {
    "ldi-poc": ROOT / "tests" / "data" / "kafka-data" / "ldi-poc",
    "aibulb": ROOT / "tests" / "data" / "kafka-data" / "aibulb",
    "mscaldas-spooldir": ROOT / "tests" / "data" / "kafka-data" / "mscaldas-spooldir",
}


def _agree(name: str, version: str) -> None:
    path = DATA[name]
    model = check_downgrade(path, version)
    replayed = replay(path, version)
    replayed.agreements = agreements(model, replayed)
    assert not replayed.harness_errors, replayed.harness_errors
    assert replayed.agreements
    disagree = [a for a in replayed.agreements if not a.agree]
    assert not disagree, (name, version, disagree)
    # Every group the release keeps is one the cluster has, with the same offsets; the new
    # group coordinator also keeps an empty classic group whose offsets were all deleted (its
    # commits made it, their tombstones left it) until its next offset expiration pass.
    with_offsets = {g for g, _, _ in replayed.survives.offsets}
    for group, kept in replayed.survives.groups.items():
        transient = kept.type == "classic" and kept.state == "Empty" and group not in with_offsets
        assert group in replayed.current.groups or transient, group
    for k, offset in replayed.survives.offsets.items():
        assert replayed.current.offsets[k] == offset


@pytest.mark.replay
@pytest.mark.parametrize(
    ("name", "version"),
    [
        ("ldi-poc", "2.8.0"),
        ("ldi-poc", "4.4.0"),
        ("aibulb", "3.4.0"),
        ("mscaldas-spooldir", "4.4.0"),
    ],
)
def test_each_data_set_agrees(monkeypatch: pytest.MonkeyPatch, name: str, version: str) -> None:
    use_project_cache(monkeypatch)
    require((version,))
    _agree(name, version)


@pytest.mark.replay
@pytest.mark.replay_matrix
@pytest.mark.parametrize("name", sorted(DATA))
@pytest.mark.parametrize("version", sorted(set(TESTED) | {"3.9.0", "4.0.0"}))
def test_each_data_set_agrees_everywhere(
    monkeypatch: pytest.MonkeyPatch, name: str, version: str
) -> None:
    use_project_cache(monkeypatch)
    require((version,))
    _agree(name, version)
