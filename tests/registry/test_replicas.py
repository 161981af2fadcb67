"""Replicas on one PostgreSQL database: each follows the others' changes, embeds nothing it
did not write, and answers read-your-writes with min_generation."""

from __future__ import annotations

import contextlib
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import grpc
import pytest
import yaml

from registry.auth import shared_keys
from registry.core import Registry
from registry.errors import CatalogNotFound
from registry.proto import registry_pb2 as pb
from registry.proto import registry_pb2_grpc as pb_grpc
from registry.store import PostgresStore, ToolChanged
from registry.store.tool_texts import PARSED
from tests.conftest import DATA, CountingEmbedder
from tests.support.server_process import wait_serving_logged

# Every replica is a `capreg serve` process, which loads the model.
pytestmark = pytest.mark.model

MINI = (DATA / "mini.yaml").read_text()


def version(name: str, tools: int, tag: str) -> str:
    """A catalog `name` of `tools` tools whose names and descriptions carry `tag` (each
    description is new, so each tool needs embedding)."""
    document = {
        "capreg": 1,
        "name": name,
        "description": f"version {tag}",
        "default_scopes": [f"{name}:read"],
        "tools": [
            {
                "name": f"tool_{tag}_{i}",
                "description": f"Does task {i} of version {tag}: case {i * 7919 % 1009}.",
                "input_schema": {"type": "object"},
            }
            for i in range(tools)
        ],
    }
    return yaml.safe_dump(document)


@pytest.fixture
def two_replicas(
    postgres_dsn: str, embedder: CountingEmbedder
) -> Iterator[tuple[Registry, Registry]]:
    """A writer and a follower, each loaded over its own connection to one database."""
    stores = [PostgresStore(postgres_dsn), PostgresStore(postgres_dsn)]
    writer, follower = (Registry(store, embedder) for store in stores)
    writer.load()
    follower.load()
    yield writer, follower
    for store in stores:
        store.close()


def test_a_replica_catches_up_without_embedding(
    two_replicas: tuple[Registry, Registry], embedder: CountingEmbedder
) -> None:
    writer, follower = two_replicas
    registered = writer.register(MINI)
    embedder.texts = 0
    assert follower.writer.catch_up() == 1
    assert embedder.texts == 0
    found = follower.search("will it rain in Paris tomorrow")
    assert found.hits[0].entry.id == "mini/get_weather_forecast"
    assert found.generation == registered.generation
    # Its own later write is decided against the version it caught up with.
    again = follower.register(MINI.replace("Returns the weather", "Gives the weather"))
    assert again.revision == registered.revision + 1
    writer.writer.catch_up()
    assert writer.snapshot.generation == again.generation
    writer.delete("mini")
    follower.writer.catch_up()
    assert follower.catalogs() == []


def test_a_catalog_another_replica_deleted_and_stored_anew_is_never_read_as_the_held_one(
    two_replicas: tuple[Registry, Registry],
) -> None:
    writer, follower = two_replicas
    writer.register(MINI)
    follower.writer.catch_up()
    older = follower.snapshot
    writer.delete("mini")
    anew = MINI.replace("Returns the weather", "Gives the weather")
    assert writer.register(anew).revision == 1  # the revision the follower's tools are held at
    PARSED.clear()
    # Before the follower catches up: the new life's tools are not read as the held ones.
    with pytest.raises(ToolChanged):
        older.schemas(["mini/get_weather_forecast"])
    assert follower.writer.catch_up() == 1
    [caught] = follower.schemas(["mini/get_weather_forecast"])
    assert caught.tool.description.startswith("Gives the weather")
    # Deleted and stored anew as it was: the same revision and content, another life, which
    # the follower takes in (its tools held at the old life would never be read again).
    writer.delete("mini")
    writer.register(anew)
    PARSED.clear()
    assert follower.writer.catch_up() == 1
    [caught] = follower.schemas(["mini/get_weather_forecast"])
    assert caught.tool.description.startswith("Gives the weather")


