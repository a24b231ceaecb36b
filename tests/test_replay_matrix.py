"""Every release the replay knows (codegen/forensics/replay/jars.json: the first release of each
line from 2.8 to 4.4, 3.4.1, and the latest 3.9 and 4.0), each group coordinator it can run,
replayed on the zoo of tests/downgrade_logs.py: where each partition stops loading, what
survives, and the model's agreement. make test-replay-matrix runs it (tests/replay/fetch.sh
--all first); make test replays a representative part (tests/test_replay.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from downgrade_logs import zoo
from replay_support import require, use_project_cache
from test_replay import check_zoo

from codegen.forensics.releases import NEW, OLD, release
from codegen.forensics.replay.jars import locked_releases

pytestmark = [pytest.mark.replay, pytest.mark.replay_matrix]


def _cases() -> list[tuple[str, str]]:
    cases = []
    for version in locked_releases():
        target = release(version)
        for loader in (target.group_loader, target.other_group_loader):
            if loader is not None:
                cases.append((version, NEW if loader.name.startswith("the new ") else OLD))
    return cases


@pytest.fixture(scope="module")
def zoo_image(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return zoo(tmp_path_factory.mktemp("zoo"))


@pytest.mark.parametrize(("version", "coordinator"), _cases())
def test_every_release_and_group_coordinator(
    zoo_image: Path, monkeypatch: pytest.MonkeyPatch, version: str, coordinator: str
) -> None:
    use_project_cache(monkeypatch)
    require((version,))
    replayed = check_zoo(zoo_image, version, coordinator)
    assert replayed.release == version


def test_the_matrix_covers_every_line_and_3_4_1() -> None:
    versions = {v for v, _ in _cases()}
    lines = {v.rsplit(".", 1)[0] for v in versions}
    assert lines == {"2.8"} | {f"3.{m}" for m in range(10)} | {f"4.{m}" for m in range(5)}
    assert "3.4.1" in versions
    assert {("3.9.0", NEW), ("3.9.0", OLD), ("4.0.0", OLD), ("3.6.0", NEW)} <= set(_cases())
