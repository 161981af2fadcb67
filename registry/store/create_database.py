"""Creates the PostgreSQL database a DSN names when it does not exist (`make cluster`).

Usage: python -m registry.store.create_database postgresql://USER@HOST:PORT/DB
"""

from __future__ import annotations

import sys

import psycopg
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo


def create_database(dsn: str) -> bool:
    """Creates the DSN's database through the server's `postgres` database; True if new."""
    name = conninfo_to_dict(dsn).get("dbname")
    if not name:
        raise ValueError(f"{dsn}: names no database")
    with psycopg.connect(make_conninfo(dsn, dbname="postgres"), autocommit=True) as admin:
        exists = admin.execute("SELECT 1 FROM pg_database WHERE datname=%s", (name,)).fetchone()
        if exists:
            return False
        admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(str(name))))
        return True


if __name__ == "__main__":
    created = create_database(sys.argv[1])
    print(
        ("created" if created else "found") + f" database {conninfo_to_dict(sys.argv[1])['dbname']}"
    )
