"""codegen.gc_pause: the cyclic collector off within, back as it was after."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from codegen.gc_pause import gc_paused


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
