"""A small catalog that repeats one long string through YAML aliases is refused while it is
parsed, before anything expands it."""

from __future__ import annotations

import tracemalloc

import grpc
import pytest

from registry.core import Registry
from registry.proto import registry_pb2 as pb
from registry.proto import registry_pb2_grpc as pb_grpc
from tests.conftest import start_server
from tests.indexer.test_documents import one_string_many_aliases

# The bound for its 1 MB file (one 1 MB string, 1,000 aliases).
MAX_COST_BYTES = 500 * 1024 * 1024


async def test_a_1_mb_alias_file_costs_far_less_than_its_expansion(
    empty_registry: Registry,
) -> None:
    content = one_string_many_aliases(chars=1_000_000, aliases=1_000)
    server, address = await start_server(empty_registry)
    try:
        async with grpc.aio.insecure_channel(address) as channel:
            stub = pb_grpc.CapabilityRegistryStub(channel)
            tracemalloc.start()
            try:
                with pytest.raises(grpc.aio.AioRpcError) as caught:
                    await stub.RegisterCatalog(
                        pb.RegisterCatalogRequest(name="aliased", content=content)
                    )
                _, peak = tracemalloc.get_traced_memory()
            finally:
                tracemalloc.stop()
    finally:
        await server.stop(None)
    assert peak < MAX_COST_BYTES, f"{peak / 2**20:.0f} MiB"
    assert caught.value.code() is grpc.StatusCode.INVALID_ARGUMENT
    assert "characters" in (caught.value.details() or "")