# The processes behind the `replicas` fixture's addresses (a test kills one).
PROCESSES: dict[str, subprocess.Popen[bytes]] = {}


@pytest.fixture
def replicas(postgres_dsn: str, tmp_path: Path) -> Iterator[list[str]]:
    """Three `capreg serve` processes on one PostgreSQL schema; yields their addresses."""
    processes, addresses = [], []
    logs = []
    store = PostgresStore(postgres_dsn)
    KEYS["admin"] = shared_keys.add_key(store, "ops", ["registry:admin", "*"])
    store.close()
    try:
        paths = [tmp_path / f"replica-{index}.log" for index in range(3)]
        for path in paths:
            log = path.open("w")
            logs.append(log)
            command = [sys.executable, "-m", "capreg.cli", "serve", "--db", postgres_dsn]
            command += ["--listen", "127.0.0.1:0", "--follow-interval", "0.5"]
            processes.append(subprocess.Popen(command, stdout=log, stderr=log))
        for path, process in zip(paths, processes, strict=True):
            address = wait_serving_logged(process, path, 180)
            addresses.append(address)
            PROCESSES[address] = process
        yield addresses
    finally:
        for process in processes:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        for process in processes:
            process.wait(timeout=60)
        PROCESSES.clear()
        KEYS.clear()
        for log in logs:
            log.close()


class _Call(NamedTuple):
    method: str
    timeout: float | None
    metadata: Sequence[tuple[str, str | bytes]] | None
    credentials: grpc.CallCredentials | None
    wait_for_ready: bool | None
    compression: grpc.Compression | None


class Bearer(grpc.UnaryUnaryClientInterceptor):  # type: ignore[type-arg]  # grpc-stubs: generic base
    """Sends `key` with every call (the replicas share their keys through the store)."""

    def __init__(self, key: str) -> None:
        self._key = key

    def intercept_unary_unary(self, continuation: Any, details: Any, request: Any) -> Any:
        metadata = [*(details.metadata or ()), ("authorization", f"Bearer {self._key}")]
        call = _Call(
            details.method,
            details.timeout,
            metadata,
            details.credentials,
            details.wait_for_ready,
            details.compression,
        )
        return continuation(call, request)


# The admin key of the replicas under test (set by the `replicas` fixture).
KEYS: dict[str, str] = {}


def stub(address: str, key: str | None = None) -> pb_grpc.CapabilityRegistryStub:
    channel = grpc.intercept_channel(grpc.insecure_channel(address), Bearer(key or KEYS["admin"]))
    return pb_grpc.CapabilityRegistryStub(channel)


def test_three_replicas_share_every_change_and_read_their_writes(
    replicas: list[str], tmp_path: Path
) -> None:
    first, *others = (stub(a) for a in replicas)
    registered = first.RegisterCatalog(pb.RegisterCatalogRequest(content=MINI), timeout=60)
    assert registered.embedded == 3
    wanted = registered.index_generation
    for other in others:
        request = pb.SearchRequest(query="will it rain in Paris", min_generation=wanted)
        reply = other.Search(request, timeout=10)
        assert reply.hits[0].id == "mini/get_weather_forecast"
        listed = other.ListCatalogs(pb.ListCatalogsRequest(min_generation=wanted), timeout=10)
        assert [c.name for c in listed.catalogs] == ["mini"]
    # A generation nobody has reached: UNAVAILABLE within the deadline, naming where it is.
    with pytest.raises(grpc.RpcError) as refused:
        others[0].GetSchema(
            pb.GetSchemaRequest(ids=["mini/convert_currency"], min_generation=wanted + 100),
            timeout=1.0,
        )
    assert refused.value.code() == grpc.StatusCode.UNAVAILABLE
    assert f"at generation {wanted}" in (refused.value.details() or "")
    # Only the writing replica embedded anything.
    logs = [(tmp_path / f"replica-{i}.log").read_text() for i in range(3)]
    assert all("embedded here" not in log for log in logs)


