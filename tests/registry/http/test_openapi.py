"""The generated OpenAPI document: valid OpenAPI 3.1 (checked by openapi-spec-validator), one
operation per route, and schemas that real answers validate against."""

from __future__ import annotations

from typing import Any

import jsonschema
from openapi_spec_validator import validate

from registry.http.routes import ROUTES
from registry.http.spec import openapi_document
from tests.registry.http.conftest import Served


def _validator(document: dict[str, Any], name: str) -> jsonschema.Draft202012Validator:
    # The component is checked from the document's root, so its $refs resolve in place.
    schema = {"$ref": f"#/components/schemas/{name}", "components": document["components"]}
    return jsonschema.Draft202012Validator(schema)


async def test_the_served_document_is_valid_openapi_3_1(open_api: Served) -> None:
    response = await open_api.http.get("/openapi.json")
    assert response.status_code == 200
    document = response.json()
    validate(document)
    assert document["openapi"] == "3.1.0"
    assert document == openapi_document()


def test_every_route_is_one_operation_with_its_messages() -> None:
    document = openapi_document()
    operations = {
        operation["operationId"]: (method.upper(), path, operation)
        for path, item in document["paths"].items()
        for method, operation in item.items()
    }
    for route in ROUTES.values():
        method, path, operation = operations[route.rpc]
        assert (method, path) == (route.method, route.path)
        ok = operation["responses"]["200"]["content"]["application/json"]["schema"]
        assert ok == {"$ref": f"#/components/schemas/{route.response_type.name}"}
        assert ("403" in operation["responses"]) == route.admin
    search = {p["name"] for p in operations["Search"][2]["parameters"]}
    assert {"q", "limit", "catalog", "min_generation"} <= search
    assert operations["RegisterCatalog"][2]["parameters"][0]["in"] == "path"


async def test_real_answers_and_refusals_validate_against_their_schemas(open_api: Served) -> None:
    document = openapi_document()
    search = await open_api.http.get("/v1/search", params={"q": "open a ticket", "limit": 3})
    batch = await open_api.http.post(
        "/v1/catalogs:batch", json={"catalogs": [{"name": "x", "content": "{}"}]}
    )
    refused = await open_api.http.post("/v1/schemas", json={"ids": ["hr/get_employe"]})
    schemas = await open_api.http.post("/v1/schemas", json={"ids": ["support/create_ticket"]})
    moves = await open_api.http.get(
        "/v1/affordances", params={"workflow": "support/ticket_triage", "with_schemas": "true"}
    )
    _validator(document, "GetSchemaResponse").validate(schemas.json())
    _validator(document, "GetAffordancesResponse").validate(moves.json())
    _validator(document, "SearchResponse").validate(search.json())
    _validator(document, "RegisterCatalogsResponse").validate(batch.json())
    _validator(document, "Error").validate(refused.json())
    # What the schema forbids, it does forbid: an answer missing its `oneOf` branch.
    bad = {"results": [{}], "index_generation": "1"}
    assert not _validator(document, "RegisterCatalogsResponse").is_valid(bad)
