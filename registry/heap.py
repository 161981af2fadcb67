"""The heap around a bulk build: the cyclic collector paused while it runs, and the
allocator's free pages handed back to the system after it.

Loading a store parses every tool and builds the first snapshot: the parse's temporaries are
freed, but glibc keeps the pages, and the process' resident size stays at its peak (about
1.5 KB a tool more at 30,000 tools). `malloc_trim` returns them. Elsewhere (another libc,
another system) this does nothing.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager


def _find_trim() -> Callable[[int], int] | None:
    # find_library runs `ldconfig -p`: a process forked from one holding a million tools'
    # heap took 4.4 s to start, so the function is found once, at import, while it is small.
    name = ctypes.util.find_library("c")
    if name is None:
        return None
    try:
        return ctypes.CDLL(name).malloc_trim
    except (OSError, AttributeError):
        return None


_TRIM = _find_trim()


def release_free_memory() -> bool:
    """Returns freed heap pages to the system; False where the C library cannot."""
    trim = _TRIM
    if trim is None:
        return False
    trim(0)
    return True


_pause_lock = threading.Lock()
_pauses = 0
_was_enabled = False


@contextmanager
def collector_paused() -> Iterator[None]:
    """The cyclic garbage collector off for the block (nested and from any thread: it is back
    on when the last block ends, if it was on before the first).

    A bulk build makes millions of objects that all stay alive (every tool's schema as
    dicts and lists), and each time their count grows by a quarter the collector walks every
    one of them to find no garbage: 2.0 of 5.7 s of loading 100,000 tools here. Reference
    counting still frees what the build drops; only cycles wait for the next collection.
    """
    global _pauses, _was_enabled
    with _pause_lock:
        if _pauses == 0:
            _was_enabled = gc.isenabled()
            gc.disable()
        _pauses += 1
    try:
        yield
    finally:
        with _pause_lock:
            _pauses -= 1
            if _pauses == 0 and _was_enabled:
                gc.enable()


@contextmanager
def lasting_build() -> Iterator[None]:
    """A build whose objects live as long as the process (a load): the collector is paused
    while it runs, as in `collector_paused`, and at its end what is alive is moved out of the
    collector's reach (`gc.freeze`) without being walked.

    Turned back on, the collector would first walk every object the load made (1.0 s at
    100,000 tools here, and a second full walk 0.7 s) to find a handful of cycles (20
    objects). What existed before is collected first, while the heap is small, so no garbage
    from before is frozen with it. Frozen objects are still freed by reference counting; only
    cycles among them stay until the process ends.
    """
    gc.collect()
    with collector_paused():
        yield
        gc.freeze()