def test_two_replicas_racing_on_one_catalog_leave_one_whole_version(
    replicas: list[str],
) -> None:
    stubs = [stub(a) for a in replicas[:2]]
    barrier = threading.Barrier(2)
    applied: list[int] = [0, 0]

    def write(index: int) -> None:
        barrier.wait()
        for round_ in range(5):
            content = version("race", 3 + index, f"r{index}x{round_}")
            reply = stubs[index].RegisterCatalog(
                pb.RegisterCatalogRequest(content=content), timeout=120
            )
            applied[index] += 1 if reply.added or reply.updated or reply.removed else 0

    threads = [threading.Thread(target=write, args=(i,)) for i in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    time.sleep(0.1)
    views = []
    for address in replicas:
        client = stub(address)
        generation = max(
            client.ListCatalogs(pb.ListCatalogsRequest(), timeout=10).index_generation, 1
        )
        # Wait for every replica to reach the last write.
        last = stubs[0].ListCatalogs(pb.ListCatalogsRequest(), timeout=10).index_generation
        listed = client.ListCatalogs(
            pb.ListCatalogsRequest(min_generation=max(last, generation)), timeout=10
        )
        [race] = [c for c in listed.catalogs if c.name == "race"]
        found = client.Search(pb.SearchRequest(query="does task", limit=10), timeout=30)
        seen = {h.name.split("_")[1] for h in found.hits if h.catalog == "race"}
        views.append((race.revision, race.tool_count, tuple(sorted(seen))))
    # Every replica sees the same whole version: one tag, its own tool count.
    assert len(set(views)) == 1, views
    revision, tools, tags = views[0]
    assert len(tags) == 1
    assert tools == 3 + int(tags[0][1])
    assert revision == sum(applied)


# Large enough that embedding it outlasts the second before the kill on a fast machine.
NEW_TOOLS = 3_000


def test_killing_the_writing_replica_leaves_the_old_or_the_new_version_everywhere(
    replicas: list[str], tmp_path: Path
) -> None:
    writer, *others = (stub(a) for a in replicas)
    old = writer.RegisterCatalog(
        pb.RegisterCatalogRequest(content=version("big", 5, "old")), timeout=60
    )
    call = writer.RegisterCatalog.future(
        pb.RegisterCatalogRequest(content=version("big", NEW_TOOLS, "new")), timeout=120
    )
    time.sleep(1.0)  # the writer is embedding the new tools: several seconds of work
    assert not call.done(), "the write ended before the kill; make the new version larger"
    PROCESSES[replicas[0]].send_signal(signal.SIGKILL)
    with pytest.raises(grpc.RpcError):
        call.result()
    counts = set()
    for other in others:
        time.sleep(1.0)  # one follow interval and more
        listed = other.ListCatalogs(
            pb.ListCatalogsRequest(min_generation=old.index_generation), timeout=10
        )
        [big] = [c for c in listed.catalogs if c.name == "big"]
        counts.add(big.tool_count)
    assert len(counts) == 1
    assert counts <= {5, NEW_TOOLS}


def restart_command() -> list[str]:
    """How to restart the test PostgreSQL server (the local cluster on its port)."""
    listing = subprocess.run(
        ["pg_lsclusters", "--no-header"], capture_output=True, text=True, check=True
    ).stdout
    for line in listing.splitlines():
        version, cluster, port, *_ = line.split()
        if port == "5432":
            return ["pg_ctlcluster", version, cluster, "restart"]
    raise AssertionError(f"no local PostgreSQL cluster on port 5432 in:\n{listing}")


def test_replicas_answer_through_a_database_restart_and_catch_up_after(
    replicas: list[str],
) -> None:
    first, second, _ = (stub(a) for a in replicas)
    before = first.RegisterCatalog(pb.RegisterCatalogRequest(content=MINI), timeout=60)
    subprocess.run(restart_command(), check=True, timeout=120)
    # Searches never touch the database: answered from the snapshot throughout.
    reply = second.Search(
        pb.SearchRequest(query="will it rain", min_generation=before.index_generation), timeout=10
    )
    assert reply.hits[0].id == "mini/get_weather_forecast"
    # Writes reconnect by themselves; the other replica reconnects its listener and catches up.
    deadline = time.monotonic() + 60
    while True:
        try:
            after = first.RegisterCatalog(
                pb.RegisterCatalogRequest(content=version("fresh", 2, "after")), timeout=30
            )
            break
        except grpc.RpcError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)
    listed = second.ListCatalogs(
        pb.ListCatalogsRequest(min_generation=after.index_generation), timeout=10
    )
    assert {c.name for c in listed.catalogs} == {"mini", "fresh"}


