"""Search result cache: a bounded TTL LRU, and the key that makes a cached result safe to reuse."""

from __future__ import annotations

import math
import threading
import time
import unicodedata
from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class TTLCache(Generic[K, V]):
    """A thread-safe LRU of at most `max_entries` values, each living `ttl_seconds`.

    `max_entries <= 0` or `ttl_seconds <= 0` turns caching off: every get misses.
    """

    def __init__(
        self,
        max_entries: int,
        ttl_seconds: float,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if math.isnan(ttl_seconds):
            raise ValueError("ttl_seconds must be a number, not NaN")
        self._max_entries = max_entries
        self._ttl = ttl_seconds
        self._clock = clock
        self._enabled = max_entries > 0 and ttl_seconds > 0
        # Values are (expiry time, value); order is recency, oldest first.
        self._entries: OrderedDict[K, tuple[float, V]] = OrderedDict()
        self._lock = threading.Lock()
        self._hits = 0
        self._misses = 0

    @property
    def enabled(self) -> bool:
        return self._enabled

    @property
    def hits(self) -> int:
        with self._lock:
            return self._hits

    @property
    def misses(self) -> int:
        with self._lock:
            return self._misses

    def get(self, key: K) -> V | None:
        """The live value for `key`, marking it most recently used; None if absent or expired."""
        with self._lock:
            entry = self._entries.get(key)
            if entry is not None and self._clock() < entry[0]:
                self._entries.move_to_end(key)
                self._hits += 1
                return entry[1]
            if entry is not None:
                del self._entries[key]
            self._misses += 1
            return None

    def put(self, key: K, value: V) -> None:
        """Store `value` for a fresh TTL, evicting the least recently used entry when full."""
        if not self._enabled:
            return
        with self._lock:
            self._entries[key] = (self._clock() + self._ttl, value)
            self._entries.move_to_end(key)
            while len(self._entries) > self._max_entries:
                self._entries.popitem(last=False)

    def clear(self) -> None:
        """Drop every entry (e.g. after an index swap); counters are kept for metrics."""
        with self._lock:
            self._entries.clear()

    def __len__(self) -> int:
        """The number of live entries; expired ones are dropped on the way."""
        with self._lock:
            now = self._clock()
            for key in [k for k, (expires, _) in self._entries.items() if expires <= now]:
                del self._entries[key]
            return len(self._entries)


def normalise_query(text: str) -> str:
    """Fold a query so trivially different spellings share one cache entry."""
    # NFKC again after casefold: casefolding can produce sequences NFKC would rewrite,
    # and the result must be a fixed point so normalising twice changes nothing.
    folded = unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", text).casefold())
    return " ".join(folded.split())


@dataclass(kw_only=True, frozen=True)
class SearchCacheKey:
    """Everything a search result depends on; fields are canonicalised on construction.

    `visibility_class` keeps callers with different grants apart, and `generation` makes
    results from a replaced index unreachable without having to find and purge them.
    """

    query: str
    limit: int
    catalogs: tuple[str, ...]
    visibility_class: str
    generation: int
    filters: tuple[tuple[str, str], ...] = ()

    def __post_init__(self) -> None:
        # A catalog filter is a set, and filters are named pairs: order must not split entries.
        object.__setattr__(self, "query", normalise_query(self.query))
        object.__setattr__(self, "catalogs", tuple(sorted(set(self.catalogs))))
        object.__setattr__(self, "filters", tuple(sorted(set(self.filters))))
