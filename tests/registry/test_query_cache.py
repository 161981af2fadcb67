"""Query vectors are cached per visibility class: a caller who sees differently never gets
another caller's cached vector, so the time a search takes tells nothing of what others
asked."""

from __future__ import annotations

from pathlib import Path

import grpc

from registry.auth.keys import KeyStore, add_key
from registry.core import Registry
from registry.proto import registry_pb2 as pb
from registry.proto import registry_pb2_grpc as pb_grpc
from tests.conftest import CountingEmbedder, start_server

QUERY = "look up the home address on an employee's record"


def _as(key: str) -> tuple[tuple[str, str]]:
    return (("authorization", f"Bearer {key}"),)


async def test_another_visibility_class_never_reuses_a_cached_query_vector(
    sample_registry: Registry, embedder: CountingEmbedder, tmp_path: Path
) -> None:
    keys = tmp_path / "keys.yaml"
    hr = add_key(keys, "hr-agent", ["hr:*"])
    hr_twin = add_key(keys, "hr-twin", ["hr:*"])
    support = add_key(keys, "support-agent", ["support:read", "support:write"])
    server, address = await start_server(sample_registry, keys=KeyStore.load(keys))
    try:
        async with grpc.aio.insecure_channel(address) as channel:
            stub = pb_grpc.CapabilityRegistryStub(channel)
            await stub.Search(pb.SearchRequest(query=QUERY), metadata=_as(hr))
            encoded = embedder.calls
            # Another page of the same request: a result-cache miss, a query-vector hit.
            again = await stub.Search(pb.SearchRequest(query=QUERY, limit=3), metadata=_as(hr))
            twin = await stub.Search(pb.SearchRequest(query=QUERY, limit=4), metadata=_as(hr_twin))
            reused = embedder.calls
            await stub.Search(pb.SearchRequest(query=QUERY), metadata=_as(support))
            other = embedder.calls
    finally:
        await server.stop(None)
    assert not again.cached
    assert not twin.cached
    # The same scopes are one audience (they share cached results too).
    assert reused == encoded
    # Other scopes: the request is encoded again, as if nobody had asked it.
    assert other > reused
