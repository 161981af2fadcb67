"""What a start-up spends reading a store's vectors: `store.embeddings` of every document hash
stored under the store's model, the call `DocumentVectors.restore` makes when it loads.

Usage: python -m bench.stored_vectors --db STORE|DSN [--runs 3]

STORE is a SQLite store a bench made (`bench.memory`, `bench/registration_cost.py --keep`),
DSN a PostgreSQL copy of one (`bench.postgres_copy`);
the figure is the read alone, without the rest of the load (`bench/startup_cost.py` times
that). To set it against another commit, run that commit's copy of the tree on a copy of the
same store, alternately: `PYTHONPATH=OLD_TREE python OLD_TREE/bench/stored_vectors.py`.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import time
from typing import Any

import psycopg

from registry.store import is_postgres, open_store


def stored_hashes(db: str) -> tuple[str, list[str]]:
    """The model with the most stored vectors and every document hash stored under it."""
    postgres = is_postgres(db)
    mark = "%s" if postgres else "?"
    connection: Any = psycopg.connect(db) if postgres else sqlite3.connect(db)
    try:
        row = connection.execute(
            "SELECT model FROM embeddings GROUP BY model ORDER BY count(*) DESC LIMIT 1"
        ).fetchone()
        if row is None:
            raise SystemExit(f"{db} holds no embeddings")
        (model,) = row
        query = f"SELECT doc_hash FROM embeddings WHERE model={mark}"  # noqa: S608 -- a placeholder
        hashes = [str(h) for (h,) in connection.execute(query, (model,)).fetchall()]
    finally:
        connection.close()
    return str(model), hashes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--db", required=True, help="a SQLite store file or a PostgreSQL DSN")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    model, hashes = stored_hashes(args.db)
    store = open_store(args.db)
    try:
        for _ in range(args.runs):
            started = time.perf_counter()
            read = store.embeddings(model, hashes)
            seconds = time.perf_counter() - started
            print(json.dumps({"vectors": len(read), "read_s": round(seconds, 3)}), flush=True)
    finally:
        store.close()


if __name__ == "__main__":
    main()