def test_a_key_revoked_in_the_store_is_refused_by_every_replica(
    replicas: list[str], postgres_dsn: str
) -> None:
    store = PostgresStore(postgres_dsn)
    reader = shared_keys.add_key(store, "reader", ["mini:read"])
    time.sleep(1.5)  # every replica reloads the keys within a second
    for address in replicas:
        stub(address, reader).ListCatalogs(pb.ListCatalogsRequest(), timeout=10)
    shared_keys.revoke(store, "reader")
    store.close()
    time.sleep(1.5)
    for address in replicas:
        with pytest.raises(grpc.RpcError) as refused:
            stub(address, reader).ListCatalogs(pb.ListCatalogsRequest(), timeout=10)
        assert refused.value.code() == grpc.StatusCode.UNAUTHENTICATED


def test_a_catalog_deleted_and_made_again_elsewhere_is_taken_whatever_its_revision(
    postgres_dsn: str, embedder: CountingEmbedder
) -> None:
    stores = [PostgresStore(postgres_dsn), PostgresStore(postgres_dsn)]
    one, two = (Registry(store, embedder) for store in stores)
    one.load()
    two.load()
    first = one.register(version("shop", 2, "first"))
    two.writer.catch_up()
    one.delete("shop")
    again = one.register(version("shop", 3, "second"))
    assert again.revision == first.revision  # a new catalog starts at revision 1 again
    two.writer.catch_up()
    [listed] = two.catalogs()
    assert listed.tool_count == 3
    for store in stores:
        store.close()


def test_deletes_race_safely_with_registrations(
    postgres_dsn: str, embedder: CountingEmbedder
) -> None:
    stores = [PostgresStore(postgres_dsn), PostgresStore(postgres_dsn)]
    registrar, deleter = (Registry(store, embedder) for store in stores)
    registrar.load()
    deleter.load()
    registrar.register(version("shop", 2, "v0"))
    barrier = threading.Barrier(2)

    def register() -> None:
        barrier.wait()
        for round_ in range(1, 8):
            registrar.register(version("shop", 2 + round_ % 3, f"v{round_}"))

    def delete() -> None:
        barrier.wait()
        for _ in range(8):
            with contextlib.suppress(CatalogNotFound):
                deleter.delete("shop")

    threads = [threading.Thread(target=register), threading.Thread(target=delete)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for registry in (registrar, deleter):
        registry.writer.catch_up()
    stored = stores[0].catalogs()
    views = [[(c.name, c.tool_count) for c in r.catalogs()] for r in (registrar, deleter)]
    # Both replicas agree with the store: the catalog is gone, or there whole.
    expected = [(c.catalog.name, len(c.tools)) for c in stored]
    assert views == [expected, expected]
    for catalog in stored:
        tags = {t.tool.name.split("_")[1] for t in catalog.tools}
        assert len(tags) == 1
    for store in stores:
        store.close()
