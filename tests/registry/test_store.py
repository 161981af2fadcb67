"""One store suite, run against both backends: a SQLite file and the machine's PostgreSQL."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import threading
from dataclasses import replace
from pathlib import Path

import grpc
import numpy as np
import psycopg
import pytest

from indexer.model import Catalog, Tool, ToolLink, Transition, Workflow, WorkflowState
from indexer.naming import function_name
from registry.auth import shared_keys
from registry.core import Registry
from registry.proto import registry_pb2 as pb
from registry.proto import registry_pb2_grpc as pb_grpc
from registry.store import (
    PostgresStore,
    SqliteStore,
    StaleCatalog,
    Store,
    StoredTool,
    StoreError,
    open_store,
)
from registry.store.base import tool_from_json
from registry.store.postgres import NOTIFY_CHANNEL
from registry.store.postgres_schema import SCHEMA_VERSION as POSTGRES_SCHEMA
from registry.store.tool_texts import PARSED, StoredToolText, read_ahead
from tests.conftest import CATALOGS, DATA, CountingEmbedder
from tests.registry.conftest import MODEL, vector
from tests.support.server_process import serving


def catalog(name: str, tools: list[str], *, title: str = "T") -> Catalog:
    return Catalog(
        name=name,
        description=f"{name} tools",
        title=title,
        version="1.0",
        default_scopes=frozenset({f"{name}:read"}),
        tools=tuple(
            Tool(catalog=name, name=tool, description=f"does {tool}", input_schema={})
            for tool in tools
        ),
    )


def stored(cat: Catalog, revision: int = 1) -> list[StoredTool]:
    return [StoredTool.named(t, function_name(cat.name, t.name), revision) for t in cat.tools]


def test_an_empty_store_has_nothing_at_generation_zero(store: Store) -> None:
    assert store.generation() == 0
    assert store.catalogs() == []
    assert store.embeddings(MODEL, ["x"]) == {}
    assert store.partition(MODEL) is None


def test_a_catalog_its_tools_and_vectors_are_stored_together(store: Store) -> None:
    crm = catalog("crm", ["find_customer", "create_lead"])
    vectors = {"h1": vector(1), "h2": vector(2)}
    generation = store.replace_catalog(crm, 1, stored(crm), MODEL, vectors, source_digest="d1")
    assert generation == store.generation() == 1
    [got] = store.catalogs()
    assert got.catalog == crm
    assert (got.revision, got.source_digest) == (1, "d1")
    assert [t.tool.name for t in got.tools] == ["find_customer", "create_lead"]
    found = store.embeddings(MODEL, ["h1", "h2", "h3"])
    assert sorted(found) == ["h1", "h2"]
    np.testing.assert_array_equal(found["h2"], vectors["h2"])
    # Keyed by (model, document hash): another model has none of them.
    assert store.embeddings("model-b", ["h1"]) == {}


def test_a_replacement_is_whole_and_a_delete_removes_everything(store: Store) -> None:
    crm = catalog("crm", ["find_customer", "create_lead"])
    store.replace_catalog(crm, 1, stored(crm), MODEL, {})
    smaller = catalog("crm", ["archive_lead"])
    assert store.replace_catalog(smaller, 2, stored(smaller, 2), MODEL, {}) == 2
    [got] = store.catalogs()
    assert [t.tool.name for t in got.tools] == ["archive_lead"]
    assert got.revision == 2
    store.set_source_digest("crm", "d9")
    assert store.catalogs()[0].source_digest == "d9"
    assert store.generation() == 2  # a digest is not a change
    assert store.delete_catalog("crm") == 3
    assert store.delete_catalog("crm") is None
    assert store.catalogs() == []


def test_a_failed_change_leaves_the_previous_version(store: Store) -> None:
    crm = catalog("crm", ["find_customer"])
    store.replace_catalog(crm, 1, stored(crm), MODEL, {})
    hr = catalog("hr", ["find_employee"])
    store.replace_catalog(hr, 1, stored(hr), MODEL, {})
    # A function name another catalog holds: the database refuses the whole change.
    clash = catalog("crm", ["create_lead"])
    tools = [StoredTool.named(clash.tools[0], "hr__find_employee", 2)]
    with pytest.raises(Exception, match=r"(?i)unique"):
        store.replace_catalog(clash, 2, tools, MODEL, {"h9": vector(9)})
    assert store.generation() == 2
    names = {c.catalog.name: [t.tool.name for t in c.tools] for c in store.catalogs()}
    assert names == {"crm": ["find_customer"], "hr": ["find_employee"]}
    assert store.embeddings(MODEL, ["h9"]) == {}


def test_declared_links_are_stored_with_their_tool(store: Store) -> None:
    link = ToolLink(rel="lead", target_id="crm/create_lead", arguments={"company": "$.name"})
    other = ToolLink(rel="tickets", target_id="support/search_tickets")
    crm = catalog("crm", ["find_customer", "create_lead"])
    crm = replace(crm, tools=(replace(crm.tools[0], links=(link, other)), crm.tools[1]))
    store.replace_catalog(crm, 1, stored(crm), MODEL, {})
    [got] = store.catalogs()
    assert got.catalog == crm
    assert got.catalog.tools[0].links == (link, other)
    assert got.catalog.tools[1].links == ()


def test_a_tools_schema_is_read_back_as_registered_whatever_json_it_holds(store: Store) -> None:
    crm = catalog("crm", ["find_customer", "count_all"])
    schema = {"type": "object", "properties": {"z": {"type": "string"}, "a": {"minimum": 0.5}}}
    # Past 64 bits: orjson refuses to write it, so the json module does.
    huge = {"type": "object", "properties": {"n": {"type": "integer", "maximum": 2**70}}}
    tools = (
        replace(crm.tools[0], description="Trouve un client — «vite»", input_schema=schema),
        replace(crm.tools[1], input_schema=huge),
    )
    crm = replace(crm, tools=tools)
    store.replace_catalog(crm, 1, stored(crm), MODEL, {})
    [got] = store.catalogs()
    assert got.catalog == crm
    # Key order as registered, not sorted.
    assert list(got.catalog.tools[0].input_schema["properties"]) == ["z", "a"]


def test_workflows_are_stored_with_their_catalog(store: Store) -> None:
    flow = Workflow(
        name="lead_flow",
        title="Leads",
        initial="new",
        states=(WorkflowState(name="new"), WorkflowState(name="won", terminal=True)),
        transitions=(
            Transition(source="new", tool="find_customer", target="new"),
            Transition(
                source="new",
                tool="create_lead",
                target="won",
                scopes=frozenset({"crm:write"}),
                when={"stage": "won", "amount": 3, "hot": True},
            ),
        ),
    )
    crm = replace(catalog("crm", ["find_customer", "create_lead"]), workflows=(flow,))
    store.replace_catalog(crm, 1, stored(crm), MODEL, {})
    [got] = store.catalogs()
    assert got.catalog.workflows == (flow,)


def test_a_postgres_database_of_version_1_gains_the_later_columns(postgres_dsn: str) -> None:
    PostgresStore(postgres_dsn).close()
    with psycopg.connect(postgres_dsn) as conn:  # the layout version 1 had
        conn.execute("ALTER TABLE catalogs DROP COLUMN workflows")
        conn.execute("ALTER TABLE catalogs DROP COLUMN image")
        conn.execute("ALTER TABLE catalogs DROP COLUMN incarnation")
        conn.execute("UPDATE capreg_schema SET version = 1")
    migrated = PostgresStore(postgres_dsn)
    crm = catalog("crm", ["find_customer"])
    generation = migrated.replace_catalog(crm, 1, stored(crm), MODEL, {})
    assert migrated.schema_version() == POSTGRES_SCHEMA == 5
    [got] = migrated.catalogs()
    assert got.catalog.workflows == ()
    assert got.image == b""
    assert got.incarnation == generation
    migrated.close()


def test_an_image_is_stored_with_its_revision_and_only_for_it(store: Store) -> None:
    crm = catalog("crm", ["find_customer"])
    store.replace_catalog(crm, 1, stored(crm), MODEL, {}, image=b"first")
    assert store.catalogs()[0].image == b"first"
    generation = store.generation()
    # An image derived from revision 1 is not stored over revision 2's.
    store.replace_catalog(crm, 2, stored(crm, 2), MODEL, {})
    assert store.catalogs()[0].image == b""
    life = store.catalogs()[0].incarnation
    assert store.put_images([("crm", 1, life, b"stale"), ("gone", 1, life, b"x")]) == 0
    # Nor over another life of the name at the same revision.
    assert store.put_images([("crm", 2, life + 1, b"other")]) == 0
    assert store.catalogs()[0].image == b""
    assert store.put_images([("crm", 2, life, b"second")]) == 1
    assert store.catalogs()[0].image == b"second"
    # Writing an image is not a change a replica must take in.
    assert store.generation() == generation + 1


def test_a_catalog_deleted_and_stored_anew_is_another_life_of_its_name(store: Store) -> None:
    crm = catalog("crm", ["find_customer"])
    first = store.replace_catalog(crm, 1, stored(crm), MODEL, {}, replaces=0)
    [held] = store.catalogs()
    assert held.incarnation == first
    # A replacement keeps the life it replaces.
    store.replace_catalog(crm, 2, stored(crm, 2), MODEL, {}, replaces=1, incarnation=first)
    assert store.catalogs()[0].incarnation == first
    store.delete_catalog("crm")
    anew = replace(crm, tools=(replace(crm.tools[0], description="finds, anew"),))
    again = store.replace_catalog(anew, 1, stored(anew), MODEL, {}, replaces=0)
    assert store.catalogs()[0].incarnation == again != first
    assert store.tool_text("crm", "find_customer", 1, first) is None
    assert store.catalog_texts("crm", first) == []
    assert store.tool_text("crm", "find_customer", 1, again) is not None
    # A change decided against the first life is refused, though the revision matches.
    with pytest.raises(StaleCatalog, match="deleted and stored anew"):
        store.replace_catalog(crm, 2, stored(crm, 2), MODEL, {}, replaces=1, incarnation=first)
    with pytest.raises(StaleCatalog, match="at revision 1 in the store, not 2"):
        store.replace_catalog(crm, 3, stored(crm, 3), MODEL, {}, replaces=2, incarnation=again)


def test_a_tool_stored_before_links_existed_loads_without_links() -> None:
    # A row as written before links existed: no "links" key at all.
    text = (
        '{"description": "d", "input_schema": {}, "output_schema": null, "annotations": {},'
        ' "title": "", "tags": [], "scopes": [], "examples": []}'
    )
    assert tool_from_json("crm", "find_customer", text).links == ()


def test_a_registry_restarts_from_postgresql_without_embedding(
    postgres_dsn: str, embedder: CountingEmbedder
) -> None:
    first = open_store(postgres_dsn)
    registry = Registry(first, embedder)
    registry.load()
    registry.register((DATA / "mini.yaml").read_text())
    before = registry.search("will it rain in Paris tomorrow")
    first.close()
    embedder.texts = 0
    second = open_store(postgres_dsn)
    restarted = Registry(second, embedder)
    restarted.load()
    assert embedder.texts == 0
    after = restarted.search("will it rain in Paris tomorrow")
    assert [h.entry.id for h in after.hits] == [h.entry.id for h in before.hits]
    assert after.generation == before.generation
    second.close()


def test_replicas_starting_together_migrate_once(postgres_dsn: str) -> None:
    opened: list[PostgresStore] = []
    failures: list[BaseException] = []

    def start() -> None:
        try:
            opened.append(PostgresStore(postgres_dsn))
        except BaseException as exc:  # reported by the assertion below
            failures.append(exc)

    threads = [threading.Thread(target=start) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []
    assert {s.schema_version() for s in opened} == {POSTGRES_SCHEMA}
    with psycopg.connect(postgres_dsn) as conn:
        assert conn.execute("SELECT count(*) FROM capreg_schema").fetchone() == (1,)
    for s in opened:
        s.close()


def test_a_database_newer_than_the_code_is_refused(postgres_dsn: str) -> None:
    PostgresStore(postgres_dsn).close()
    with psycopg.connect(postgres_dsn) as conn:
        conn.execute("UPDATE capreg_schema SET version = version + 1")
    with pytest.raises(StoreError, match="newer than this capreg"):
        PostgresStore(postgres_dsn)


def test_every_change_is_notified_with_its_generation(postgres_dsn: str) -> None:
    store = PostgresStore(postgres_dsn)
    with psycopg.connect(postgres_dsn, autocommit=True) as listener:
        listener.execute(f"LISTEN {NOTIFY_CHANNEL}")
        crm = catalog("crm", ["find_customer"])
        store.replace_catalog(crm, 1, stored(crm), MODEL, {})
        store.delete_catalog("crm")
        heard = [n.payload for n in listener.notifies(timeout=5, stop_after=2)]
    assert heard == ["1", "2"]
    store.close()


def test_two_writers_on_one_catalog_leave_one_whole_version(postgres_dsn: str) -> None:
    stores = [PostgresStore(postgres_dsn), PostgresStore(postgres_dsn)]
    versions = [catalog("crm", [f"a{i}" for i in range(40)]), catalog("crm", ["b0", "b1"])]
    barrier = threading.Barrier(2)

    def write(index: int) -> None:
        barrier.wait()
        for _ in range(10):
            cat = versions[index]
            stores[index].replace_catalog(cat, 1, stored(cat), MODEL, {})

    threads = [threading.Thread(target=write, args=(i,)) for i in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    [got] = stores[0].catalogs()
    names = [t.tool.name for t in got.tools]
    assert names in ([t.name for t in versions[0].tools], [t.name for t in versions[1].tools])
    assert stores[0].generation() == 20
    for s in stores:
        s.close()


def test_an_unreachable_database_is_a_clear_error() -> None:
    with pytest.raises(StoreError, match=r"cannot open postgresql://nobody@127\.0\.0\.1:1/"):
        PostgresStore("postgresql://nobody@127.0.0.1:1/none?connect_timeout=1", timeout=2)


@pytest.mark.model  # `capreg serve` loads it
def test_serve_runs_on_postgresql_and_names_an_unreachable_one(
    postgres_dsn: str, tmp_path: Path
) -> None:
    extra = ["--catalogs", str(CATALOGS)]
    store = PostgresStore(postgres_dsn)
    key = shared_keys.add_key(store, "support-agent", ["support:*"])
    store.close()
    with (
        serving(postgres_dsn, tmp_path / "serve.log", extra) as address,
        grpc.insecure_channel(address) as channel,
    ):
        stub = pb_grpc.CapabilityRegistryStub(channel)
        # Keys come from the store: without one, nothing; with one, its scopes.
        with pytest.raises(grpc.RpcError) as refused_call:
            stub.Search(pb.SearchRequest(query="open a support ticket"), timeout=30)
        assert refused_call.value.code() == grpc.StatusCode.UNAUTHENTICATED
        auth = (("authorization", f"Bearer {key}"),)
        hits = stub.Search(
            pb.SearchRequest(query="open a support ticket", limit=10), timeout=30, metadata=auth
        ).hits
        assert hits[0].id == "support/create_ticket"
        assert {h.catalog for h in hits} == {"support"}
    assert "postgresql://postgres@127.0.0.1:5432/" in (tmp_path / "serve.log").read_text()
    refused = subprocess.run(
        [
            sys.executable,
            "-m",
            "capreg.cli",
            "serve",
            "--db",
            "postgresql://nobody@127.0.0.1:1/x",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert refused.returncode != 0
    assert "cannot open postgresql://nobody@127.0.0.1:1/x" in refused.stderr


def test_tools_read_back_in_their_catalog_order_whatever_order_the_table_holds(
    tmp_path: Path,
) -> None:
    path = tmp_path / "order.db"
    store = SqliteStore(path)
    crm = catalog("crm", ["find_customer", "create_lead", "update_deal"])
    web = catalog("web", ["fetch_page", "search_web"])
    store.replace_catalog(crm, 1, stored(crm), MODEL, {})
    store.replace_catalog(web, 1, stored(web), MODEL, {})
    store.close()
    with sqlite3.connect(path) as db:  # the table's own order no longer follows positions
        db.execute("UPDATE tools SET position = 2 - position WHERE catalog = 'crm'")
    reopened = SqliteStore(path)
    got = {c.catalog.name: [t.tool.name for t in c.tools] for c in reopened.catalogs()}
    assert got == {
        "crm": ["update_deal", "create_lead", "find_customer"],
        "web": ["fetch_page", "search_web"],
    }
    reopened.close()


def test_a_store_reads_each_tool_at_its_revision_and_a_catalog_in_one_read(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    cat = catalog("c", ["a", "b"])
    tools = cat.tools
    store.replace_catalog(cat, 1, stored(cat), MODEL, {})
    [loaded] = store.catalogs()
    held = [t.tool for t in loaded.tools]
    assert all(isinstance(t, StoredToolText) for t in held)
    assert store.tool_text("c", "a", 2, loaded.incarnation) is None
    assert sorted(n for n, _, _ in store.catalog_texts("c", loaded.incarnation)) == ["a", "b"]
    PARSED.clear()
    reads: list[str] = []
    real = store.catalog_texts

    def counted(name: str, incarnation: int) -> list[tuple[str, int, str]]:
        reads.append(name)
        return real(name, incarnation)

    monkeypatch.setattr(store, "catalog_texts", counted)
    read_ahead(held)
    assert reads == ["c"]
    assert [t.description for t in held] == ["does a", "does b"]
    assert held[0] == tools[0]
    assert held[0] == loaded.tools[0].tool


def test_a_store_reads_a_plain_function_name_as_no_spelling_and_keeps_a_hashed_one(
    store: Store,
) -> None:
    cat = catalog("c", ["plain_tool", "not plain (v2)"])
    store.replace_catalog(cat, 1, stored(cat), MODEL, {})
    loads = [store.catalogs()]
    if isinstance(store, PostgresStore):
        loads.append(store.changes_since(-1).changed)
    hashed = function_name("c", "not plain (v2)")
    for [loaded] in loads:
        plain, odd = loaded.tools
        # The plain name is derived from the id when asked for; only the hashed one is held.
        assert (plain.spelling, plain.function_name) == ("", "c__plain_tool")
        assert (odd.spelling, odd.function_name) == (hashed, hashed)
