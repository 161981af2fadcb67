"""Statuses become typed client errors in one place; targets and replicas; suggestions survive."""

from __future__ import annotations

import asyncio
from pathlib import Path

import grpc
import pytest

from mcp_bridge.payloads import schema_recovery
from registry.client import (
    AccessRefused,
    InvalidRequest,
    NotFound,
    RegistryCallFailed,
    RegistryClient,
    RegistryFault,
    RegistryTarget,
    RegistryUnavailable,
    channel_target,
    error_for,
    parse_suggestions,
)
from registry.core import Registry
from registry.errors import CatalogNotFound, ToolsNotFound
from registry.store import SqliteStore
from tests.conftest import CountingEmbedder, copy_db, start_server

NOT_FOUND_MESSAGE = (
    "unknown tool id: 'hr/get_employe' (did you mean: hr/get_employee, hr/search_employees); "
    "'zzz/qqq_rrr'"
)


@pytest.mark.parametrize(
    ("code", "kind"),
    [
        (grpc.StatusCode.INVALID_ARGUMENT, InvalidRequest),
        (grpc.StatusCode.NOT_FOUND, NotFound),
        (grpc.StatusCode.UNAUTHENTICATED, AccessRefused),
        (grpc.StatusCode.PERMISSION_DENIED, AccessRefused),
        (grpc.StatusCode.UNAVAILABLE, RegistryUnavailable),
        (grpc.StatusCode.DEADLINE_EXCEEDED, RegistryUnavailable),
        (grpc.StatusCode.INTERNAL, RegistryFault),
        (grpc.StatusCode.UNKNOWN, RegistryFault),
    ],
)
def test_each_status_code_becomes_one_kind_of_error(
    code: grpc.StatusCode, kind: type[RegistryCallFailed]
) -> None:
    assert type(error_for(code, "details")) is kind


def test_infrastructure_errors_drop_the_registry_details() -> None:
    details = "failed to connect to all addresses; last error: ipv4:10.0.0.7:50051"
    for code in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.INTERNAL):
        assert "10.0.0.7" not in str(error_for(code, details))


def test_suggestions_are_read_for_every_unknown_id() -> None:
    assert parse_suggestions(NOT_FOUND_MESSAGE) == {
        "hr/get_employe": ["hr/get_employee", "hr/search_employees"],
        "zzz/qqq_rrr": [],
    }


def test_a_bare_name_is_told_the_shape_of_an_id_and_the_hint_is_not_read_as_an_id() -> None:
    message = str(ToolsNotFound({"get_employe": ["hr/get_employee"], "nosuchthing": []}))
    assert message.endswith("; a tool id is <catalog>/<tool name>, as each search hit names it")
    assert parse_suggestions(message) == {"get_employe": ["hr/get_employee"], "nosuchthing": []}
    # Ids with a slash have the shape already: no hint.
    assert "<catalog>" not in str(ToolsNotFound({"hr/get_employe": []}))


def test_an_unknown_catalog_points_to_the_listing_or_to_the_shape_of_a_name() -> None:
    assert str(CatalogNotFound("nosuchthing")) == "unknown catalog 'nosuchthing' (see ListCatalogs)"
    assert "a catalog name has no slash" in str(CatalogNotFound("hr/get_employee", ["hr"]))


def test_a_not_found_message_without_ids_gives_no_suggestions() -> None:
    assert parse_suggestions("catalog gone") == {}


def test_an_unreadable_not_found_still_offers_a_search_for_each_id() -> None:
    recovery = schema_recovery(
        NotFound(grpc.StatusCode.NOT_FOUND, "tool ids missing"), ["hr/get_employe"]
    )
    assert recovery["next_calls"] == [
        {"tool": "search_tools", "arguments": {"query": "get employe"}}
    ]


def test_an_invalid_schema_request_says_how_to_pass_ids() -> None:
    recovery = schema_recovery(
        InvalidRequest(grpc.StatusCode.INVALID_ARGUMENT, "at most 50 ids per call (got 51)"),
        ["a/b"] * 51,
    )
    assert "50" in recovery["error"]
    assert "search_tools" in recovery["fix"]


@pytest.mark.parametrize(
    ("address", "target"),
    [
        ("localhost:50051", "localhost:50051"),
        ("127.0.0.1:1,127.0.0.2:2", "ipv4:127.0.0.1:1,127.0.0.2:2"),
        ("[::1]:1, [::1]:2", "ipv6:[::1]:1,[::1]:2"),
        ("ipv4:127.0.0.1:1,127.0.0.1:2", "ipv4:127.0.0.1:1,127.0.0.1:2"),
        ("dns:registry.internal:50051", "dns:registry.internal:50051"),
    ],
)
def test_one_address_or_several_replica_addresses_make_one_channel_target(
    address: str, target: str
) -> None:
    assert channel_target(address) == target


@pytest.mark.parametrize(
    "address", ["", "localhost", "a.example:1,b.example:2", "127.0.0.1:1,[::1]:2", "h:port"]
)
def test_a_malformed_target_is_refused_before_any_call(address: str) -> None:
    with pytest.raises(ValueError, match="address"):
        RegistryTarget(address=address)


async def test_calls_are_spread_over_replica_addresses(sample_registry: Registry) -> None:
    first, one = await start_server(sample_registry)
    second, two = await start_server(sample_registry)
    try:
        target = RegistryTarget(address=f"{one},{two}", timeout=10.0)
        with RegistryClient(target) as client:
            replies = [await asyncio.to_thread(client.list_catalogs) for _ in range(4)]
        await second.stop(None)
        with RegistryClient(target) as client:
            survivor = await asyncio.to_thread(client.list_catalogs)
    finally:
        await first.stop(None)
        await second.stop(None)
    assert all(r.catalogs for r in replies)
    assert survivor.catalogs == replies[0].catalogs


async def test_a_read_a_replica_refuses_as_unavailable_is_retried_on_another(
    sample_registry: Registry, sample_db: Path, tmp_path: Path, embedder: CountingEmbedder
) -> None:
    loading = Registry(SqliteStore(copy_db(sample_db, tmp_path)), embedder)
    loading.load()
    loading.reader.hold(lambda: "3 of 9 catalog files registered")
    first, one = await start_server(loading)
    second, two = await start_server(sample_registry)
    try:
        target = RegistryTarget(address=f"{one},{two}", timeout=10.0)
        with RegistryClient(target) as client:
            replies = [
                await asyncio.to_thread(client.search, "open a support ticket") for _ in range(6)
            ]
    finally:
        await first.stop(None)
        await second.stop(None)
    # Half the calls reached the loading replica first; none failed.
    assert all(r.hits[0].id == "support/create_ticket" for r in replies)
