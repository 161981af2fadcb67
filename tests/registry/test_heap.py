"""A bulk build runs with the cyclic collector paused, and leaves it as it found it."""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator

import pytest

from registry.heap import collector_paused, lasting_build


@pytest.fixture
def collector_on() -> Iterator[None]:
    was = gc.isenabled()
    gc.enable()
    yield
    if not was:
        gc.disable()


def test_paused_blocks_nest_and_the_collector_returns_after_the_last(collector_on: None) -> None:
    with collector_paused():
        assert not gc.isenabled()
        with collector_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()  # the outer block still runs
    assert gc.isenabled()


def test_a_failing_block_still_turns_the_collector_back_on(collector_on: None) -> None:
    with pytest.raises(RuntimeError), collector_paused():
        raise RuntimeError("the build failed")
    assert gc.isenabled()


def test_overlapping_blocks_in_two_threads_end_with_the_collector_on(collector_on: None) -> None:
    entered, release = threading.Event(), threading.Event()

    def other() -> None:
        with collector_paused():
            entered.set()
            release.wait(10)

    thread = threading.Thread(target=other)
    with collector_paused():
        thread.start()
        assert entered.wait(10)
    assert not gc.isenabled()  # the other thread's block is still open
    release.set()
    thread.join(10)
    assert gc.isenabled()


def test_a_collector_that_was_off_stays_off() -> None:
    was = gc.isenabled()
    gc.disable()
    try:
        with collector_paused():
            pass
        assert not gc.isenabled()
    finally:
        if was:
            gc.enable()


def test_a_lasting_build_leaves_what_it_made_out_of_the_collectors_reach(
    collector_on: None,
) -> None:
    gc.unfreeze()
    with lasting_build():
        assert not gc.isenabled()
        made = [{"tool": i} for i in range(1000)]
    assert gc.isenabled()
    assert gc.get_freeze_count() >= len(made)
    gc.unfreeze()


def test_a_failed_lasting_build_freezes_nothing(collector_on: None) -> None:
    gc.unfreeze()
    with pytest.raises(RuntimeError), lasting_build():
        raise RuntimeError("the load failed")
    assert gc.isenabled()
    assert gc.get_freeze_count() == 0
