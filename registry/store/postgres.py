"""PostgreSQL storage: the same records as the SQLite store, for replicas that share one
database (psycopg 3 with its connection pool).

Every change is one transaction, serialised per catalog by an advisory lock and globally by
the generation row, so two writers on one catalog end with one whole version. The write that
bumps the generation also NOTIFYs it on `capreg_generation`. Migrations run at start-up under
an advisory lock: replicas starting together migrate once.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import UTC, datetime

import numpy as np
import psycopg
from numpy.typing import NDArray
from psycopg.conninfo import conninfo_to_dict
from psycopg_pool import ConnectionPool

from indexer.model import Catalog
from registry.store.base import (
    Changes,
    StoredCatalog,
    StoredTool,
    StoreError,
    check_replaced,
    ivf_lists_of,
    ivf_lists_row,
    reads_most,
    stored_catalogs,
    tool_to_json,
    workflows_to_json,
)
from registry.store.postgres_schema import MIGRATIONS, SCHEMA_VERSION

logger = logging.getLogger(__name__)
NOTIFY_CHANNEL = "capreg_generation"
# Advisory lock keys (two 32-bit ints: capreg's namespace, then the purpose).
_LOCK_SPACE = 0x0CA9
_MIGRATE = 1
_EMBEDDINGS_CHUNK = 5_000


def describe(dsn: str) -> str:
    """The DSN without its password (for logs)."""
    parts = conninfo_to_dict(dsn)
    return (
        f"postgresql://{parts.get('user', '')}@{parts.get('host', '')}:{parts.get('port', '')}"
        f"/{parts.get('dbname', '')}"
    )


class PostgresStore:
    """Catalogs, tools, embeddings, partitions and the generation in one PostgreSQL database."""

    def __init__(self, dsn: str, *, pool_size: int = 4, timeout: float = 30.0) -> None:
        """Opens a pool of up to `pool_size` connections, waiting up to `timeout` seconds for
        the first, and brings the schema up to date."""
        self.location = describe(dsn)
        self._dsn = dsn
        # The connection that LISTENs for other replicas' changes (opened on first wait).
        self._listener: psycopg.Connection[tuple[object, ...]] | None = None
        self._pool = ConnectionPool(
            dsn,
            min_size=1,
            max_size=pool_size,
            open=False,
            timeout=timeout,
            name="capreg-store",
            # A connection the server dropped (a restart) is replaced before it is used.
            check=ConnectionPool.check_connection,
        )
        try:
            self._pool.open(wait=True, timeout=timeout)
            self._migrate()
        except psycopg.Error as exc:  # PoolTimeout is one: the server never answered
            self._pool.close()
            raise StoreError(f"cannot open {self.location}: {exc}") from exc
        except BaseException:
            self._pool.close()
            raise

    def _migrate(self) -> None:
        with self._pool.connection() as conn, conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s, %s)", (_LOCK_SPACE, _MIGRATE))
            conn.execute("CREATE TABLE IF NOT EXISTS capreg_schema (version INTEGER NOT NULL)")
            row = conn.execute("SELECT version FROM capreg_schema").fetchone()
            version = int(row[0]) if row else 0
            if version > SCHEMA_VERSION:
                raise StoreError(
                    f"{self.location} has schema version {version}, newer than this capreg's "
                    f"{SCHEMA_VERSION}: run a newer capreg against it"
                )
            for step in range(version + 1, SCHEMA_VERSION + 1):
                for statement in MIGRATIONS[step]:
                    conn.execute(statement)
            if row is None:
                conn.execute("INSERT INTO capreg_schema(version) VALUES (%s)", (SCHEMA_VERSION,))
            else:
                conn.execute("UPDATE capreg_schema SET version=%s", (SCHEMA_VERSION,))

    def schema_version(self) -> int:
        with self._pool.connection() as conn:
            row = conn.execute("SELECT version FROM capreg_schema").fetchone()
        return int(row[0]) if row else 0

    def close(self) -> None:
        if self._listener is not None:
            self._listener.close()
        self._pool.close()

    def keys_version(self) -> int:
        """Changes whenever the keys document does (cheap: replicas ask every second)."""
        with self._pool.connection() as conn:
            row = conn.execute("SELECT version FROM capreg_keys WHERE id=1").fetchone()
        return int(str(row[0])) if row else 0

    def keys_document(self) -> tuple[str, int]:
        """The keys document and its version."""
        with self._pool.connection() as conn:
            row = conn.execute("SELECT document, version FROM capreg_keys WHERE id=1").fetchone()
        return (str(row[0]), int(str(row[1]))) if row else ("", 0)

    def update_keys(self, change: Callable[[str], str]) -> None:
        """Replaces the keys document with `change(document)`, one writer at a time."""
        with self._pool.connection() as conn, conn.transaction():
            row = conn.execute("SELECT document FROM capreg_keys WHERE id=1 FOR UPDATE").fetchone()
            document = change(str(row[0]) if row else "")
            conn.execute(
                "UPDATE capreg_keys SET document=%s, version=version + 1 WHERE id=1", (document,)
            )

    def wait_for_change(self, timeout: float) -> bool:
        """Waits up to `timeout` seconds for a change to be announced on NOTIFY_CHANNEL.
        A lost connection is reopened on the next call (False meanwhile)."""
        try:
            if self._listener is None or self._listener.closed:
                self._listener = psycopg.connect(self._dsn, autocommit=True, connect_timeout=5)
                self._listener.execute(f"LISTEN {NOTIFY_CHANNEL}")
            return any(True for _ in self._listener.notifies(timeout=timeout, stop_after=1))
        except psycopg.Error as exc:
            logger.warning("change notifications lost (%s); reconnecting", type(exc).__name__)
            if self._listener is not None:
                self._listener.close()
            self._listener = None
            time.sleep(min(timeout, 1.0))
            return False

    def generation(self) -> int:
        with self._pool.connection() as conn:
            row = conn.execute("SELECT value FROM capreg_meta WHERE key='generation'").fetchone()
        return int(row[0]) if row else 0

    @staticmethod
    def _bump_generation(conn: psycopg.Connection[tuple[object, ...]]) -> int:
        # The row lock serialises every change's generation; NOTIFY is delivered at commit.
        row = conn.execute(
            "UPDATE capreg_meta SET value=(value::bigint + 1)::text WHERE key='generation' "
            "RETURNING value"
        ).fetchone()
        assert row is not None  # created by the first migration
        generation = int(str(row[0]))
        conn.execute("SELECT pg_notify(%s, %s)", (NOTIFY_CHANNEL, str(generation)))
        return generation

    @staticmethod
    def _lock_catalog(conn: psycopg.Connection[tuple[object, ...]], name: str) -> None:
        conn.execute("SELECT pg_advisory_xact_lock(%s, hashtext(%s))", (_LOCK_SPACE, name))

    def catalogs(self) -> list[StoredCatalog]:
        """Every stored catalog with its tools (used at start-up)."""
        return self.changes_since(-1).changed

    def changes_since(self, generation: int) -> Changes:
        """The catalogs stored and the names deleted after `generation`, and the generation
        they bring the caller to: all read from one snapshot of the database."""
        with self._pool.connection() as conn, conn.transaction():
            conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            row = conn.execute("SELECT value FROM capreg_meta WHERE key='generation'").fetchone()
            current = int(str(row[0])) if row else 0
            catalog_rows = conn.execute(
                "SELECT name, title, description, version, format, default_scopes, revision,"
                " source_digest, workflows, image, incarnation FROM catalogs WHERE generation > %s"
                " ORDER BY name",
                (generation,),
            ).fetchall()
            tool_rows = conn.execute(
                "SELECT t.catalog, t.name, CASE WHEN t.function_name = t.catalog || '__' || t.name"
                " THEN '' ELSE t.function_name END, t.revision, t.position"
                " FROM tools t"
                " JOIN catalogs c ON c.name = t.catalog WHERE c.generation > %s"
                " ORDER BY t.catalog, t.position",
                (generation,),
            ).fetchall()
            deleted = [
                str(name)
                for (name,) in conn.execute(
                    "SELECT name FROM tombstones WHERE generation > %s ORDER BY name",
                    (generation,),
                ).fetchall()
            ]
        result = stored_catalogs(catalog_rows, tool_rows, self)
        return Changes(changed=result, deleted=deleted, generation=current)

    def tool_text(self, catalog: str, name: str, revision: int, incarnation: int) -> str | None:
        with self._pool.connection() as conn:
            row = conn.execute(
                "SELECT t.data FROM tools t JOIN catalogs c ON c.name = t.catalog"
                " WHERE t.catalog=%s AND t.name=%s AND t.revision=%s AND c.incarnation=%s",
                (catalog, name, revision, incarnation),
            ).fetchone()
        return None if row is None else str(row[0])

    def catalog_texts(self, catalog: str, incarnation: int) -> list[tuple[str, int, str]]:
        with self._pool.connection() as conn:
            rows = conn.execute(
                "SELECT t.name, t.revision, t.data FROM tools t"
                " JOIN catalogs c ON c.name = t.catalog WHERE t.catalog=%s AND c.incarnation=%s",
                (catalog, incarnation),
            ).fetchall()
        return [(str(name), int(str(revision)), str(data)) for name, revision, data in rows]

    def embeddings(self, model: str, doc_hashes: Iterable[str]) -> dict[str, NDArray[np.float32]]:
        """Stored vectors for whichever of `doc_hashes` have one under `model`. In binary:
        as text, each vector crossed the wire and was parsed as hex, twice its size."""
        wanted = list(dict.fromkeys(doc_hashes))
        found: dict[str, NDArray[np.float32]] = {}
        with self._pool.connection() as conn:
            if len(wanted) > _EMBEDDINGS_CHUNK:
                row = conn.execute(
                    "SELECT count(*) FROM embeddings WHERE model=%s", (model,)
                ).fetchone()
                stored = int(str(row[0])) if row else 0
                if reads_most(len(wanted), stored):
                    # Most of the table (a replica starting): one pass through a server-side
                    # cursor reads it three times faster than lookups by key, without
                    # holding the whole result twice (docs/results/stored-vectors-read.md).
                    keep = set(wanted)
                    with conn.transaction(), conn.cursor(name="vectors", binary=True) as scan:
                        scan.itersize = _EMBEDDINGS_CHUNK
                        scan.execute(
                            "SELECT doc_hash, vector FROM embeddings WHERE model=%s", (model,)
                        )
                        for doc_hash, blob in scan:
                            if doc_hash in keep:
                                found[doc_hash] = np.frombuffer(blob, dtype=np.float32).copy()
                    return found
            with conn.cursor(binary=True) as lookup:
                for start in range(0, len(wanted), _EMBEDDINGS_CHUNK):
                    lookup.execute(
                        "SELECT doc_hash, vector FROM embeddings"
                        " WHERE model=%s AND doc_hash = ANY(%s)",
                        (model, wanted[start : start + _EMBEDDINGS_CHUNK]),
                    )
                    for doc_hash, blob in lookup.fetchall():
                        found[str(doc_hash)] = np.frombuffer(blob, dtype=np.float32).copy()
        return found

    def partition(self, model: str) -> tuple[NDArray[np.float32], int] | None:
        """The stored IVF list centroids for `model` and the corpus size they were trained on."""
        with self._pool.connection() as conn:
            row = conn.execute(
                "SELECT trained_on, dimension, centroids FROM partitions WHERE model=%s", (model,)
            ).fetchone()
        if row is None:
            return None
        trained_on, dimension, blob = row
        matrix = np.frombuffer(bytes(blob), dtype=np.float32)
        return matrix.reshape(-1, int(str(dimension))).copy(), int(str(trained_on))

    def put_partition(self, model: str, centroids: NDArray[np.float32], trained_on: int) -> None:
        matrix = np.ascontiguousarray(centroids, dtype=np.float32)
        with self._pool.connection() as conn, conn.transaction():
            conn.execute(
                "INSERT INTO partitions(model, trained_on, dimension, centroids) "
                "VALUES(%s, %s, %s, %s) ON CONFLICT(model) DO UPDATE SET "
                "trained_on=excluded.trained_on, dimension=excluded.dimension, "
                "centroids=excluded.centroids",
                (model, trained_on, int(matrix.shape[1]), matrix.tobytes()),
            )

    def ivf_lists(self, model: str, partition: str) -> dict[str, int]:
        with self._pool.connection() as conn:
            rows = conn.execute(
                "SELECT doc_hashes, lists FROM ivf_lists WHERE model=%s AND partition=%s"
                " ORDER BY id",
                (model, partition),
            ).fetchall()
        return ivf_lists_of((str(keys), bytes(lists)) for keys, lists in rows)

    def put_ivf_lists(self, model: str, partition: str, lists: Mapping[str, int]) -> None:
        with self._pool.connection() as conn, conn.transaction():
            conn.execute(
                "DELETE FROM ivf_lists WHERE model=%s AND partition<>%s", (model, partition)
            )
            conn.execute(
                "INSERT INTO ivf_lists(model, partition, doc_hashes, lists) VALUES(%s, %s, %s, %s)",
                (model, partition, *ivf_lists_row(lists)),
            )

    def put_embeddings(self, model: str, vectors: Mapping[str, NDArray[np.float32]]) -> None:
        with self._pool.connection() as conn, conn.transaction():
            self._insert_embeddings(conn, model, vectors)

    @staticmethod
    def _insert_embeddings(
        conn: psycopg.Connection[tuple[object, ...]],
        model: str,
        vectors: Mapping[str, NDArray[np.float32]],
    ) -> None:
        if not vectors:
            return
        with conn.cursor() as cursor:
            cursor.executemany(
                "INSERT INTO embeddings(model, doc_hash, vector) VALUES(%s, %s, %s) "
                "ON CONFLICT DO NOTHING",
                [
                    (model, h, np.ascontiguousarray(v, dtype=np.float32).tobytes())
                    for h, v in vectors.items()
                ],
            )

    def replace_catalog(
        self,
        catalog: Catalog,
        revision: int,
        tools: Iterable[StoredTool],
        model: str,
        new_vectors: Mapping[str, NDArray[np.float32]],
        *,
        source_digest: str = "",
        replaces: int | None = None,
        incarnation: int = 0,
        image: bytes = b"",
    ) -> int:
        """Stores `catalog` in place of any previous version, atomically; returns the new
        generation (`replaces`, `incarnation`: see the Store protocol)."""
        now = datetime.now(UTC)
        with self._pool.connection() as conn, conn.transaction():
            self._lock_catalog(conn, catalog.name)
            row = conn.execute(
                "SELECT revision, incarnation FROM catalogs WHERE name=%s", (catalog.name,)
            ).fetchone()
            if replaces is not None:
                check_replaced(catalog.name, replaces, incarnation, row)
            self._insert_embeddings(conn, model, new_vectors)
            conn.execute("DELETE FROM tools WHERE catalog=%s", (catalog.name,))
            conn.execute(
                "INSERT INTO catalogs(name, title, description, version, format, default_scopes,"
                " revision, updated_at, source_digest, workflows, image)"
                " VALUES(%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)"
                " ON CONFLICT(name) DO UPDATE SET title=excluded.title,"
                " description=excluded.description, version=excluded.version,"
                " format=excluded.format, default_scopes=excluded.default_scopes,"
                " revision=excluded.revision, updated_at=excluded.updated_at,"
                " source_digest=excluded.source_digest, workflows=excluded.workflows,"
                " image=excluded.image",
                (
                    catalog.name,
                    catalog.title,
                    catalog.description,
                    catalog.version,
                    str(catalog.format),
                    json.dumps(sorted(catalog.default_scopes)),
                    revision,
                    now,
                    source_digest,
                    workflows_to_json(catalog.workflows),
                    image or None,
                ),
            )
            conn.execute("DELETE FROM tombstones WHERE name=%s", (catalog.name,))
            with conn.cursor() as cursor:
                cursor.executemany(
                    "INSERT INTO tools(catalog, name, position, data, function_name, revision)"
                    " VALUES(%s, %s, %s, %s, %s, %s)",
                    [
                        (
                            catalog.name,
                            stored.tool.name,
                            position,
                            tool_to_json(stored.tool),
                            stored.function_name,
                            stored.revision,
                        )
                        for position, stored in enumerate(tools)
                    ],
                )
            generation = self._bump_generation(conn)  # last: its row lock serialises writers
            life = int(str(row[1])) if row else generation  # kept, or a new life of the name
            conn.execute(
                "UPDATE catalogs SET generation=%s, incarnation=%s WHERE name=%s",
                (generation, life, catalog.name),
            )
            return generation

    def put_images(self, images: Sequence[tuple[str, int, int, bytes]]) -> int:
        """`Store.put_images`, in one transaction (the generation stays: replicas already
        hold what an image derives)."""
        with self._pool.connection() as conn, conn.transaction():
            return sum(
                conn.execute(
                    "UPDATE catalogs SET image=%s WHERE name=%s AND revision=%s AND incarnation=%s",
                    (image, name, revision, incarnation),
                ).rowcount
                for name, revision, incarnation, image in images
            )

    def set_source_digest(self, name: str, digest: str) -> None:
        """Records another source that gives the same catalog (no generation change)."""
        with self._pool.connection() as conn, conn.transaction():
            conn.execute("UPDATE catalogs SET source_digest=%s WHERE name=%s", (digest, name))

    def delete_catalog(self, name: str) -> int | None:
        """Removes the catalog and its tools; returns the new generation, or None if absent."""
        with self._pool.connection() as conn, conn.transaction():
            self._lock_catalog(conn, name)
            deleted = conn.execute("DELETE FROM catalogs WHERE name=%s", (name,)).rowcount
            if not deleted:
                return None
            generation = self._bump_generation(conn)
            # Replicas that follow the store learn of the delete from its tombstone.
            conn.execute(
                "INSERT INTO tombstones(name, generation) VALUES(%s, %s) ON CONFLICT(name) "
                "DO UPDATE SET generation=excluded.generation",
                (name, generation),
            )
            return generation
