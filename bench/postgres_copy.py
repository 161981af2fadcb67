"""A SQLite store copied into a new PostgreSQL database, so replica start-ups can be measured
on the same catalogs and vectors as the SQLite node's.

Usage: python -m bench.postgres_copy --db STORE --name DATABASE [--server postgresql://...]

Drops DATABASE if it exists, creates it with the store's schema and copies every table a
start-up reads (catalogs with their images, tools, vectors, the IVF partition and lists), so
a replica starting on it derives, trains and embeds nothing, as the SQLite node does not.
Prints the DSN, for `bench/startup_cost.py --db DSN`.
"""

from __future__ import annotations

import argparse
import sqlite3
from pathlib import Path

import psycopg
from psycopg import sql

from registry.store import PostgresStore

EMBEDDINGS = {
    "embeddings": ["model", "doc_hash", "vector"],
    "partitions": ["model", "trained_on", "dimension", "centroids"],
}
EVERYTHING = {
    "catalogs": [
        "name",
        "title",
        "description",
        "version",
        "format",
        "default_scopes",
        "revision",
        "updated_at",
        "source_digest",
        "workflows",
        # The catalog's image (decision 0077): without it a replica derives every catalog's
        # texts and tokens again, which no store written by this version makes it do.
        "image",
        "incarnation",
    ],
    "tools": ["catalog", "name", "position", "data", "function_name", "revision"],
    **EMBEDDINGS,
    # Each vector's IVF list (decision 0088): without them a replica assigns every one again.
    "ivf_lists": ["model", "partition", "doc_hashes", "lists"],
}


def fresh_database(server: str, name: str) -> str:
    """A new, empty store named `name` on `server` (any of that name dropped first)."""
    with psycopg.connect(f"{server}/postgres", autocommit=True) as admin:
        admin.execute(
            sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
        )
        admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    dsn = f"{server}/{name}"
    PostgresStore(dsn).close()  # the schema
    return dsn


def copy_tables(dsn: str, source: Path, tables: dict[str, list[str]]) -> int:
    """Copies rows of SQLite `source` into the PostgreSQL store at `dsn`; returns tools."""
    db = sqlite3.connect(source)
    with psycopg.connect(dsn) as conn:
        for table, columns in tables.items():
            rows = db.execute(f"SELECT {', '.join(columns)} FROM {table}")  # noqa: S608 -- fixed names
            statement = sql.SQL("COPY {} ({}) FROM STDIN").format(
                sql.Identifier(table), sql.SQL(", ").join(map(sql.Identifier, columns))
            )
            with conn.cursor() as cursor, cursor.copy(statement) as copy:
                for row in rows:
                    copy.write_row(row)
        if "catalogs" in tables:
            generation = db.execute("SELECT value FROM meta WHERE key='generation'").fetchone()
            conn.execute("UPDATE capreg_meta SET value=%s WHERE key='generation'", (generation[0],))
            conn.execute("UPDATE catalogs SET generation=%s", (int(generation[0]),))
        tools = conn.execute("SELECT count(*) FROM tools").fetchone()
        conn.execute("ANALYZE")
    db.close()
    return int(tools[0]) if tools else 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--db", type=Path, required=True, help="the SQLite store to copy")
    parser.add_argument("--name", required=True, help="the PostgreSQL database to (re)create")
    parser.add_argument("--server", default="postgresql://postgres@127.0.0.1:5432")
    args = parser.parse_args()
    dsn = fresh_database(args.server, args.name)
    tools = copy_tables(dsn, args.db, EVERYTHING)
    print(f"{dsn} ({tools} tools)")


if __name__ == "__main__":
    main()
