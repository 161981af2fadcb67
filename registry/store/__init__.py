"""Where catalogs live: SQLite for one node, PostgreSQL for replicas sharing one database,
behind one `Store` protocol.

The PostgreSQL store (and psycopg, 0.07 s of a start-up's imports) is imported when a
PostgreSQL store is opened or named, not by a node serving SQLite."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from registry.store.base import (
    Changes,
    SharedStore,
    StaleCatalog,
    Store,
    StoredCatalog,
    StoredTool,
    StoreError,
    ToolChanged,
    is_postgres,
)
from registry.store.sqlite import SCHEMA_VERSION, SqliteStore

if TYPE_CHECKING:
    from registry.store.postgres import PostgresStore

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
    "is_postgres",
    "open_store",
]


def __getattr__(name: str) -> Any:
    if name == "PostgresStore":
        from registry.store.postgres import PostgresStore

        return PostgresStore
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def open_store(location: str | Path) -> Store:
    """A PostgreSQL store for a `postgresql://` DSN, otherwise a SQLite file at that path."""
    if isinstance(location, str) and is_postgres(location):
        from registry.store.postgres import PostgresStore

        return PostgresStore(location)
    return SqliteStore(Path(location))
