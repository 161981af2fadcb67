"""Hands the allocator's free pages back to the system after a bulk build.

Loading a store parses every tool and builds the first snapshot: the parse's temporaries are
freed, but glibc keeps the pages, and the process' resident size stays at its peak (about
1.5 KB a tool more at 30,000 tools). `malloc_trim` returns them. Elsewhere (another libc,
another system) this does nothing.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
from collections.abc import Callable


@functools.cache
def _trim() -> Callable[[int], int] | None:
    name = ctypes.util.find_library("c")
    if name is None:
        return None
    try:
        return ctypes.CDLL(name).malloc_trim
    except (OSError, AttributeError):
        return None


def release_free_memory() -> bool:
    """Returns freed heap pages to the system; False where the C library cannot."""
    trim = _trim()
    if trim is None:
        return False
    trim(0)
    return True
