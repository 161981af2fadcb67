"""Where catalogs live: SQLite for one node, PostgreSQL for replicas sharing one database,
behind one `Store` protocol."""

from __future__ import annotations

from pathlib import Path

from registry.store.base import (
    Changes,
    SharedStore,
    StaleCatalog,
    Store,
    StoredCatalog,
    StoredTool,
    StoreError,
    ToolChanged,
)
from registry.store.postgres import PostgresStore, is_postgres
from registry.store.sqlite import SCHEMA_VERSION, SqliteStore

__all__ = [
    "SCHEMA_VERSION",
    "Changes",
    "PostgresStore",
    "SharedStore",
    "SqliteStore",
    "StaleCatalog",
    "Store",
    "StoreError",
    "StoredCatalog",
    "StoredTool",
    "ToolChanged",
    "open_store",
]


def open_store(location: str | Path) -> Store:
    """A PostgreSQL store for a `postgresql://` DSN, otherwise a SQLite file at that path."""
    if isinstance(location, str) and is_postgres(location):
        return PostgresStore(location)
    return SqliteStore(Path(location))
