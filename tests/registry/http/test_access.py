"""Keys and scopes over HTTP: the same bearer keys and scopes as gRPC, the same isolation (an
invisible catalog or id is indistinguishable from an unknown one) and the same throttling of
failed logins, counted across both transports."""

from __future__ import annotations

from typing import Any

import grpc
import pytest
import yaml

from registry.proto import registry_pb2 as pb
from tests.registry.http.conftest import Served
from tests.registry.http.test_errors import refusal

VAULT = yaml.safe_dump(
    {
        "capreg": 1,
        "name": "vault",
        "description": "Ticket tools nobody but the admin may see.",
        "default_scopes": ["vault:read"],
        "tools": [
            {
                "name": "open_support_ticket",
                "description": "Opens a support ticket for a customer, in the vault.",
                "input_schema": {"type": "object"},
            }
        ],
    }
)
QUERY = "open a support ticket for a customer"


async def test_a_call_without_a_key_is_401_and_with_a_forged_one_too(secured_api: Served) -> None:
    missing = refusal(await secured_api.http.get("/v1/catalogs"), 401)
    forged = await secured_api.http.get(
        "/v1/catalogs", headers={"authorization": "Bearer capreg_00000000_forged"}
    )
    assert missing["code"] == "UNAUTHENTICATED"
    assert "Bearer" in missing["message"]
    assert refusal(forged, 401)["code"] == "UNAUTHENTICATED"


async def test_a_read_only_key_cannot_change_catalogs(secured_api: Served) -> None:
    reader = secured_api.auth("reader")
    put = await secured_api.http.put("/v1/catalogs/vault", content=VAULT, headers=reader)
    batch = await secured_api.http.post(
        "/v1/catalogs:batch", json={"catalogs": [{"content": VAULT}]}, headers=reader
    )
    delete = await secured_api.http.delete("/v1/catalogs/hr", headers=reader)
    for response in (put, batch, delete):
        assert refusal(response, 403)["code"] == "PERMISSION_DENIED"
    listed = await secured_api.http.get("/v1/catalogs", headers=secured_api.auth("admin"))
    assert "hr" in {c["name"] for c in listed.json()["catalogs"]}


async def test_a_read_only_key_never_sees_a_catalog_outside_its_scopes(
    secured_api: Served,
) -> None:
    admin, reader = secured_api.auth("admin"), secured_api.auth("reader")
    put = await secured_api.http.put("/v1/catalogs/vault", content=VAULT, headers=admin)
    assert put.status_code == 200
    admin_hits = await secured_api.http.get(
        "/v1/search", params={"q": QUERY, "limit": 50}, headers=admin
    )
    assert "vault/open_support_ticket" in {h["id"] for h in admin_hits.json()["hits"]}
    hits = await secured_api.http.get(
        "/v1/search", params={"q": QUERY, "limit": 50}, headers=reader
    )
    listed = await secured_api.http.get("/v1/catalogs", headers=reader)
    assert hits.status_code == listed.status_code == 200
    assert hits.json()["hits"]
    assert all(not h["id"].startswith("vault/") for h in hits.json()["hits"])
    assert "vault" not in {c["name"] for c in listed.json()["catalogs"]}


async def test_an_invisible_id_or_catalog_is_refused_exactly_as_an_unknown_one(
    secured_api: Served,
) -> None:
    reader = secured_api.auth("reader")
    admin = secured_api.auth("admin")
    await secured_api.http.put("/v1/catalogs/vault", content=VAULT, headers=admin)

    async def schema_error(tool_id: str) -> dict[str, Any]:
        response = await secured_api.http.post(
            "/v1/schemas", json={"ids": [tool_id]}, headers=reader
        )
        return refusal(response, 404)

    async def filter_error(catalog: str) -> dict[str, Any]:
        params = {"q": QUERY, "catalog": catalog}
        response = await secured_api.http.get("/v1/search", params=params, headers=reader)
        return refusal(response, 404)

    hidden = await schema_error("vault/open_support_ticket")
    unknown = await schema_error("vault/open_support_tickez")
    assert hidden == {
        **unknown,
        "message": unknown["message"].replace("tickez", "ticket"),
        "suggestions": {
            "vault/open_support_ticket": unknown["suggestions"]["vault/open_support_tickez"]
        },
    }
    assert not [s for s in hidden["suggestions"]["vault/open_support_ticket"] if "vault" in s]
    hidden, unknown = await filter_error("vault"), await filter_error("vaulx")
    assert hidden == {
        **unknown,
        "message": unknown["message"].replace("vaulx", "vault"),
        "suggestions": {"vault": unknown["suggestions"]["vaulx"]},
    }


async def test_failed_logins_are_throttled_across_both_transports(secured_api: Served) -> None:
    forged = {"authorization": "Bearer capreg_00000000_forged"}
    for _ in range(20):
        refusal(await secured_api.http.get("/v1/catalogs", headers=forged), 401)
    throttled = refusal(await secured_api.http.get("/v1/catalogs", headers=forged), 429)
    assert "too many failed authentications" in throttled["message"]
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await secured_api.stub.ListCatalogs(pb.ListCatalogsRequest())
    assert caught.value.code() is grpc.StatusCode.RESOURCE_EXHAUSTED


async def test_the_api_description_needs_a_key_when_keys_are_configured(
    secured_api: Served,
) -> None:
    refusal(await secured_api.http.get("/openapi.json"), 401)
    described = await secured_api.http.get("/openapi.json", headers=secured_api.auth("reader"))
    assert described.json()["openapi"] == "3.1.0"
    # Liveness and readiness stay open, as gRPC's health service does, for load balancers.
    assert (await secured_api.http.get("/healthz")).status_code == 200
    assert (await secured_api.http.get("/readyz")).status_code == 200
