"""SQLite storage: one file, the embedded default for a single node (see `base` for what is
stored)."""

from __future__ import annotations

import json
import logging
import os
import sqlite3
import stat
import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from indexer.model import Catalog
from registry.store.base import (
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

logger = logging.getLogger(__name__)

SCHEMA_VERSION = 6
# Each vector's IVF list under the partition (`Partition.digest`) that assigned it: one row
# per batch assigned together (`ivf_lists_row`), read back in few pieces.
_IVF_LISTS = """CREATE TABLE IF NOT EXISTS ivf_lists (
    id INTEGER PRIMARY KEY,
    model TEXT NOT NULL,
    partition TEXT NOT NULL,
    doc_hashes TEXT NOT NULL,
    lists BLOB NOT NULL
)"""
# Vectors looked up per query; past that many wanted, and most of the stored rows
# (`reads_most`), the model's rows are read in one pass instead (`SqliteStore.embeddings`).
_LOOKUPS = 500
# Each step takes a store from the version before it to its own.
_MIGRATIONS = {
    # The digest of the file a catalog was last registered from: a restart recognises an
    # unchanged file without parsing it again.
    2: "ALTER TABLE catalogs ADD COLUMN source_digest TEXT NOT NULL DEFAULT ''",
    # Declared workflows, as a JSON list (empty for catalogs stored before workflows existed).
    3: "ALTER TABLE catalogs ADD COLUMN workflows TEXT NOT NULL DEFAULT '[]'",
    # The catalog's image (registry/catalog_image.py); NULL until one is written.
    4: "ALTER TABLE catalogs ADD COLUMN image BLOB",
    # Which life of its name a catalog is (`StoredCatalog.incarnation`); 0 for the catalogs
    # stored before: each is its name's only life the store knows of.
    5: "ALTER TABLE catalogs ADD COLUMN incarnation INTEGER NOT NULL DEFAULT 0",
    # Each vector's IVF list under the stored partition, so a restart does not compute it.
    6: _IVF_LISTS,
}
_SCHEMA = (
    _IVF_LISTS
    + """;
CREATE TABLE IF NOT EXISTS meta (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS catalogs (
    name TEXT PRIMARY KEY,
    title TEXT NOT NULL,
    description TEXT NOT NULL,
    version TEXT NOT NULL,
    format TEXT NOT NULL,
    default_scopes TEXT NOT NULL,
    revision INTEGER NOT NULL,
    updated_at TEXT NOT NULL,
    source_digest TEXT NOT NULL DEFAULT '',
    workflows TEXT NOT NULL DEFAULT '[]',
    image BLOB,
    incarnation INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS tools (
    catalog TEXT NOT NULL REFERENCES catalogs(name) ON DELETE CASCADE,
    name TEXT NOT NULL,
    position INTEGER NOT NULL,
    data TEXT NOT NULL,
    function_name TEXT NOT NULL UNIQUE,
    revision INTEGER NOT NULL,
    PRIMARY KEY (catalog, name)
);
CREATE TABLE IF NOT EXISTS partitions (
    model TEXT PRIMARY KEY,
    trained_on INTEGER NOT NULL,
    dimension INTEGER NOT NULL,
    centroids BLOB NOT NULL
);
CREATE TABLE IF NOT EXISTS embeddings (
    model TEXT NOT NULL,
    doc_hash TEXT NOT NULL,
    vector BLOB NOT NULL,
    PRIMARY KEY (model, doc_hash)
);
"""
)


def _owner_only(path: Path) -> None:
    """Tightens an existing database (and its WAL and shared-memory files) that other users
    may read or write to owner-only, saying so; one that cannot be tightened is logged as an
    error and served as it is (decision 0065)."""
    for file in (path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")):
        try:
            mode = stat.S_IMODE(file.stat().st_mode)
        except FileNotFoundError:
            continue
        if not mode & 0o077:
            continue
        try:
            file.chmod(mode & 0o700)
        except OSError as exc:
            logger.error(
                "%s is readable by other users (mode %o) and cannot be made owner-only: %s; "
                "run chmod go-rwx %s",
                file,
                mode,
                exc.strerror,
                file,
            )
            continue
        logger.warning(
            "%s was readable by other users (mode %o); now %o (owner only)",
            file,
            mode,
            mode & 0o700,
        )


class SqliteStore:
    """One SQLite file in WAL mode; all access goes through one connection and lock."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.location = str(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.exists():
            # Owner-only from the first byte: the store holds every catalog (SQLite's WAL and
            # shared-memory files take the database file's mode).
            os.close(os.open(path, os.O_CREAT | os.O_WRONLY, 0o600))
        else:
            _owner_only(path)
        try:
            self._db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.execute("PRAGMA foreign_keys=ON")
            version = self._db.execute("PRAGMA user_version").fetchone()[0]
            if version > SCHEMA_VERSION:
                raise StoreError(
                    f"{path} has schema version {version}, newer than this capreg's "
                    f"{SCHEMA_VERSION}: run a newer capreg, or a copy of the store from "
                    "before the upgrade"
                )
            if version == 0:
                self._db.executescript(_SCHEMA)
            else:
                self._migrate(version)
            self._db.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
            # Schemas are read by searches' and GetSchema's threads while the writer holds the
            # other connection (WAL: a read sees the last commit and waits for no write).
            self._reads = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"cannot open {path}: {exc}") from exc
        self._lock = threading.Lock()
        self._read_lock = threading.Lock()

    def _migrate(self, version: int) -> None:
        """Brings a store of `version` up to date, in one transaction."""
        self._db.execute("BEGIN IMMEDIATE")
        try:
            for step in range(version + 1, SCHEMA_VERSION + 1):
                self._db.execute(_MIGRATIONS[step])
            self._db.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        self._db.execute("COMMIT")

    def close(self) -> None:
        with self._lock, self._read_lock:
            self._db.close()
            self._reads.close()

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield self._db
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    def generation(self) -> int:
        with self._lock:
            row = self._db.execute("SELECT value FROM meta WHERE key='generation'").fetchone()
        return int(row[0]) if row else 0

    def _bump_generation(self, db: sqlite3.Connection) -> int:
        row = db.execute("SELECT value FROM meta WHERE key='generation'").fetchone()
        generation = (int(row[0]) if row else 0) + 1
        db.execute(
            "INSERT INTO meta(key, value) VALUES('generation', ?) "
            "ON CONFLICT(key) DO UPDATE SET value=excluded.value",
            (str(generation),),
        )
        return generation

    def catalogs(self) -> list[StoredCatalog]:
        """Every stored catalog with its tools (used at start-up)."""
        with self._lock:
            catalog_rows = self._db.execute(
                "SELECT name, title, description, version, format, default_scopes, revision,"
                " source_digest, workflows, image, incarnation FROM catalogs ORDER BY name"
            ).fetchall()
            # In the table's own order: a catalog's rows are written together, in position
            # order, so they come out that way without a sort through the (catalog, name)
            # index (0.31 s against 0.17 s at 100,000 tools); `stored_catalogs` sorts any
            # catalog whose rows do not.
            tool_rows = self._db.execute(
                "SELECT catalog, name,"
                " CASE WHEN function_name = catalog || '__' || name THEN '' ELSE function_name END,"
                " revision, position FROM tools ORDER BY rowid"
            ).fetchall()
        return stored_catalogs(catalog_rows, tool_rows, self)

    def tool_text(self, catalog: str, name: str, revision: int, incarnation: int) -> str | None:
        with self._read_lock:
            row = self._reads.execute(
                "SELECT t.data FROM tools t JOIN catalogs c ON c.name = t.catalog"
                " WHERE t.catalog=? AND t.name=? AND t.revision=? AND c.incarnation=?",
                (catalog, name, revision, incarnation),
            ).fetchone()
        return None if row is None else str(row[0])

    def catalog_texts(self, catalog: str, incarnation: int) -> list[tuple[str, int, str]]:
        with self._read_lock:
            rows = self._reads.execute(
                "SELECT t.name, t.revision, t.data FROM tools t"
                " JOIN catalogs c ON c.name = t.catalog WHERE t.catalog=? AND c.incarnation=?",
                (catalog, incarnation),
            ).fetchall()
        return [(str(name), int(revision), str(data)) for name, revision, data in rows]

    def embeddings(self, model: str, doc_hashes: Iterable[str]) -> dict[str, NDArray[np.float32]]:
        """Stored vectors for whichever of `doc_hashes` have one under `model`."""
        wanted = list(dict.fromkeys(doc_hashes))
        found: dict[str, NDArray[np.float32]] = {}
        with self._lock:
            (stored,) = self._db.execute(
                "SELECT coalesce(max(rowid), 0) FROM embeddings"
            ).fetchone()
            if len(wanted) > _LOOKUPS and reads_most(len(wanted), stored):
                # Most of the table (a start-up): one pass over the model's rows reads it
                # faster than lookups (docs/results/startup-distinct-100k.md), in the
                # table's own order: through the key's index each row is a seek.
                keep = set(wanted)
                scanned = self._db.execute(
                    "SELECT doc_hash, vector FROM embeddings NOT INDEXED WHERE model=?", (model,)
                )
                for doc_hash, blob in scanned:
                    if doc_hash in keep:
                        found[doc_hash] = np.frombuffer(blob, dtype=np.float32).copy()
                return found
            for start in range(0, len(wanted), _LOOKUPS):
                chunk = wanted[start : start + _LOOKUPS]
                marks = ",".join("?" * len(chunk))
                # Only "?" placeholders are interpolated; the values are bound.
                query = f"SELECT doc_hash, vector FROM embeddings WHERE model=? AND doc_hash IN ({marks})"  # noqa: E501, S608 -- placeholders only
                rows = self._db.execute(query, (model, *chunk)).fetchall()
                for doc_hash, blob in rows:
                    found[doc_hash] = np.frombuffer(blob, dtype=np.float32).copy()
        return found

    def partition(self, model: str) -> tuple[NDArray[np.float32], int] | None:
        """The stored IVF list centroids for `model` and the corpus size they were trained on."""
        with self._lock:
            row = self._db.execute(
                "SELECT trained_on, dimension, centroids FROM partitions WHERE model=?", (model,)
            ).fetchone()
        if row is None:
            return None
        trained_on, dimension, blob = row
        return np.frombuffer(blob, dtype=np.float32).reshape(-1, dimension).copy(), trained_on

    def put_partition(self, model: str, centroids: NDArray[np.float32], trained_on: int) -> None:
        matrix = np.ascontiguousarray(centroids, dtype=np.float32)
        with self._transaction() as db:
            db.execute(
                "INSERT INTO partitions(model, trained_on, dimension, centroids) "
                "VALUES(?, ?, ?, ?) ON CONFLICT(model) DO UPDATE SET "
                "trained_on=excluded.trained_on, dimension=excluded.dimension, "
                "centroids=excluded.centroids",
                (model, trained_on, int(matrix.shape[1]), matrix.tobytes()),
            )

    def ivf_lists(self, model: str, partition: str) -> dict[str, int]:
        with self._lock:
            rows = self._db.execute(
                "SELECT doc_hashes, lists FROM ivf_lists WHERE model=? AND partition=? ORDER BY id",
                (model, partition),
            ).fetchall()
        return ivf_lists_of(rows)

    def put_ivf_lists(self, model: str, partition: str, lists: Mapping[str, int]) -> None:
        with self._transaction() as db:
            # Lists under another partition are read by no one again.
            db.execute("DELETE FROM ivf_lists WHERE model=? AND partition<>?", (model, partition))
            db.execute(
                "INSERT INTO ivf_lists(model, partition, doc_hashes, lists) VALUES(?, ?, ?, ?)",
                (model, partition, *ivf_lists_row(lists)),
            )

    def put_embeddings(self, model: str, vectors: Mapping[str, NDArray[np.float32]]) -> None:
        with self._transaction() as db:
            self._insert_embeddings(db, model, vectors)

    @staticmethod
    def _insert_embeddings(
        db: sqlite3.Connection, model: str, vectors: Mapping[str, NDArray[np.float32]]
    ) -> None:
        db.executemany(
            "INSERT OR IGNORE INTO embeddings(model, doc_hash, vector) VALUES(?, ?, ?)",
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
        now = datetime.now(UTC).isoformat(timespec="seconds")
        with self._transaction() as db:
            row = db.execute(
                "SELECT revision, incarnation FROM catalogs WHERE name=?", (catalog.name,)
            ).fetchone()
            if replaces is not None:
                check_replaced(catalog.name, replaces, incarnation, row)
            generation = self._bump_generation(db)
            self._insert_embeddings(db, model, new_vectors)
            db.execute("DELETE FROM tools WHERE catalog=?", (catalog.name,))
            db.execute(
                "INSERT INTO catalogs(name, title, description, version, format, default_scopes,"
                " revision, updated_at, source_digest, workflows, image, incarnation)"
                " VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
                "ON CONFLICT(name) DO UPDATE SET title=excluded.title,"
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
                    catalog.format,
                    json.dumps(sorted(catalog.default_scopes)),
                    revision,
                    now,
                    source_digest,
                    workflows_to_json(catalog.workflows),
                    image or None,
                    # Kept by a replacement (the update leaves it); a new life otherwise.
                    int(row[1]) if row else generation,
                ),
            )
            db.executemany(
                "INSERT INTO tools(catalog, name, position, data, function_name, revision)"
                " VALUES(?, ?, ?, ?, ?, ?)",
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
            return generation

    def put_images(self, images: Sequence[tuple[str, int, int, bytes]]) -> int:
        """Stores each (catalog, revision, incarnation, image) whose revision and incarnation
        are still the stored ones, in one transaction; returns how many were."""
        with self._transaction() as db:
            return sum(
                db.execute(
                    "UPDATE catalogs SET image=? WHERE name=? AND revision=? AND incarnation=?",
                    (image, name, revision, incarnation),
                ).rowcount
                for name, revision, incarnation, image in images
            )

    def set_source_digest(self, name: str, digest: str) -> None:
        """Records another source that gives the same catalog (no generation change)."""
        with self._transaction() as db:
            db.execute("UPDATE catalogs SET source_digest=? WHERE name=?", (digest, name))

    def delete_catalog(self, name: str) -> int | None:
        """Removes the catalog and its tools; returns the new generation, or None if absent."""
        with self._transaction() as db:
            deleted = db.execute("DELETE FROM catalogs WHERE name=?", (name,)).rowcount
            if not deleted:
                return None
            return self._bump_generation(db)
