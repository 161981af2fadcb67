"""The serving process keeps what loading made out of every garbage collection."""

from __future__ import annotations

import gc
import weakref

from registry.rpc.server import settle_long_lived_objects


class Node:
    def __init__(self) -> None:
        self.other: Node | None = None


def cycle() -> weakref.ref[Node]:
    first, second = Node(), Node()
    first.other, second.other = second, first
    return weakref.ref(first)


def test_settling_freezes_what_is_alive_and_collects_what_is_not() -> None:
    garbage = cycle()
    kept = Node()
    try:
        settle_long_lived_objects()
        assert garbage() is None
        assert gc.get_freeze_count() > 0
        # Frozen: no generation, so no collection, walks it.
        assert all(obj is not kept for obj in gc.get_objects())
    finally:
        gc.unfreeze()
