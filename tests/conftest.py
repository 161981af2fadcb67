"""Shared fixtures: the real model (loaded once), real SQLite files, real gRPC servers."""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
from collections.abc import AsyncIterator, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import quote

import grpc
import numpy as np
import psycopg
import pytest
from numpy.typing import NDArray
from psycopg import sql

from indexer.embedding import Embedder, SpanEmbedder, load_embedder
from indexer.embedding.model_files import default_cache_dir
from indexer.evaluation.datasets import datasets_dir
from registry.auth.authentication import Authenticator
from registry.auth.keys import KeyStore
from registry.config import ServerConfig
from registry.core import Registry
from registry.ingest.catalog_dir import sync_folder
from registry.proto import registry_pb2_grpc as pb_grpc
from registry.rpc.server import create_server, mark_serving
from registry.store import SqliteStore

if TYPE_CHECKING:  # the async stub type exists only in the generated .pyi
    from registry.proto.registry_pb2_grpc import CapabilityRegistryAsyncStub as AsyncStub

ROOT = Path(__file__).resolve().parent.parent
CATALOGS = ROOT / "catalogs"
DATA = Path(__file__).resolve().parent / "data"
# The labeled sets: CAPREG_DATASETS (as `.ci/run` sets it), else what `capreg datasets fetch`
# put in the cache, else ../shared/datasets. The test suite is an edge like the CLI: it reads
# the environment here, once.
DATASETS = datasets_dir(
    os.environ.get("CAPREG_DATASETS"),
    cache=Path(os.environ.get("CAPREG_CACHE") or default_cache_dir()),
)
# The PostgreSQL server the PostgreSQL tests use (CI and development machines run one here).
# Unreachable, those tests fail rather than skip: CI must run them.
POSTGRES = os.environ.get("CAPREG_TEST_POSTGRES", "postgresql://postgres@127.0.0.1:5432/postgres")

# The tiers. Each heavy thing a test can need, by the fixture that provides it, and the marker
# a test gets when its fixtures reach that one: `item.fixturenames` is the transitive closure,
# so `sample_registry`, `postgres_dsn` and every fixture built on these are covered.
# `make test-fast` deselects these markers and `datasets`. A test that needs one without the
# fixture (a `capreg serve` subprocess loads the model, the Inspector is an npm install, the
# labeled sets are read through DATASETS) carries the marker in its module.
TIER_FIXTURES = {
    "model": "model",
    "postgres_database": "postgres",
    "browser": "browser",  # Debian's chromium through Playwright (tests/registry/http)
}


@pytest.hookimpl(tryfirst=True)  # before `-m` deselects by marker
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        used = set(getattr(item, "fixturenames", ()))
        for fixture, marker in TIER_FIXTURES.items():
            if fixture in used:
                item.add_marker(marker)


@pytest.fixture(autouse=True)
def _heavy_fixtures_carry_their_marker(request: pytest.FixtureRequest) -> Iterator[None]:
    """Fails a test that reached a heavy fixture its marker does not announce.

    Collection sees only declared fixtures; one taken with `request.getfixturevalue` shows up
    here, after the test, so the fast tier can never come to need it unnoticed.
    """
    yield
    unmarked = sorted(
        f"{fixture} (mark it {marker})"
        for fixture, marker in TIER_FIXTURES.items()
        if fixture in request.fixturenames and request.node.get_closest_marker(marker) is None
    )
    if unmarked:
        pytest.fail(f"used without its tier marker: {', '.join(unmarked)}")


@pytest.fixture(scope="session")
def postgres_database() -> Iterator[str]:
    """A fresh database on the test server for this session (URL form), dropped afterwards."""
    name = f"capreg_test_{os.getpid()}_{secrets.token_hex(4)}"
    with psycopg.connect(POSTGRES, autocommit=True) as admin:
        admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    base = POSTGRES.rsplit("/", 1)[0]
    try:
        yield f"{base}/{name}"
    finally:
        with psycopg.connect(POSTGRES, autocommit=True) as admin:
            admin.execute(
                sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
            )


