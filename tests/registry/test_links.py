"""Links over the real service: GetSchema carries them with their next call, a restart keeps
them, and a caller never learns of a tool it may not see through one."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import grpc
import pytest
import yaml

from registry.auth.keys import KeyStore, add_key
from registry.auth.scopes import Grants
from registry.core import Registry
from registry.proto import registry_pb2 as pb
from registry.proto import registry_pb2_grpc as pb_grpc
from registry.store import SqliteStore
from tests.conftest import CountingEmbedder, start_server

if TYPE_CHECKING:  # the async stub type exists only in the generated .pyi
    from registry.proto.registry_pb2_grpc import CapabilityRegistryAsyncStub as AsyncStub

CASE_ID = {"type": "object", "properties": {"case_id": {"type": "string"}}}
NEEDS_CASE = {**CASE_ID, "required": ["case_id"]}


def native(name: str, tools: list[dict[str, Any]]) -> str:
    return yaml.safe_dump(
        {
            "capreg": 1,
            "name": name,
            "description": f"The {name} tools.",
            "default_scopes": [f"{name}:read"],
            "tools": [{"description": f"Does {t['name']}.", **t} for t in tools],
        }
    )


DESK = native(
    "desk",
    [
        {
            "name": "open_case",
            "input_schema": {"type": "object"},
            "output_schema": CASE_ID,
            "links": [
                {"rel": "seal", "target": "vault/seal_case", "arguments": {"case_id": "$.case_id"}},
                {"rel": "haunt", "target": "ghost/nothing"},
            ],
        },
        {"name": "get_case", "input_schema": NEEDS_CASE, "output_schema": CASE_ID},
        {"name": "update_case", "input_schema": NEEDS_CASE},
        {"name": "secret_note", "input_schema": NEEDS_CASE, "required_scopes": ["desk:secret"]},
    ],
)
VAULT = native("vault", [{"name": "seal_case", "input_schema": NEEDS_CASE}])


def registry_of(store: SqliteStore, embedder: CountingEmbedder, *contents: str) -> Registry:
    registry = Registry(store, embedder)
    registry.load()
    for content in contents:
        registry.register(content)
    return registry


@dataclass
class Pair:
    """The same desk catalog in two registries: with the vault catalog, and without it."""

    with_vault: AsyncStub
    without_vault: AsyncStub
    desk_key: str  # desk:read only
    full_key: str  # every desk scope and the vault


@pytest.fixture
def registries(tmp_path: Path, embedder: CountingEmbedder) -> Iterator[tuple[Registry, Registry]]:
    stores = [SqliteStore(tmp_path / "both.db"), SqliteStore(tmp_path / "desk.db")]
    yield registry_of(stores[0], embedder, DESK, VAULT), registry_of(stores[1], embedder, DESK)
    for store in stores:
        store.close()


@pytest.fixture
async def pair(registries: tuple[Registry, Registry], tmp_path: Path) -> AsyncIterator[Pair]:
    keys_file = tmp_path / "keys.yaml"
    desk_key = add_key(keys_file, "desk-agent", ["desk:read"])
    full_key = add_key(keys_file, "auditor", ["desk:*", "vault:read"])
    servers = [await start_server(r, keys=KeyStore.load(keys_file)) for r in registries]
    (first, first_address), (second, second_address) = servers
    async with (
        grpc.aio.insecure_channel(first_address) as one,
        grpc.aio.insecure_channel(second_address) as two,
    ):
        yield Pair(
            pb_grpc.CapabilityRegistryStub(one),
            pb_grpc.CapabilityRegistryStub(two),
            desk_key,
            full_key,
        )
    await first.stop(None)
    await second.stop(None)


def _auth(key: str) -> tuple[tuple[str, str | bytes], ...]:
    return (("authorization", f"Bearer {key}"),)


async def _schema(stub: AsyncStub, key: str, tool_id: str) -> pb.GetSchemaResponse:
    request = pb.GetSchemaRequest(ids=[tool_id])
    reply: pb.GetSchemaResponse = await stub.GetSchema(request, metadata=_auth(key))
    return reply


async def test_get_schema_returns_declared_then_derived_links_with_their_next_call(
    pair: Pair,
) -> None:
    reply = await _schema(pair.with_vault, pair.full_key, "desk/open_case")
    [schema] = reply.tools
    links = [
        (link.target_id, link.rel, link.derived, dict(link.arguments)) for link in schema.links
    ]
    assert links == [
        ("vault/seal_case", "seal", False, {"case_id": "$.case_id"}),
        ("desk/get_case", "feeds", True, {"case_id": "$.case_id"}),
        ("desk/secret_note", "feeds", True, {"case_id": "$.case_id"}),
        ("desk/update_case", "feeds", True, {"case_id": "$.case_id"}),
    ]
    for link in schema.links:
        assert list(link.next_call.ids) == [link.target_id]
        # The next call works as given.
        [target] = (
            await pair.with_vault.GetSchema(link.next_call, metadata=_auth(pair.full_key))
        ).tools
        assert target.id == link.target_id


async def test_a_link_to_a_tool_the_caller_may_not_see_is_left_out(pair: Pair) -> None:
    reply = await _schema(pair.with_vault, pair.desk_key, "desk/open_case")
    assert [link.target_id for link in reply.tools[0].links] == [
        "desk/get_case",
        "desk/update_case",
    ]


async def test_links_are_indistinguishable_from_a_registry_without_the_hidden_catalog(
    pair: Pair,
) -> None:
    for tool_id in ("desk/open_case", "desk/get_case", "desk/update_case"):
        seen = await _schema(pair.with_vault, pair.desk_key, tool_id)
        absent = await _schema(pair.without_vault, pair.desk_key, tool_id)
        assert seen == absent, tool_id


async def test_a_crud_family_is_linked_in_get_schema(pair: Pair) -> None:
    reply = await _schema(pair.with_vault, pair.desk_key, "desk/get_case")
    [link] = reply.tools[0].links
    assert (link.target_id, link.rel, link.derived) == ("desk/update_case", "update", True)
    assert dict(link.arguments) == {"case_id": "$.case_id"}


def test_links_survive_a_restart_declared_from_the_store_and_derived_again(
    registries: tuple[Registry, Registry], tmp_path: Path, embedder: CountingEmbedder
) -> None:
    both, _ = registries
    viewer = Grants.parse(["desk:*", "vault:read"])
    before = both.schemas(["desk/open_case", "desk/get_case"], viewer)
    store = SqliteStore(tmp_path / "both.db")
    try:
        after = registry_of(store, embedder).schemas(["desk/open_case", "desk/get_case"], viewer)
    finally:
        store.close()
    assert [entry.links for entry in after] == [entry.links for entry in before]
    assert after[0].links[0].target_id == "vault/seal_case"
    assert not after[0].links[0].derived


def test_deleting_the_target_catalog_drops_the_link_at_once(
    registries: tuple[Registry, Registry],
) -> None:
    both, _ = registries
    viewer = Grants.parse(["desk:*", "vault:read"])
    assert both.schemas(["desk/open_case"], viewer)[0].links[0].target_id == "vault/seal_case"
    both.delete("vault")
    [entry] = both.schemas(["desk/open_case"], viewer)
    assert "vault/seal_case" not in {link.target_id for link in entry.links}
