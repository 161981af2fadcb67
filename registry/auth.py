"""Who is calling: bearer API keys from gRPC metadata, resolved to principals and grants."""

from __future__ import annotations

import time
from collections.abc import Iterable

from registry.errors import PermissionDenied, Unauthenticated
from registry.keys import KeyStore
from registry.scopes import ADMIN_SCOPE, Grants, Principal
from registry.wire import bearer_key

# Without a keys file (loopback only), every caller is this local administrator.
LOCAL_ADMIN = Principal("local", Grants.parse(["*"]))
RELOAD_INTERVAL_SECONDS = 1.0


class Authenticator:
    """Maps request metadata to a principal; follows edits to the keys file."""

    def __init__(
        self, keys: KeyStore | None, *, reload_interval: float = RELOAD_INTERVAL_SECONDS
    ) -> None:
        self._keys = keys
        self._reload_interval = reload_interval
        self._next_reload = 0.0

    @property
    def open(self) -> bool:
        """True when no keys file is configured (local development mode)."""
        return self._keys is None

    def principal(self, metadata: Iterable[tuple[str, str | bytes]]) -> Principal:
        if self._keys is None:
            return LOCAL_ADMIN
        now = time.monotonic()
        if now >= self._next_reload:
            # A stat call at most once a second picks up `capreg keys` edits without restart.
            self._next_reload = now + self._reload_interval
            self._keys.reload_if_changed()
        key = bearer_key(metadata)
        if key is None:
            raise Unauthenticated(
                "missing credentials: send 'authorization: Bearer <key>' "
                "(the CLI reads --api-key or CAPREG_API_KEY)"
            )
        principal = self._keys.authenticate(key)
        if principal is None:
            raise Unauthenticated("unknown or revoked API key")
        return principal


def require_admin(principal: Principal) -> None:
    if not principal.can_administer:
        raise PermissionDenied(
            f"'{principal.name}' lacks the '{ADMIN_SCOPE}' scope needed to change catalogs"
        )
