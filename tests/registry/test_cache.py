"""The TTL LRU cache and search cache keys.

A fake clock stands in for time.monotonic because TTL behaviour must be tested at exact
instants without sleeping.
"""

from __future__ import annotations

import threading

import pytest
from hypothesis import given
from hypothesis import strategies as st

from registry.cache import SearchCacheKey, TTLCache, normalise_query


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


def key(
    query: str = "send an invoice",
    *,
    visibility_class: str = "v1",
    generation: int = 1,
    catalogs: tuple[str, ...] = (),
    limit: int = 10,
    filters: tuple[tuple[str, str], ...] = (),
) -> SearchCacheKey:
    return SearchCacheKey(
        query=query,
        limit=limit,
        catalogs=catalogs,
        visibility_class=visibility_class,
        generation=generation,
        filters=filters,
    )


def test_a_stored_value_is_returned_and_counted_as_a_hit(clock: FakeClock) -> None:
    cache: TTLCache[str, int] = TTLCache(max_entries=4, ttl_seconds=60, clock=clock)
    cache.put("a", 1)
    assert cache.get("a") == 1
    assert (cache.hits, cache.misses) == (1, 0)


def test_an_absent_key_is_a_miss(clock: FakeClock) -> None:
    cache: TTLCache[str, int] = TTLCache(max_entries=4, ttl_seconds=60, clock=clock)
    assert cache.get("a") is None
    assert (cache.hits, cache.misses) == (0, 1)


def test_the_least_recently_used_entry_is_evicted_first(clock: FakeClock) -> None:
    cache: TTLCache[str, int] = TTLCache(max_entries=3, ttl_seconds=60, clock=clock)
    for i, name in enumerate("abc"):
        cache.put(name, i)
    cache.get("a")  # "b" is now the least recently used
    cache.put("d", 3)
    assert cache.get("b") is None
    assert [cache.get(name) for name in "acd"] == [0, 2, 3]
    assert len(cache) == 3


def test_eviction_follows_insertion_order_when_nothing_is_read(clock: FakeClock) -> None:
    cache: TTLCache[int, int] = TTLCache(max_entries=2, ttl_seconds=60, clock=clock)
    for i in range(5):
        cache.put(i, i)
    assert [cache.get(i) for i in range(5)] == [None, None, None, 3, 4]


def test_putting_an_existing_key_replaces_it_and_makes_it_most_recent(clock: FakeClock) -> None:
    cache: TTLCache[str, int] = TTLCache(max_entries=2, ttl_seconds=60, clock=clock)
    cache.put("a", 1)
    cache.put("b", 2)
    cache.put("a", 10)
    cache.put("c", 3)
    assert cache.get("a") == 10
    assert cache.get("b") is None


def test_an_entry_is_served_until_its_ttl_and_never_after(clock: FakeClock) -> None:
    cache: TTLCache[str, int] = TTLCache(max_entries=4, ttl_seconds=30, clock=clock)
    cache.put("a", 1)
    clock.now += 29.999
    assert cache.get("a") == 1
    clock.now += 0.001
    assert cache.get("a") is None
    assert len(cache) == 0


def test_reading_an_entry_does_not_extend_its_ttl(clock: FakeClock) -> None:
    cache: TTLCache[str, int] = TTLCache(max_entries=4, ttl_seconds=30, clock=clock)
    cache.put("a", 1)
    clock.now += 20
    assert cache.get("a") == 1
    clock.now += 20
    assert cache.get("a") is None


def test_putting_again_restarts_the_ttl(clock: FakeClock) -> None:
    cache: TTLCache[str, int] = TTLCache(max_entries=4, ttl_seconds=30, clock=clock)
    cache.put("a", 1)
    clock.now += 20
    cache.put("a", 2)
    clock.now += 20
    assert cache.get("a") == 2


def test_len_counts_only_live_entries(clock: FakeClock) -> None:
    cache: TTLCache[str, int] = TTLCache(max_entries=4, ttl_seconds=30, clock=clock)
    cache.put("old", 1)
    clock.now += 20
    cache.put("new", 2)
    assert len(cache) == 2
    clock.now += 15
    assert len(cache) == 1
    assert cache.get("new") == 2


@pytest.mark.parametrize(("max_entries", "ttl"), [(0, 60.0), (-1, 60.0), (8, 0.0), (8, -5.0)])
def test_a_cache_without_room_or_lifetime_stores_nothing(
    clock: FakeClock, max_entries: int, ttl: float
) -> None:
    cache: TTLCache[str, int] = TTLCache(max_entries=max_entries, ttl_seconds=ttl, clock=clock)
    cache.put("a", 1)
    assert not cache.enabled
    assert cache.get("a") is None
    assert len(cache) == 0
    assert cache.misses == 1


def test_a_nan_ttl_is_refused() -> None:
    with pytest.raises(ValueError, match="NaN"):
        TTLCache[str, int](max_entries=4, ttl_seconds=float("nan"))


def test_clear_drops_entries_but_keeps_counters(clock: FakeClock) -> None:
    cache: TTLCache[str, int] = TTLCache(max_entries=4, ttl_seconds=60, clock=clock)
    cache.put("a", 1)
    cache.get("a")
    cache.clear()
    assert len(cache) == 0
    assert cache.get("a") is None
    assert (cache.hits, cache.misses) == (1, 1)


