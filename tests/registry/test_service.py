"""The gRPC service over a real server on loopback: one test per status code and the API."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import grpc
import numpy as np
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc
from numpy.typing import NDArray

from registry.core import Registry
from registry.proto import registry_pb2 as pb
from registry.proto import registry_pb2_grpc as pb_grpc
from registry.store import SqliteStore
from tests.conftest import DATA, CountingEmbedder, start_server

MINI = (DATA / "mini.yaml").read_text()
Stub = pb_grpc.CapabilityRegistryStub
if TYPE_CHECKING:  # the async stub type exists only in the generated .pyi
    from registry.proto.registry_pb2_grpc import CapabilityRegistryAsyncStub as AsyncStub


async def _code(call: object) -> grpc.StatusCode:
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await call  # type: ignore[misc]  # a grpc.aio unary call is awaitable
    return caught.value.code()


async def test_search_returns_compact_hits_with_the_next_call(sample_stub: AsyncStub) -> None:
    request = pb.SearchRequest(query="open a support ticket for a customer", limit=5)
    reply = await sample_stub.Search(request)
    assert len(reply.hits) == 5
    top = reply.hits[0]
    assert top.id == "support/create_ticket"
    assert (top.name, top.catalog) == ("create_ticket", "support")
    assert 0 < len(top.summary) <= 200
    assert list(top.next_call.ids) == [top.id]
    assert reply.index_generation > 0
    assert not reply.weak_match
    assert reply.weak_reason == pb.WEAK_REASON_UNSPECIFIED
    assert not hasattr(top, "input_schema")
    assert 0 < top.similarity <= 1


async def test_a_default_search_returns_the_confident_set(sample_stub: AsyncStub) -> None:
    # ("check the status of ticket 4411, ..." lost get_ticket to update_ticket with the query
    # adapter: "status" pulls toward the tools that change a ticket's status; decision 0057.)
    query = "get the details of ticket 4411, then email the customer a summary"
    reply = await sample_stub.Search(pb.SearchRequest(query=query))
    ids = [h.id for h in reply.hits]
    # Two intents, one tool each: the status lookup and something for the second clause.
    assert len(ids) == 2
    assert "support/get_ticket" in ids


async def test_get_schema_returns_full_schemas_in_request_order(sample_stub: AsyncStub) -> None:
    ids = ["support/create_ticket", "hr/get_employee"]
    reply = await sample_stub.GetSchema(pb.GetSchemaRequest(ids=ids))
    assert [t.id for t in reply.tools] == ids
    ticket = reply.tools[0]
    assert json.loads(ticket.input_schema)["type"] == "object"
    assert ticket.function_name == "support__create_ticket"
    assert ticket.catalog_version
    assert isinstance(json.loads(ticket.annotations), dict)


async def test_next_call_of_a_hit_can_be_sent_as_is(sample_stub: AsyncStub) -> None:
    reply = await sample_stub.Search(pb.SearchRequest(query="post a journal entry", limit=1))
    schema = await sample_stub.GetSchema(reply.hits[0].next_call)
    assert schema.tools[0].id == reply.hits[0].id


async def test_register_list_and_delete_round_trip(sample_stub: AsyncStub) -> None:
    added = await sample_stub.RegisterCatalog(pb.RegisterCatalogRequest(content=MINI))
    assert (added.catalog, added.added, added.version, added.revision) == ("mini", 3, "1.0.0", 1)
    listed = await sample_stub.ListCatalogs(pb.ListCatalogsRequest())
    mini = next(c for c in listed.catalogs if c.name == "mini")
    assert (mini.tool_count, mini.title) == (3, "Mini")
    assert listed.index_generation == added.index_generation
    deleted = await sample_stub.DeleteCatalog(pb.DeleteCatalogRequest(name="mini"))
    assert deleted.removed == 3
    assert deleted.index_generation > added.index_generation


async def test_malformed_request_is_invalid_argument(sample_stub: AsyncStub) -> None:
    assert await _code(sample_stub.Search(pb.SearchRequest(query=""))) is (
        grpc.StatusCode.INVALID_ARGUMENT
    )
    assert await _code(sample_stub.Search(pb.SearchRequest(query="x", limit=51))) is (
        grpc.StatusCode.INVALID_ARGUMENT
    )
    assert await _code(sample_stub.GetSchema(pb.GetSchemaRequest())) is (
        grpc.StatusCode.INVALID_ARGUMENT
    )


async def test_bad_catalog_is_invalid_argument_and_changes_nothing(sample_stub: AsyncStub) -> None:
    before = await sample_stub.ListCatalogs(pb.ListCatalogsRequest())
    bad = MINI.replace("type: object", "type: array", 1)
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await sample_stub.RegisterCatalog(pb.RegisterCatalogRequest(content=bad))
    assert caught.value.code() is grpc.StatusCode.INVALID_ARGUMENT
    assert "tools[0] 'get_weather_forecast'.input_schema" in (caught.value.details() or "")
    after = await sample_stub.ListCatalogs(pb.ListCatalogsRequest())
    assert after == before


async def test_unknown_id_is_not_found_with_suggestions(sample_stub: AsyncStub) -> None:
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await sample_stub.GetSchema(pb.GetSchemaRequest(ids=["hr/get_employe"]))
    assert caught.value.code() is grpc.StatusCode.NOT_FOUND
    assert "hr/get_employee" in (caught.value.details() or "")


async def test_deleting_an_unknown_catalog_is_not_found(sample_stub: AsyncStub) -> None:
    code = await _code(sample_stub.DeleteCatalog(pb.DeleteCatalogRequest(name="nope")))
    assert code is grpc.StatusCode.NOT_FOUND


async def test_search_with_nothing_registered_is_ok_and_empty(empty_registry: Registry) -> None:
    server, address = await start_server(empty_registry)
    async with grpc.aio.insecure_channel(address) as channel:
        reply = await Stub(channel).Search(pb.SearchRequest(query="anything"))
    await server.stop(None)
    assert list(reply.hits) == []
    assert reply.weak_match
    assert reply.weak_reason == pb.WEAK_REASON_NOTHING_ELIGIBLE


async def test_requests_while_the_index_loads_are_unavailable(
    tmp_path: Path, embedder: CountingEmbedder
) -> None:
    registry = Registry(SqliteStore(tmp_path / "r.db"), embedder)
    server, address = await start_server(registry)
    async with grpc.aio.insecure_channel(address) as channel:
        code = await _code(Stub(channel).Search(pb.SearchRequest(query="x")))
        health = await health_pb2_grpc.HealthStub(channel).Check(
            health_pb2.HealthCheckRequest(service="capreg.v1.CapabilityRegistry")
        )
    await server.stop(None)
    assert code is grpc.StatusCode.UNAVAILABLE
    assert health.status == health_pb2.HealthCheckResponse.NOT_SERVING


class BrokenEmbedder(CountingEmbedder):
    """Fails every query encode: the reason is to prove unexpected errors become INTERNAL
    without leaking their text."""

    def encode(self, texts: Sequence[str], *, progress: bool = False) -> NDArray[np.float32]:
        raise RuntimeError("secret internal detail")


async def test_unexpected_failure_is_internal_and_leaks_nothing(
    sample_db: Path, tmp_path: Path, embedder: CountingEmbedder
) -> None:
    from tests.conftest import copy_db

    registry = Registry(SqliteStore(copy_db(sample_db, tmp_path)), BrokenEmbedder(embedder.inner))
    registry.load()
    server, address = await start_server(registry)
    async with grpc.aio.insecure_channel(address) as channel:
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await Stub(channel).Search(pb.SearchRequest(query="x"))
    await server.stop(None)
    assert caught.value.code() is grpc.StatusCode.INTERNAL
    assert "secret" not in (caught.value.details() or "")


async def test_health_and_reflection_are_served(sample_registry: Registry) -> None:
    server, address = await start_server(sample_registry)
    async with grpc.aio.insecure_channel(address) as channel:
        health = await health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest())
        reflection = reflection_pb2_grpc.ServerReflectionStub(channel)
        responses = reflection.ServerReflectionInfo(
            iter([reflection_pb2.ServerReflectionRequest(list_services="")])
        )
        services = [s.name async for r in responses for s in r.list_services_response.service]
    await server.stop(None)
    assert health.status == health_pb2.HealthCheckResponse.SERVING
    assert "capreg.v1.CapabilityRegistry" in services


async def test_an_oversized_id_is_refused_before_any_lookup(sample_stub: AsyncStub) -> None:
    ids = ["support/" + "x" * 800_000] * 3
    assert await _code(sample_stub.GetSchema(pb.GetSchemaRequest(ids=ids))) == (
        grpc.StatusCode.INVALID_ARGUMENT
    )


async def test_fifty_unknown_ids_are_not_found_within_the_message_budget(
    sample_stub: AsyncStub,
) -> None:
    ids = [f"support/{'unknown_tool_' * 10}{i}" for i in range(50)]
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await sample_stub.GetSchema(pb.GetSchemaRequest(ids=ids))
    assert caught.value.code() == grpc.StatusCode.NOT_FOUND
    assert len(caught.value.details() or "") <= 2_000


async def test_an_oversized_catalog_filter_is_refused(sample_stub: AsyncStub) -> None:
    huge = pb.SearchRequest(query="open a ticket", catalogs=["x" * 1_000_000])
    many = pb.SearchRequest(query="open a ticket", catalogs=[f"c{i}" for i in range(51)])
    for request in (huge, many):
        assert await _code(sample_stub.Search(request)) == grpc.StatusCode.INVALID_ARGUMENT


async def test_oversized_names_in_writes_are_refused(sample_stub: AsyncStub) -> None:
    register = pb.RegisterCatalogRequest(name="x" * 100_000, content=MINI)
    bad_format = pb.RegisterCatalogRequest(name="mini", content=MINI, format="y" * 100)
    delete = pb.DeleteCatalogRequest(name="x" * 100_000)
    assert await _code(sample_stub.RegisterCatalog(register)) == grpc.StatusCode.INVALID_ARGUMENT
    assert await _code(sample_stub.RegisterCatalog(bad_format)) == (
        grpc.StatusCode.INVALID_ARGUMENT
    )
    assert await _code(sample_stub.DeleteCatalog(delete)) == grpc.StatusCode.INVALID_ARGUMENT


async def test_an_oversized_query_is_refused_naming_the_field(sample_stub: AsyncStub) -> None:
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await sample_stub.Search(pb.SearchRequest(query=" " * 40_000 + "ticket"))
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "query" in (caught.value.details() or "")


@pytest.mark.parametrize(
    "content",
    [
        (DATA / "alias_bomb.yaml").read_text(),
        "[" * 5_000 + "]" * 5_000,
        '{"capreg": 1, "name": "x\\ud800", "description": "d", "tools": []}',
    ],
    ids=["alias-bomb", "deep-json", "lone-surrogate"],
)
async def test_hostile_catalog_text_is_invalid_argument_not_internal(
    sample_stub: AsyncStub, content: str
) -> None:
    request = pb.RegisterCatalogRequest(name="hostile", content=content)
    assert await _code(sample_stub.RegisterCatalog(request)) == grpc.StatusCode.INVALID_ARGUMENT


async def test_a_weak_answer_over_grpc_says_no_tool_is_close(sample_stub: AsyncStub) -> None:
    reply = await sample_stub.Search(pb.SearchRequest(query="bake a sourdough loaf"))
    assert reply.weak_match
    assert reply.weak_reason == pb.WEAK_REASON_NO_CLOSE_TOOL
