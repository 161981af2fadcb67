"""Sessions per key: a key's share, freed when a session ends, a 404 shows it gone, or it
idles out as the SDK reaps it."""

from __future__ import annotations

from mcp_bridge.sessions import SessionsPerKey, owner_of


class Clock:
    """Reason for the fake: sessions idle out after seconds of wall time."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_key_holds_at_most_its_share_and_others_are_unaffected() -> None:
    sessions = SessionsPerKey(per_key=2, idle_seconds=60.0, clock=Clock())
    for session_id in ("a", "b"):
        assert sessions.reserve("id 1")
        sessions.settle("id 1", session_id)
    assert not sessions.reserve("id 1")
    assert sessions.reserve("id 2")


def test_an_opening_that_failed_gives_its_place_back() -> None:
    sessions = SessionsPerKey(per_key=1, idle_seconds=60.0, clock=Clock())
    assert sessions.reserve("id 1")
    assert not sessions.reserve("id 1")  # the place is held while the session opens
    sessions.settle("id 1", None)
    assert sessions.reserve("id 1")


def test_ended_gone_and_idle_sessions_free_their_place() -> None:
    clock = Clock()
    sessions = SessionsPerKey(per_key=1, idle_seconds=60.0, clock=clock)
    assert sessions.reserve("k")
    sessions.settle("k", "s1")
    sessions.begin("s1")
    sessions.end("s1", gone=True)  # a DELETE, or a 404 for its id
    assert sessions.reserve("k")
    sessions.settle("k", "s2")
    sessions.begin("s2")  # a long request in flight: never idle meanwhile
    clock.now += 600
    assert not sessions.reserve("k")
    sessions.end("s2", gone=False)
    clock.now += 59
    assert not sessions.reserve("k")
    clock.now += 1
    assert sessions.reserve("k")


def test_a_key_is_known_by_a_digest_never_its_secret() -> None:
    key = "capreg_0123abcd_secretpart"
    assert owner_of(key) == owner_of(key)
    assert "secret" not in owner_of(key)
    assert owner_of("capreg_0123abcd_otherpart") != owner_of(key)