def test_the_default_clock_is_monotonic_time() -> None:
    cache: TTLCache[str, int] = TTLCache(max_entries=4, ttl_seconds=3600)
    cache.put("a", 1)
    assert cache.get("a") == 1


def test_concurrent_use_keeps_the_bound_and_the_counters_exact(clock: FakeClock) -> None:
    cache: TTLCache[int, int] = TTLCache(max_entries=16, ttl_seconds=60, clock=clock)
    rounds, threads = 2000, 8

    def work(offset: int) -> None:
        for i in range(rounds):
            cache.put((i + offset) % 50, i)
            cache.get((i * 7 + offset) % 50)

    workers = [threading.Thread(target=work, args=(n,)) for n in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=30)
    assert not any(worker.is_alive() for worker in workers)
    assert len(cache) <= 16
    assert cache.hits + cache.misses == rounds * threads


@given(
    st.lists(st.tuples(st.booleans(), st.integers(0, 9), st.floats(0, 20)), max_size=60),
    st.integers(1, 5),
)
def test_expired_entries_are_never_returned_and_the_bound_always_holds(
    ops: list[tuple[bool, int, float]], max_entries: int
) -> None:
    clock = FakeClock()
    ttl = 10.0
    cache: TTLCache[int, float] = TTLCache(max_entries=max_entries, ttl_seconds=ttl, clock=clock)
    for is_put, k, advance in ops:
        clock.now += advance
        if is_put:
            # The value is its own store time, so a returned value shows its age.
            cache.put(k, clock.now)
        else:
            stored_at = cache.get(k)
            assert stored_at is None or clock.now - stored_at < ttl
        assert len(cache) <= max_entries


# Written as escapes: fullwidth letters look like ASCII in an editor, which is the point.
FULLWIDTH_SEND_INVOICE = (
    "\N{FULLWIDTH LATIN CAPITAL LETTER S}\N{FULLWIDTH LATIN CAPITAL LETTER E}"
    "\N{FULLWIDTH LATIN CAPITAL LETTER N}\N{FULLWIDTH LATIN CAPITAL LETTER D}"
    "\N{IDEOGRAPHIC SPACE}"
    "\N{FULLWIDTH LATIN CAPITAL LETTER I}\N{FULLWIDTH LATIN CAPITAL LETTER N}"
    "\N{FULLWIDTH LATIN CAPITAL LETTER V}\N{FULLWIDTH LATIN CAPITAL LETTER O}"
    "\N{FULLWIDTH LATIN CAPITAL LETTER I}\N{FULLWIDTH LATIN CAPITAL LETTER C}"
    "\N{FULLWIDTH LATIN CAPITAL LETTER E}"
)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("  Send   an\tInvoice\n", "send an invoice"),
        (FULLWIDTH_SEND_INVOICE, "send invoice"),
        ("Stra\N{LATIN SMALL LETTER SHARP S}e", "strasse"),
        ("\N{LATIN SMALL LIGATURE FI}le upload", "file upload"),
        ("", ""),
        ("   ", ""),
    ],
)
def test_queries_are_normalised_for_caching(raw: str, expected: str) -> None:
    assert normalise_query(raw) == expected


@given(st.text())
def test_normalising_a_query_twice_changes_nothing(text: str) -> None:
    once = normalise_query(text)
    assert normalise_query(once) == once


def test_cache_keys_are_canonical_in_query_catalogs_and_filters() -> None:
    a = key("Send  Invoice", catalogs=("hr", "finance", "hr"), filters=(("b", "2"), ("a", "1")))
    b = key("send invoice", catalogs=("finance", "hr"), filters=(("a", "1"), ("b", "2")))
    assert a == b
    assert hash(a) == hash(b)
    assert a.query == "send invoice"
    assert a.catalogs == ("finance", "hr")
    assert a.filters == (("a", "1"), ("b", "2"))


def test_cache_keys_differ_by_limit_catalogs_and_filters() -> None:
    base = key()
    assert base != key(limit=5)
    assert base != key(catalogs=("finance",))
    assert base != key(filters=(("category", "billing"),))


@given(
    st.text(max_size=20),
    st.text(min_size=1, max_size=8),
    st.text(min_size=1, max_size=8),
    st.integers(0, 3),
    st.integers(0, 3),
)
def test_keys_for_different_visibility_classes_or_generations_never_collide(
    query: str, class_a: str, class_b: str, generation_a: int, generation_b: int
) -> None:
    a = key(query, visibility_class=class_a, generation=generation_a)
    b = key(query, visibility_class=class_b, generation=generation_b)
    if (class_a, generation_a) == (class_b, generation_b):
        assert a == b
        return
    assert a != b
    cache: TTLCache[SearchCacheKey, str] = TTLCache(max_entries=8, ttl_seconds=60)
    cache.put(a, "results for a")
    assert cache.get(b) is None
    cache.put(b, "results for b")
    assert cache.get(a) == "results for a"
    assert cache.get(b) == "results for b"
