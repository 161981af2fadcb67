"""Foreign catalog formats through a real gRPC server: registered, served, or refused whole."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

import grpc
import pytest
import yaml

from registry.core import Registry
from registry.proto import registry_pb2 as pb
from registry.proto import registry_pb2_grpc as pb_grpc
from tests.conftest import DATA, CountingEmbedder, start_server

if TYPE_CHECKING:  # the async stub type exists only in the generated .pyi
    from registry.proto.registry_pb2_grpc import CapabilityRegistryAsyncStub as AsyncStub

FIXTURES = {
    "petstore": (DATA / "petstore.yaml", 7),
    "commerce": (DATA / "commerce.yaml", 8),
    "assistant": (DATA / "openai_tools.json", 4),
    "claude": (DATA / "anthropic_tools.json", 3),
}


@pytest.fixture
async def stub(empty_registry: Registry) -> AsyncIterator[AsyncStub]:
    server, address = await start_server(empty_registry)
    async with grpc.aio.insecure_channel(address) as channel:
        yield pb_grpc.CapabilityRegistryStub(channel)
    await server.stop(None)


async def _register(stub: AsyncStub, name: str, content: str) -> pb.RegisterCatalogResponse:
    reply: pb.RegisterCatalogResponse = await stub.RegisterCatalog(
        pb.RegisterCatalogRequest(name=name, content=content)
    )
    return reply


async def test_every_format_registers_and_is_searchable(
    stub: AsyncStub, embedder: CountingEmbedder
) -> None:
    for name, (path, count) in FIXTURES.items():
        reply = await _register(stub, name, path.read_text())
        assert (reply.catalog, reply.added, reply.embedded) == (name, count, count)
    assert embedder.texts == sum(count for _, count in FIXTURES.values())
    listed = await stub.ListCatalogs(pb.ListCatalogsRequest())
    assert {c.name: c.tool_count for c in listed.catalogs} == {
        name: count for name, (_, count) in FIXTURES.items()
    }
    found = await stub.Search(pb.SearchRequest(query="refund a paid order", limit=1))
    assert found.hits[0].id == "commerce/refundOrder"
    found = await stub.Search(pb.SearchRequest(query="what's the share price of AAPL", limit=1))
    assert found.hits[0].id == "claude/get_stock_price"


async def test_get_schema_keeps_what_a_caller_needs_from_an_openapi_operation(
    stub: AsyncStub,
) -> None:
    await _register(stub, "petstore", (DATA / "petstore.yaml").read_text())
    reply = await stub.GetSchema(pb.GetSchemaRequest(ids=["petstore/getPetById"]))
    (tool,) = reply.tools
    assert tool.function_name == "petstore__getPetById"
    assert json.loads(tool.input_schema)["required"] == ["petId"]
    assert json.loads(tool.output_schema)["required"] == ["name", "photoUrls"]
    binding = json.loads(tool.annotations)["x-openapi"]
    assert binding["server"] == "https://petstore3.example.com/api/v3"
    assert (binding["method"], binding["path"]) == ("GET", "/pet/{petId}")


async def test_reregistering_an_unchanged_spec_embeds_nothing(
    stub: AsyncStub, embedder: CountingEmbedder
) -> None:
    content = (DATA / "commerce.yaml").read_text()
    first = await _register(stub, "commerce", content)
    embedded = embedder.texts
    again = await _register(stub, "commerce", content)
    assert (again.unchanged, again.embedded, again.revision) == (8, 0, first.revision)
    assert embedder.texts == embedded


@pytest.mark.parametrize(
    ("name", "content", "fragment"),
    [
        (
            "petstore",
            "openapi: 3.0.3\npaths: {/x: {get: {parameters: [{name: q}]}}}",
            "paths./x.get",
        ),
        ("assistant", json.dumps([{"type": "function", "function": {"name": 5}}]), "[0].function"),
        ("claude", json.dumps([{"name": "a", "input_schema": {"type": "string"}}]), "[0] 'a'"),
    ],
)
async def test_a_malformed_file_is_invalid_argument_and_changes_nothing(
    stub: AsyncStub, embedder: CountingEmbedder, name: str, content: str, fragment: str
) -> None:
    path, count = FIXTURES[name]
    await _register(stub, name, path.read_text())
    before = await stub.ListCatalogs(pb.ListCatalogsRequest())
    embedded = embedder.texts
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await _register(stub, name, content)
    assert caught.value.code() is grpc.StatusCode.INVALID_ARGUMENT
    assert fragment in (caught.value.details() or "")
    assert await stub.ListCatalogs(pb.ListCatalogsRequest()) == before
    assert embedder.texts == embedded
    assert before.catalogs[0].tool_count == count


async def test_a_malformed_new_catalog_is_not_stored(stub: AsyncStub) -> None:
    document = yaml.safe_load((DATA / "petstore.yaml").read_text())
    document["paths"]["/pet"]["put"]["requestBody"]["$ref"] = "#/components/requestBodies/Nope"
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await _register(stub, "petstore", json.dumps(document, default=str))
    assert caught.value.code() is grpc.StatusCode.INVALID_ARGUMENT
    listed = await stub.ListCatalogs(pb.ListCatalogsRequest())
    assert list(listed.catalogs) == []
