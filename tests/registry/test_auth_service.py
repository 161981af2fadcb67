"""API keys and scopes over a real gRPC server: codes, isolation, hot reload, TLS."""

from __future__ import annotations

import re
import shutil
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import grpc
import pytest

from registry.auth.keys import KeyStore, add_key, revoke
from registry.config import ServerConfig
from registry.core import Registry
from registry.proto import registry_pb2 as pb
from registry.proto import registry_pb2_grpc as pb_grpc
from tests.conftest import DATA, self_signed_certificate, start_server

if TYPE_CHECKING:  # the async stub type exists only in the generated .pyi
    from registry.proto.registry_pb2_grpc import CapabilityRegistryAsyncStub as AsyncStub

MINI = (DATA / "mini.yaml").read_text()


@dataclass
class Secured:
    stub: AsyncStub
    keys_file: Path
    admin: str
    hr: str
    support: str


def _auth(key: str) -> tuple[tuple[str, str | bytes], ...]:
    return (("authorization", f"Bearer {key}"),)


@pytest.fixture
async def secured(sample_registry: Registry, tmp_path: Path) -> AsyncIterator[Secured]:
    keys_file = tmp_path / "keys.yaml"
    admin = add_key(keys_file, "ops", ["registry:admin", "*"])
    hr = add_key(keys_file, "hr-agent", ["hr:*"])
    support = add_key(keys_file, "support-agent", ["support:read", "support:write"])
    server, address = await start_server(sample_registry, keys=KeyStore.load(keys_file))
    async with grpc.aio.insecure_channel(address) as channel:
        yield Secured(pb_grpc.CapabilityRegistryStub(channel), keys_file, admin, hr, support)
    await server.stop(None)


async def _code(call: object) -> grpc.StatusCode:
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await call  # type: ignore[misc]  # a grpc.aio unary call is awaitable
    return caught.value.code()


async def test_missing_key_is_unauthenticated(secured: Secured) -> None:
    code = await _code(secured.stub.Search(pb.SearchRequest(query="x")))
    assert code is grpc.StatusCode.UNAUTHENTICATED


async def test_unknown_key_is_unauthenticated(secured: Secured) -> None:
    forged = secured.hr[:-4] + "AAAA"
    call = secured.stub.ListCatalogs(pb.ListCatalogsRequest(), metadata=_auth(forged))
    assert await _code(call) is grpc.StatusCode.UNAUTHENTICATED


async def test_registering_without_the_admin_scope_is_permission_denied(secured: Secured) -> None:
    request = pb.RegisterCatalogRequest(content=MINI)
    call = secured.stub.RegisterCatalog(request, metadata=_auth(secured.hr))
    assert await _code(call) is grpc.StatusCode.PERMISSION_DENIED
    delete = secured.stub.DeleteCatalog(
        pb.DeleteCatalogRequest(name="hr"), metadata=_auth(secured.hr)
    )
    assert await _code(delete) is grpc.StatusCode.PERMISSION_DENIED
    reply = await secured.stub.RegisterCatalog(request, metadata=_auth(secured.admin))
    assert reply.added == 3


async def test_two_agents_see_different_tools_for_the_same_query(secured: Secured) -> None:
    request = pb.SearchRequest(query="look up a customer's details", limit=10)
    hr = await secured.stub.Search(request, metadata=_auth(secured.hr))
    support = await secured.stub.Search(request, metadata=_auth(secured.support))
    assert len(hr.hits) == len(support.hits) == 10
    assert {h.catalog for h in hr.hits} == {"hr"}
    assert {h.catalog for h in support.hits} == {"support"}


async def test_invisible_schema_is_not_found_like_an_unknown_one(secured: Secured) -> None:
    async def details(tool_id: str) -> tuple[grpc.StatusCode, str]:
        call = secured.stub.GetSchema(
            pb.GetSchemaRequest(ids=[tool_id]), metadata=_auth(secured.hr)
        )
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await call
        message = caught.value.details() or ""
        # The suggestions depend on the text of the id; the rest must not differ at all.
        shape = re.fullmatch(r"unknown tool id: '(.*)'(?: \(did you mean: (.*)\))?", message)
        assert shape is not None, message
        assert shape.group(1) == tool_id
        for suggestion in (shape.group(2) or "").split(", "):
            assert not suggestion or suggestion.startswith("hr/")
        return caught.value.code(), "shape ok"

    assert await details("support/create_ticket") == await details("support/no_such_tool")
    assert await details("support/create_ticket") == (grpc.StatusCode.NOT_FOUND, "shape ok")
    visible = await secured.stub.GetSchema(
        pb.GetSchemaRequest(ids=["support/create_ticket"]), metadata=_auth(secured.support)
    )
    assert visible.tools[0].id == "support/create_ticket"


async def test_listing_shows_only_visible_catalogs(secured: Secured) -> None:
    reply = await secured.stub.ListCatalogs(pb.ListCatalogsRequest(), metadata=_auth(secured.hr))
    assert [c.name for c in reply.catalogs] == ["hr"]


async def test_key_changes_apply_without_a_restart(secured: Secured) -> None:
    fresh = add_key(secured.keys_file, "late-agent", ["crm:read"])
    reply = await secured.stub.ListCatalogs(pb.ListCatalogsRequest(), metadata=_auth(fresh))
    assert [c.name for c in reply.catalogs] == ["crm"]
    revoke(secured.keys_file, "hr-agent")
    call = secured.stub.ListCatalogs(pb.ListCatalogsRequest(), metadata=_auth(secured.hr))
    assert await _code(call) is grpc.StatusCode.UNAUTHENTICATED


@pytest.mark.skipif(shutil.which("openssl") is None, reason="needs the openssl command")
async def test_tls_serves_clients_that_trust_the_certificate(
    sample_registry: Registry, tmp_path: Path
) -> None:
    cert, key = self_signed_certificate(tmp_path)
    config = ServerConfig(listen="127.0.0.1:0", tls_cert=cert, tls_key=key)
    server, address = await start_server(sample_registry, config)
    credentials = grpc.ssl_channel_credentials(root_certificates=cert.read_bytes())
    async with grpc.aio.secure_channel(address, credentials) as channel:
        reply = await pb_grpc.CapabilityRegistryStub(channel).ListCatalogs(pb.ListCatalogsRequest())
    async with grpc.aio.insecure_channel(address) as plain:
        refused = await _code(
            pb_grpc.CapabilityRegistryStub(plain).ListCatalogs(pb.ListCatalogsRequest())
        )
    await server.stop(None)
    assert len(reply.catalogs) == 9
    assert refused is grpc.StatusCode.UNAVAILABLE
