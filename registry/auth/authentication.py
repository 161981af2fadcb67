"""Who is calling: bearer API keys from gRPC metadata, resolved to principals and grants.

Failed attempts are logged (peer and key id, never the secret) and throttled per peer host and
per claimed key id: once `max_failures` attempts from one host, or naming one key id, fail
within `failure_window` seconds, further wrong keys are refused with RESOURCE_EXHAUSTED until
the window has passed. A correct secret is always let through: behind a proxy or the MCP bridge
one host is every user, and key ids are not secret, so a throttle that refused valid keys would
let anyone lock anyone out.
"""

from __future__ import annotations

import hashlib
import logging
import threading
import time
from collections import OrderedDict, deque
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
# Hosts and claimed key ids tracked at once; the least recently failing is forgotten first
# (bounded memory under a spray).
MAX_TRACKED = 20_000


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
    """Maps request metadata to a principal; follows edits to the keys file.

    `peer` is the caller's address in gRPC's form ('ipv4:HOST:PORT'); a transport that sits
    behind a trusted proxy passes the client's address it has established, never a header
    value it has not checked.
    """

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
        # "peer:<host>" and "key:<id>" -> times of their recent failures.
        self._failures: OrderedDict[str, deque[float]] = OrderedDict()
        self._failures_lock = threading.Lock()

    @property
    def open(self) -> bool:
        """True when no keys file is configured (local development mode)."""
        return self._keys is None

    def caller(self, metadata: Iterable[tuple[str, str | bytes]], peer: str) -> str:
        """Whom admission charges a call to: 'key:<id>' once the key's secret verifies, else
        'peer:<host>' (no key, a wrong secret, or no keys file to verify against). Knowing a
        key id is not enough to spend that key's budget. Nothing is logged or throttled here:
        the handler's `principal` does that once per call."""
        keys = self._current_keys()
        if keys is not None:
            key = bearer_key(metadata)
            if key is not None and keys.authenticate(key) is not None:
                return f"key:{key_id_of(key)}"
        return "peer:" + peer_host(peer)

    def principal(self, metadata: Iterable[tuple[str, str | bytes]], peer: str = "") -> Principal:
        keys = self._current_keys()
        if keys is None:
            return LOCAL_ADMIN
        key = bearer_key(metadata)
        principal = keys.authenticate(key) if key is not None else None
        if principal is not None:
            return principal
        host = peer_host(peer) if peer else "unknown peer"
        claimed = key_id_of(key) if key is not None else None
        now = self._clock()
        self._refuse_if_throttled(host, claimed, now)
        self._failed(host, claimed, now, "no key" if key is None else _key_label(key))
        if key is None:
            raise Unauthenticated(
                "missing credentials: send 'authorization: Bearer <key>' "
                "(the CLI reads --api-key or CAPREG_API_KEY)"
            )
        raise Unauthenticated("unknown or revoked API key")

    def _current_keys(self) -> KeySource | None:
        keys = self._keys
        if keys is not None:
            now = self._clock()
            if now >= self._next_reload:
                # A stat call at most once a second picks up `capreg keys` edits without restart.
                self._next_reload = now + self._reload_interval
                keys.reload_if_changed()
        return keys

    def _recent(self, subject: str, now: float) -> deque[float]:
        recent = self._failures.get(subject)
        if recent is None:
            recent = self._failures[subject] = deque()
            if len(self._failures) > MAX_TRACKED:
                self._failures.popitem(last=False)
        while recent and recent[0] <= now - self._failure_window:
            recent.popleft()
        return recent

    def _refuse_if_throttled(self, host: str, claimed: str | None, now: float) -> None:
        subjects = [("from this address", f"peer:{host}")]
        if claimed is not None:
            subjects.append(("for this key id", f"key:{claimed}"))
        with self._failures_lock:
            waits = [
                (recent[0] + self._failure_window - now, what)
                for what, subject in subjects
                if subject in self._failures
                and len(recent := self._recent(subject, now)) >= self._max_failures
            ]
        if waits:
            retry, what = max(waits)
            raise Overloaded(
                f"too many failed authentications {what}; retry in {retry:.0f}s",
                retry_after=max(retry, 0.0),
            )

    def _failed(self, host: str, claimed: str | None, now: float, what: str) -> None:
        subjects = [f"peer:{host}", *([f"key:{claimed}"] if claimed is not None else [])]
        with self._failures_lock:
            counts = []
            for subject in subjects:
                recent = self._recent(subject, now)
                recent.append(now)
                self._failures.move_to_end(subject)
                counts.append(len(recent))
        if max(counts) <= self._max_failures:
            logger.warning("authentication failed from %s (%s)", host, what)
            audit("auth_failure", peer=host, key=what)
        for subject, count in zip(subjects, counts, strict=True):
            if count == self._max_failures:
                logger.warning(
                    "throttling wrong keys %s: %d failed authentications in %.0fs",
                    subject,
                    count,
                    self._failure_window,
                )


def require_admin(principal: Principal) -> None:
    if not principal.can_administer:
        raise PermissionDenied(
            f"'{principal.name}' lacks the '{ADMIN_SCOPE}' scope needed to change catalogs"
        )