@pytest.fixture
def postgres_dsn(postgres_database: str) -> Iterator[str]:
    """A DSN whose tables live in a schema of their own: each test starts empty."""
    schema = f"t_{secrets.token_hex(6)}"
    with psycopg.connect(postgres_database, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(schema)))
    yield f"{postgres_database}?options=" + quote(f"-c search_path={schema}")
    with psycopg.connect(postgres_database, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))


class CountingEmbedder:
    """The real embedder, counting what it is asked to embed.

    Reason for the wrapper: tests assert that restarts and unchanged registrations embed
    nothing, which needs a count of the model's work.
    """

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.calls = 0
        self.texts = 0

    @property
    def model_id(self) -> str:
        return self.inner.model_id

    @property
    def dimension(self) -> int:
        return self.inner.dimension

    def encode(self, texts: Sequence[str], *, progress: bool = False) -> NDArray[np.float32]:
        self.calls += 1
        self.texts += len(texts)
        return self.inner.encode(texts, progress=progress)

    def encode_spans(
        self, text: str, spans: Sequence[tuple[int, int]]
    ) -> list[NDArray[np.float32] | None]:
        assert isinstance(self.inner, SpanEmbedder)
        self.calls += 1
        self.texts += 1
        return self.inner.encode_spans(text, spans)


@pytest.fixture(scope="session")
def model() -> Embedder:
    """The packaged all-MiniLM-L6-v2 on the serving backend (ONNX), loaded once per session."""
    return load_embedder()


@pytest.fixture(scope="session")
def eval_workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Registry databases of the labeled sets (one per family, as `capreg eval` keeps them),
    shared by the quality gate and the training test so each set is embedded once."""
    return tmp_path_factory.mktemp("eval")


@pytest.fixture
def embedder(model: Embedder) -> CountingEmbedder:
    return CountingEmbedder(model)


@pytest.fixture(scope="session")
def sample_db(model: Embedder, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A database holding every sample catalog, embedded once per session."""
    path = tmp_path_factory.mktemp("sample") / "registry.db"
    store = SqliteStore(path)
    registry = Registry(store, model)
    registry.load()
    report = sync_folder(registry, CATALOGS)
    assert not report.failed, report.failed
    store.close()
    return path


def self_signed_certificate(folder: Path) -> tuple[Path, Path]:
    """A throwaway certificate for localhost and 127.0.0.1 (needs the openssl command)."""
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "1",
            "-keyout",
            str(key),
            "-out",
            str(cert),
            "-subj",
            "/CN=localhost",
            "-addext",
            "subjectAltName=DNS:localhost,IP:127.0.0.1",
        ],
        check=True,
        capture_output=True,
    )
    return cert, key


def copy_db(source: Path, target_dir: Path) -> Path:
    target = target_dir / "registry.db"
    shutil.copy(source, target)
    return target


@pytest.fixture
def sample_registry(
    sample_db: Path, tmp_path: Path, embedder: CountingEmbedder
) -> Iterator[Registry]:
    """A loaded registry over a private copy of the sample database."""
    store = SqliteStore(copy_db(sample_db, tmp_path))
    registry = Registry(store, embedder)
    registry.load()
    yield registry
    store.close()


@pytest.fixture
def empty_registry(tmp_path: Path, embedder: CountingEmbedder) -> Iterator[Registry]:
    store = SqliteStore(tmp_path / "empty.db")
    registry = Registry(store, embedder)
    registry.load()
    yield registry
    store.close()


async def start_server(
    registry: Registry, config: ServerConfig | None = None, keys: KeyStore | None = None
) -> tuple[grpc.aio.Server, str]:
    config = config or ServerConfig(listen="127.0.0.1:0")
    server, port, health = create_server(config, registry, Authenticator(keys, reload_interval=0.0))
    await server.start()
    if registry.ready:
        mark_serving(health)
    return server, f"127.0.0.1:{port}"


@pytest.fixture
async def sample_stub(sample_registry: Registry) -> AsyncIterator[AsyncStub]:
    """A client of a real server on loopback over the sample catalogs."""
    server, address = await start_server(sample_registry)
    async with grpc.aio.insecure_channel(address) as channel:
        yield pb_grpc.CapabilityRegistryStub(channel)
    await server.stop(None)
