"""HTTP sessions per key: no key may hold more than its share of the bridge's sessions.

The MCP SDK caps sessions in all (`--max-sessions`) and reaps idle ones; this module counts
each key's sessions from the traffic the HTTP edge sees (a session opens with the response
that carries its `mcp-session-id`, and ends with a successful DELETE, a 404 for its id, or
`idle_seconds` with no request in flight, as the SDK reaps it), so one key cannot open every
session and leave the others a 503.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass


def owner_of(key: str) -> str:
    """Whose sessions a key's are: a digest of the whole key, so the key itself is never
    kept, and a key id with a wrong secret (which the registry refused anyway) is another
    owner."""
    return hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()[:32]


@dataclass
class _Session:
    owner: str
    in_flight: int
    last_seen: float


class SessionsPerKey:
    """Each owner's open sessions (and sessions being opened), at most `per_key` each."""

    def __init__(
        self, per_key: int, idle_seconds: float, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._per_key = per_key
        self._idle = idle_seconds
        self._clock = clock
        self._sessions: dict[str, _Session] = {}
        self._opening: dict[str, int] = {}
        self._lock = threading.Lock()

    @property
    def per_key(self) -> int:
        return self._per_key

    def reserve(self, owner: str) -> bool:
        """Holds a place for a session `owner` is opening; False when it has none left."""
        with self._lock:
            self._forget_idle()
            held = self._opening.get(owner, 0)
            held += sum(1 for s in self._sessions.values() if s.owner == owner)
            if held >= self._per_key:
                return False
            self._opening[owner] = self._opening.get(owner, 0) + 1
            return True

    def settle(self, owner: str, session_id: str | None) -> None:
        """The opening request has been answered: the session it opened (None: none)."""
        with self._lock:
            left = self._opening.get(owner, 1) - 1
            if left > 0:
                self._opening[owner] = left
            else:
                self._opening.pop(owner, None)
            if session_id is not None:
                self._sessions[session_id] = _Session(owner, 0, self._clock())

    def begin(self, session_id: str) -> None:
        """A request of a session is in flight: it is not idle meanwhile."""
        with self._lock:
            session = self._sessions.get(session_id)
            if session is not None:
                session.in_flight += 1

    def end(self, session_id: str, *, gone: bool) -> None:
        """A request of a session was answered; `gone` when the session no longer exists."""
        with self._lock:
            session = self._sessions.get(session_id)
            if session is None:
                return
            if gone:
                del self._sessions[session_id]
                return
            session.in_flight = max(session.in_flight - 1, 0)
            session.last_seen = self._clock()

    def _forget_idle(self) -> None:
        expired = self._clock() - self._idle
        for session_id in [
            key for key, s in self._sessions.items() if not s.in_flight and s.last_seen <= expired
        ]:
            del self._sessions[session_id]
