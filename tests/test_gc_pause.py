"""codegen.gc_pause: the cyclic collector off within, back as it was after."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from codegen.gc_pause import Program, freeze_survivors, gc_paused


@pytest.fixture
def collector_on() -> Iterator[None]:
    was = gc.isenabled()
    gc.enable()
    yield
    if not was:
        gc.disable()


@pytest.mark.usefixtures("collector_on")
def test_paused_within_and_back_after() -> None:
    with gc_paused():
        assert not gc.isenabled()
    assert gc.isenabled()


@pytest.mark.usefixtures("collector_on")
def test_nested_uses_resume_at_the_outermost() -> None:
    with gc_paused():
        with gc_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()


@pytest.mark.usefixtures("collector_on")
def test_back_after_an_exception() -> None:
    with pytest.raises(ValueError), gc_paused():
        raise ValueError("stop")
    assert gc.isenabled()


@pytest.mark.usefixtures("collector_on")
def test_a_collector_turned_off_by_the_caller_stays_off() -> None:
    gc.disable()
    with gc_paused():
        assert not gc.isenabled()
    assert not gc.isenabled()


def test_survivors_frozen_only_as_the_program() -> None:
    was = gc.get_freeze_count()
    alive = [[] for _ in range(3)]  # objects the collector tracks, alive now
    freeze_survivors()  # in process: the caller's objects are left as they are
    assert gc.get_freeze_count() == was and gc.is_tracked(alive[0])
    Program.running = True
    try:
        freeze_survivors()
        assert gc.get_freeze_count() > was
    finally:
        Program.running = False
        if not was:  # this test's freeze undone (an earlier one's is left)
            gc.unfreeze()
