"""Many catalogs at once: one snapshot per batch, restarts that parse nothing unchanged, a
store that migrates, and no answer from a half-registered folder."""

from __future__ import annotations

import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import grpc
import pytest
import yaml

from indexer.formats import CatalogError
from indexer.retrieval import tool_index as snapshot
from registry import indexing, writer
from registry.config import CatalogPolicy
from registry.core import RegisterOutcome, Registry
from registry.errors import NotReady
from registry.ingest.catalog_dir import SyncProgress, sync_folder
from registry.ingest.watch import FolderWatcher
from registry.proto import registry_pb2 as pb
from registry.proto import registry_pb2_grpc as pb_grpc
from registry.store import SCHEMA_VERSION, SqliteStore, StoreError
from tests.conftest import DATA, CountingEmbedder, start_server
from tests.support.server_process import free_port

MINI = (DATA / "mini.yaml").read_text()


def renamed(name: str) -> str:
    """The mini catalog under another name (same title: its tools embed alike)."""
    document = yaml.safe_load(MINI)
    document["name"] = name
    return yaml.safe_dump(document)


@pytest.fixture
def builds(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts the snapshots the writer builds (one entry per build, its tool count)."""
    built: list[int] = []
    real = snapshot.ToolIndex

    class Counting(real):  # type: ignore[misc,valid-type]  # a counting subclass of the real index
        def __init__(self, *args: object, **kwargs: object) -> None:
            super().__init__(*args, **kwargs)
            built.append(len(self))

    monkeypatch.setattr(indexing, "ToolIndex", Counting)
    return built


def test_a_folder_sync_builds_one_snapshot_for_all_its_files(
    empty_registry: Registry, tmp_path: Path, builds: list[int]
) -> None:
    for i in range(6):
        (tmp_path / f"c{i}.yaml").write_text(renamed(f"c{i}"))
    (tmp_path / "broken.yaml").write_text("capreg: 1\nname: broken\ntools: 7\n")
    progress = SyncProgress()
    report = sync_folder(empty_registry, tmp_path, progress)
    assert len(report.registered) == 6
    assert list(report.failed) == [tmp_path / "broken.yaml"]
    assert builds == [18]
    assert progress.describe() == "7 of 7 catalog files registered, 1 failed"
    assert len(empty_registry.catalogs()) == 6


def test_a_watch_pass_builds_one_snapshot_however_many_files_changed(
    empty_registry: Registry, tmp_path: Path, builds: list[int]
) -> None:
    watcher = FolderWatcher(empty_registry, tmp_path)
    for i in range(4):
        (tmp_path / f"c{i}.yaml").write_text(renamed(f"c{i}"))
    assert len(watcher.scan_once().registered) == 4
    assert builds == [12]
    for i in range(3):
        (tmp_path / f"c{i}.yaml").unlink()
    assert len(watcher.scan_once().deleted) == 3
    assert builds == [12, 3]


def test_a_batch_gives_one_outcome_per_entry_and_builds_one_snapshot(
    empty_registry: Registry, builds: list[int]
) -> None:
    outcomes = empty_registry.register_many(
        [(renamed("a"), "", ""), ("capreg: 1\nname: bad\ntools: 7\n", "", ""), (MINI, "", "")]
    )
    assert isinstance(outcomes[0], RegisterOutcome)
    assert isinstance(outcomes[1], CatalogError)
    assert isinstance(outcomes[2], RegisterOutcome)
    assert [o.catalog for o in outcomes if isinstance(o, RegisterOutcome)] == ["a", "mini"]
    assert builds == [6]
    # The snapshot built at the end holds both, at the last outcome's generation.
    assert empty_registry.snapshot.generation == outcomes[2].generation


def test_a_restart_recognises_an_unchanged_file_without_parsing_it(
    tmp_path: Path, embedder: CountingEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = SqliteStore(tmp_path / "r.db")
    first = Registry(store, embedder)
    first.load()
    registered = first.register(MINI)
    store.close()

    def refuse(*_args: object, **_kwargs: object) -> None:
        raise AssertionError("an unchanged file was parsed again")

    store = SqliteStore(tmp_path / "r.db")
    restarted = Registry(store, embedder)
    restarted.load()
    monkeypatch.setattr(writer, "parse_catalog", refuse)
    again = restarted.register(MINI)
    assert (again.unchanged, again.revision) == (3, registered.revision)
    store.close()


def test_a_restart_under_another_scope_policy_parses_the_file_again(
    tmp_path: Path, embedder: CountingEmbedder
) -> None:
    document = yaml.safe_load(MINI)
    del document["default_scopes"]
    for tool in document["tools"]:
        tool.pop("required_scopes", None)
    unscoped = yaml.safe_dump(document)
    store = SqliteStore(tmp_path / "r.db")
    first = Registry(store, embedder)
    first.load()
    assert first.register(unscoped).assigned_scope == "mini:read"
    store.close()
    store = SqliteStore(tmp_path / "r.db")
    public = Registry(store, embedder, policy=CatalogPolicy(default_scope=""))
    public.load()
    again = public.register(unscoped)
    assert again.assigned_scope == ""
    assert again.revision == 2  # the catalog lost its assigned scope: a real change
    store.close()


def test_a_version_1_store_is_migrated_in_place(tmp_path: Path, embedder: CountingEmbedder) -> None:
    path = tmp_path / "old.db"
    store = SqliteStore(path)
    registry = Registry(store, embedder)
    registry.load()
    registry.register(MINI)
    store.close()
    with sqlite3.connect(path) as db:  # the layout version 1 had
        db.execute("ALTER TABLE catalogs DROP COLUMN source_digest")
        db.execute("ALTER TABLE catalogs DROP COLUMN workflows")
        db.execute("ALTER TABLE catalogs DROP COLUMN image")
        db.execute("ALTER TABLE catalogs DROP COLUMN incarnation")
        db.execute("PRAGMA user_version=1")
    store = SqliteStore(path)
    assert [c.catalog.name for c in store.catalogs()] == ["mini"]
    assert store.catalogs()[0].source_digest == ""
    assert store.catalogs()[0].catalog.workflows == ()
    assert store.catalogs()[0].image == b""
    # The incarnation its tools are read at.
    assert store.catalogs()[0].incarnation == 0
    first = yaml.safe_load(MINI)["tools"][0]
    assert store.catalogs()[0].catalog.tools[0].description == first["description"]
    store.close()
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION


def test_a_store_newer_than_the_code_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "new.db"
    SqliteStore(path).close()
    with sqlite3.connect(path) as db:
        db.execute(f"PRAGMA user_version={SCHEMA_VERSION + 1}")
    with pytest.raises(StoreError, match="newer than this capreg"):
        SqliteStore(path)


def test_a_held_registry_refuses_reads_naming_its_progress(sample_registry: Registry) -> None:
    progress = SyncProgress(total=10, done=3)
    sample_registry.reader.hold(progress.describe)
    with pytest.raises(NotReady, match="3 of 10 catalog files registered"):
        sample_registry.search("open a support ticket")
    with pytest.raises(NotReady):
        sample_registry.catalogs()
    # Writes go on meanwhile (the sync itself is writing).
    sample_registry.register(MINI)
    sample_registry.reader.release()
    assert sample_registry.search("will it rain in Paris").hits


async def test_register_catalogs_answers_each_entry_in_order(
    empty_registry: Registry,
) -> None:
    server, address = await start_server(empty_registry)
    try:
        async with grpc.aio.insecure_channel(address) as channel:
            stub = pb_grpc.CapabilityRegistryStub(channel)
            reply = await stub.RegisterCatalogs(
                pb.RegisterCatalogsRequest(
                    catalogs=[
                        pb.RegisterCatalogRequest(content=renamed("one")),
                        pb.RegisterCatalogRequest(name="bad", content="not: [a catalog"),
                        pb.RegisterCatalogRequest(content=renamed("two")),
                    ]
                )
            )
            kinds = [r.WhichOneof("outcome") for r in reply.results]
            assert kinds == ["registered", "failed", "registered"]
            assert reply.results[1].failed.code == "INVALID_ARGUMENT"
            assert reply.results[1].failed.name == "bad"
            assert reply.index_generation == reply.results[2].registered.index_generation
            listed = await stub.ListCatalogs(pb.ListCatalogsRequest())
            assert [c.name for c in listed.catalogs] == ["one", "two"]
            too_many = pb.RegisterCatalogsRequest(
                catalogs=[pb.RegisterCatalogRequest(content=MINI)] * 1_001
            )
            with pytest.raises(grpc.aio.AioRpcError) as refused:
                await stub.RegisterCatalogs(too_many)
            assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
            assert "at most 1000" in (refused.value.details() or "")
    finally:
        await server.stop(None)


@pytest.mark.model  # `capreg serve` loads it to embed the folder
def test_serve_never_answers_from_a_half_registered_folder(tmp_path: Path) -> None:
    folder = tmp_path / "catalogs"
    folder.mkdir()
    count = 120
    for i in range(count):
        (folder / f"c{i:03}.yaml").write_text(renamed(f"c{i:03}"))
    address = f"127.0.0.1:{free_port()}"
    command = [sys.executable, "-m", "capreg.cli", "serve", "--db", str(tmp_path / "r.db")]
    command += ["--listen", address, "--catalogs", str(folder)]
    log = (tmp_path / "serve.log").open("w")
    process = subprocess.Popen(command, stdout=log, stderr=log)
    refusals: set[str] = set()
    try:
        # Reconnect within 100 ms: gRPC's default backoff grows to seconds while the server
        # is not yet listening, and on a loaded machine could sleep through the registration.
        backoff = [
            ("grpc.initial_reconnect_backoff_ms", 20),
            ("grpc.min_reconnect_backoff_ms", 20),
            ("grpc.max_reconnect_backoff_ms", 100),
        ]
        with grpc.insecure_channel(address, options=backoff) as channel:
            stub = pb_grpc.CapabilityRegistryStub(channel)
            deadline = time.monotonic() + 240
            while time.monotonic() < deadline:
                assert process.poll() is None, (tmp_path / "serve.log").read_text()
                try:
                    listed = stub.ListCatalogs(pb.ListCatalogsRequest(), timeout=5)
                except grpc.RpcError as exc:
                    if exc.code() == grpc.StatusCode.UNAVAILABLE:
                        refusals.add(exc.details() or "")
                        time.sleep(0.02)
                        continue
                    raise
                # The first answer is already the whole folder.
                assert len(listed.catalogs) == count
                break
            else:
                pytest.fail("the server never answered")
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=60)
        log.close()
    assert any("catalog files registered" in r for r in refusals), refusals
