"""With `--refuse-poisoning`, a payload aimed at the model is refused wherever in the catalog
it hides, so GetSchema and GetAffordances never serve it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest

from registry.config import CatalogPolicy
from registry.core import Registry
from registry.proto import registry_pb2 as pb
from registry.proto import registry_pb2_grpc as pb_grpc
from registry.store import SqliteStore
from tests.conftest import CountingEmbedder, start_server
from tests.indexer.formats.test_lint import BYPASSES


@pytest.fixture
def refusing_registry(tmp_path: Path, embedder: CountingEmbedder) -> Iterator[Registry]:
    store = SqliteStore(tmp_path / "refusing.db")
    registry = Registry(store, embedder, policy=CatalogPolicy(refuse_poisoning=True))
    registry.load()
    yield registry
    store.close()


async def test_every_hidden_payload_is_refused_at_registration(
    refusing_registry: Registry,
) -> None:
    server, address = await start_server(refusing_registry)
    codes = {}
    try:
        async with grpc.aio.insecure_channel(address) as channel:
            stub = pb_grpc.CapabilityRegistryStub(channel)
            for where, content in sorted(BYPASSES.items()):
                request = pb.RegisterCatalogRequest(name="bypass", content=content)
                try:
                    await stub.RegisterCatalog(request)
                    codes[where] = grpc.StatusCode.OK
                except grpc.aio.AioRpcError as exc:
                    codes[where] = exc.code()
            listed = await stub.ListCatalogs(pb.ListCatalogsRequest())
    finally:
        await server.stop(None)
    assert codes == dict.fromkeys(BYPASSES, grpc.StatusCode.INVALID_ARGUMENT)
    assert list(listed.catalogs) == []


async def test_a_tool_name_with_a_bidi_override_is_refused_without_the_policy_too(
    empty_registry: Registry,
) -> None:
    tool = {
        "name": "add\u202egnp.exe",
        "description": "Adds two numbers.",
        "inputSchema": {"type": "object"},
    }
    content = json.dumps({"tools": [tool]})
    server, address = await start_server(empty_registry)
    try:
        async with grpc.aio.insecure_channel(address) as channel:
            stub = pb_grpc.CapabilityRegistryStub(channel)
            with pytest.raises(grpc.aio.AioRpcError) as caught:
                await stub.RegisterCatalog(pb.RegisterCatalogRequest(name="c", content=content))
    finally:
        await server.stop(None)
    assert caught.value.code() is grpc.StatusCode.INVALID_ARGUMENT
