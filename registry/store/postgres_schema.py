"""The PostgreSQL store's tables, as migrations: each step takes a database from the version
before it to its own (`PostgresStore` runs them at start-up, under an advisory lock)."""

from __future__ import annotations

from collections.abc import Sequence

SCHEMA_VERSION = 5

MIGRATIONS: dict[int, Sequence[str]] = {
    1: (
        "CREATE TABLE IF NOT EXISTS capreg_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
        """CREATE TABLE IF NOT EXISTS catalogs (
            name TEXT PRIMARY KEY,
            title TEXT NOT NULL,
            description TEXT NOT NULL,
            version TEXT NOT NULL,
            format TEXT NOT NULL,
            default_scopes TEXT NOT NULL,
            revision BIGINT NOT NULL,
            updated_at TIMESTAMPTZ NOT NULL,
            source_digest TEXT NOT NULL DEFAULT '',
            generation BIGINT NOT NULL DEFAULT 0
        )""",
        """CREATE TABLE IF NOT EXISTS tombstones (
            name TEXT PRIMARY KEY,
            generation BIGINT NOT NULL
        )""",
        """CREATE TABLE IF NOT EXISTS tools (
            catalog TEXT NOT NULL REFERENCES catalogs(name) ON DELETE CASCADE,
            name TEXT NOT NULL,
            position INTEGER NOT NULL,
            data TEXT NOT NULL,
            function_name TEXT NOT NULL UNIQUE,
            revision BIGINT NOT NULL,
            PRIMARY KEY (catalog, name)
        )""",
        """CREATE TABLE IF NOT EXISTS partitions (
            model TEXT PRIMARY KEY,
            trained_on BIGINT NOT NULL,
            dimension INTEGER NOT NULL,
            centroids BYTEA NOT NULL
        )""",
        """CREATE TABLE IF NOT EXISTS embeddings (
            model TEXT NOT NULL,
            doc_hash TEXT NOT NULL,
            vector BYTEA NOT NULL,
            PRIMARY KEY (model, doc_hash)
        )""",
        "INSERT INTO capreg_meta(key, value) VALUES ('generation', '0') ON CONFLICT DO NOTHING",
        # The keys document of a cluster (`capreg keys ... --db`): the same YAML a keys file
        # holds (hashes only), one row, versioned so replicas reload it only when it changed.
        """CREATE TABLE IF NOT EXISTS capreg_keys (
            id INTEGER PRIMARY KEY CHECK (id = 1),
            document TEXT NOT NULL,
            version BIGINT NOT NULL
        )""",
        "INSERT INTO capreg_keys(id, document, version) VALUES (1, '', 0) ON CONFLICT DO NOTHING",
    ),
    # Declared workflows, as a JSON list (empty for catalogs stored before workflows existed).
    2: ("ALTER TABLE catalogs ADD COLUMN IF NOT EXISTS workflows TEXT NOT NULL DEFAULT '[]'",),
    # The catalog's image (registry/catalog_image.py); NULL until one is written.
    3: ("ALTER TABLE catalogs ADD COLUMN IF NOT EXISTS image BYTEA",),
    # Which life of its name a catalog is (`StoredCatalog.incarnation`; 0 for those before).
    4: ("ALTER TABLE catalogs ADD COLUMN IF NOT EXISTS incarnation BIGINT NOT NULL DEFAULT 0",),
    # Each vector's IVF list under the partition (`Partition.digest`) that assigned it, one
    # row per batch assigned together (`registry.store.base.ivf_lists_row`).
    5: (
        """CREATE TABLE IF NOT EXISTS ivf_lists (
            id BIGSERIAL PRIMARY KEY,
            model TEXT NOT NULL,
            partition TEXT NOT NULL,
            doc_hashes TEXT NOT NULL,
            lists BYTEA NOT NULL
        )""",
    ),
}
