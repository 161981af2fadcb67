"""API keys kept in the shared PostgreSQL store, for a cluster of replicas.

The document is the one a keys file holds (principals, scopes, key ids and hashes, never a
secret); `capreg keys add/list/revoke --db DSN` edit it in one transaction, and every replica
reloads it when its version changes, checked at most once a second: an added or revoked key
takes effect on every replica within that second.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable
from typing import TYPE_CHECKING

from registry.auth.keys import (
    KeyFileError,
    PrincipalInfo,
    Revocation,
    authenticate_in,
    index_of,
    parse,
    principals_of,
    render,
    with_new_key,
    without,
)
from registry.auth.scopes import Principal

if TYPE_CHECKING:
    from registry.store.postgres import PostgresStore

logger = logging.getLogger(__name__)


class SharedKeys:
    """Authenticates against the keys document of a shared store, following its changes."""

    def __init__(self, store: PostgresStore) -> None:
        self._store = store
        self._version = -1
        self._index: dict[str, tuple[bytes, Principal]] = {}
        self._lock = threading.Lock()
        self.reload_if_changed()

    @property
    def path(self) -> str:
        """Where the keys live (for logs)."""
        return f"{self._store.location} (table capreg_keys)"

    def authenticate(self, key: str) -> Principal | None:
        with self._lock:
            index = self._index
        return authenticate_in(index, key)

    def reload_if_changed(self) -> bool:
        """Re-reads the document when its version moved; a broken one keeps the previous keys."""
        try:
            if self._store.keys_version() == self._version:
                return False
            text, version = self._store.keys_document()
            index = index_of(parse(text, self.path))
        except KeyFileError as exc:
            logger.error("keeping previous keys: %s", exc)
            return False
        except Exception:  # the database away: keep serving with the keys we have
            logger.exception("cannot read the keys from %s, keeping previous keys", self.path)
            return False
        with self._lock:
            self._index = index
            self._version = version
        logger.info("loaded the keys of %s: %d keys", self.path, len(index))
        return True


def add_key(store: PostgresStore, name: str, scopes: Iterable[str] | None = None) -> str:
    """Issues a key for `name` in the shared store; returns it once (only its hash is kept)."""
    issued: list[str] = []

    def change(document: str) -> str:
        records, key = with_new_key(parse(document, store.location), name, scopes)
        issued.append(key)
        return render(records)

    store.update_keys(change)
    return issued[0]


def list_principals(store: PostgresStore) -> list[PrincipalInfo]:
    return principals_of(parse(store.keys_document()[0], store.location))


def revoke(store: PostgresStore, name_or_key_id: str) -> Revocation:
    done: list[Revocation] = []

    def change(document: str) -> str:
        records, revocation = without(
            parse(document, store.location), name_or_key_id, store.location
        )
        done.append(revocation)
        return render(records)

    store.update_keys(change)
    return done[0]
