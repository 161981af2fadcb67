"""The store fixture the store suites share: each test runs against a SQLite file and the
machine's PostgreSQL."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from registry.store import PostgresStore, SqliteStore, Store

MODEL = "model-a"


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    if request.param == "sqlite":
        opened: Store = SqliteStore(tmp_path / "store.db")
    else:
        opened = PostgresStore(request.getfixturevalue("postgres_dsn"))
    yield opened
    opened.close()


def vector(seed: int) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(8).astype(np.float32)
