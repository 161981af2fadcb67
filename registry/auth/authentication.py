"""Who is calling: bearer API keys from gRPC metadata, resolved to principals and grants.

Failed attempts are logged (peer and key id, never the secret) and throttled per peer host: a
peer that fails `max_failures` times within `failure_window` seconds is refused without its
key being checked until the window has passed.
"""

from __future__ import annotations

import hashlib
import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from typing import Protocol

from registry.auth.keys import key_id_of
from registry.auth.scopes import ADMIN_SCOPE, Grants, Principal
from registry.errors import Overloaded, PermissionDenied, Unauthenticated
from registry.logs import audit
from registry.wire import bearer_key

logger = logging.getLogger(__name__)

# Without a keys file (loopback only), every caller is this local administrator.
LOCAL_ADMIN = Principal("local", Grants.parse(["*"]))
RELOAD_INTERVAL_SECONDS = 1.0
MAX_FAILURES = 20
FAILURE_WINDOW_SECONDS = 10.0
# Peers tracked at once; the oldest is forgotten first (bounded memory under a spray).
MAX_TRACKED_PEERS = 10_000


def peer_host(peer: str) -> str:
    """The host of a gRPC peer string ('ipv4:127.0.0.1:5000', 'ipv6:[::1]:5000')."""
    _, _, address = peer.partition(":")
    host = address.rpartition(":")[0] if address.count(":") else address
    return host.strip("[]") or peer


def _key_label(key: str) -> str:
    """What the log may say about a presented key: its id part, or a short hash."""
    key_id = key_id_of(key)
    if key_id is not None:
        return f"id {key_id}"
    return "hash " + hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()[:12]


class KeySource(Protocol):
    """Where keys come from: a keys file (KeyStore) or a shared store (SharedKeys)."""

    @property
    def path(self) -> object: ...

    def authenticate(self, key: str) -> Principal | None: ...

    def reload_if_changed(self) -> bool: ...


class Authenticator:
    """Maps request metadata to a principal; follows edits to the keys file."""

    def __init__(
        self,
        keys: KeySource | None,
        *,
        reload_interval: float = RELOAD_INTERVAL_SECONDS,
        max_failures: int = MAX_FAILURES,
        failure_window: float = FAILURE_WINDOW_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._keys = keys
        self._reload_interval = reload_interval
        self._next_reload = 0.0
        self._max_failures = max_failures
        self._failure_window = failure_window
        self._clock = clock
        self._failures: dict[str, deque[float]] = {}
        self._failures_lock = threading.Lock()

    @property
    def open(self) -> bool:
        """True when no keys file is configured (local development mode)."""
        return self._keys is None

    def principal(self, metadata: Iterable[tuple[str, str | bytes]], peer: str = "") -> Principal:
        if self._keys is None:
            return LOCAL_ADMIN
        host = peer_host(peer) if peer else "unknown peer"
        now = self._clock()
        self._refuse_if_throttled(host, now)
        if now >= self._next_reload:
            # A stat call at most once a second picks up `capreg keys` edits without restart.
            self._next_reload = now + self._reload_interval
            self._keys.reload_if_changed()
        key = bearer_key(metadata)
        if key is None:
            self._failed(host, now, "no key")
            raise Unauthenticated(
                "missing credentials: send 'authorization: Bearer <key>' "
                "(the CLI reads --api-key or CAPREG_API_KEY)"
            )
        principal = self._keys.authenticate(key)
        if principal is None:
            self._failed(host, now, _key_label(key))
            raise Unauthenticated("unknown or revoked API key")
        return principal

    def _recent(self, host: str, now: float) -> deque[float]:
        recent = self._failures.setdefault(host, deque())
        while recent and recent[0] <= now - self._failure_window:
            recent.popleft()
        return recent

    def _refuse_if_throttled(self, host: str, now: float) -> None:
        with self._failures_lock:
            if host not in self._failures:
                return
            recent = self._recent(host, now)
            if len(recent) < self._max_failures:
                return
            retry = recent[0] + self._failure_window - now
        raise Overloaded(
            f"too many failed authentications from this address; retry in {retry:.0f}s",
            retry_after=max(retry, 0.0),
        )

    def _failed(self, host: str, now: float, what: str) -> None:
        with self._failures_lock:
            if host not in self._failures and len(self._failures) >= MAX_TRACKED_PEERS:
                del self._failures[next(iter(self._failures))]
            recent = self._recent(host, now)
            recent.append(now)
            count = len(recent)
        if count <= self._max_failures:
            logger.warning("authentication failed from %s (%s)", host, what)
            audit("auth_failure", peer=host, key=what)
        if count == self._max_failures:
            logger.warning(
                "throttling %s: %d failed authentications in %.0fs",
                host,
                count,
                self._failure_window,
            )


def require_admin(principal: Principal) -> None:
    if not principal.can_administer:
        raise PermissionDenied(
            f"'{principal.name}' lacks the '{ADMIN_SCOPE}' scope needed to change catalogs"
        )
