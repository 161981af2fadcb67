"""OpenAPI 3.0/3.1 documents become one tool per operation, or are rejected naming the entry."""

from __future__ import annotations

import contextlib
import copy
import json
from typing import Any

import jsonschema
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from indexer.formats import CatalogError, detect_format, parse_catalog
from indexer.model import Catalog, Tool
from tests.conftest import DATA

PETSTORE = (DATA / "petstore.yaml").read_text()
COMMERCE = (DATA / "commerce.yaml").read_text()


def _tool(catalog: Catalog, name: str) -> Tool:
    return next(t for t in catalog.tools if t.name == name)


def _problems(document: dict[str, Any]) -> str:
    with pytest.raises(CatalogError) as caught:
        parse_catalog(json.dumps(document, default=str), name="api")
    return str(caught.value)


def _petstore(**changes: Any) -> dict[str, Any]:
    document: dict[str, Any] = yaml.safe_load(PETSTORE)
    document.update(changes)
    return document


def test_petstore_maps_every_operation_to_a_tool_named_by_operation_id() -> None:
    catalog = parse_catalog(PETSTORE, name="petstore")
    assert (catalog.format, catalog.title, catalog.version) == (
        "openapi",
        "Swagger Petstore",
        "1.0.19",
    )
    assert catalog.description.startswith("A sample pet store server")
    names = [t.name for t in catalog.tools]
    assert names == [
        "updatePet",
        "addPet",
        "findPetsByStatus",
        "getPetById",
        "deletePet",
        "get_store_inventory",  # no operationId: method and path
        "placeOrder",
    ]
    assert _tool(catalog, "findPetsByStatus").tags == ("pet",)


def test_input_schema_merges_path_query_header_parameters_and_the_body() -> None:
    catalog = parse_catalog(PETSTORE, name="petstore")
    delete = _tool(catalog, "deletePet")
    assert delete.input_schema["properties"]["petId"] == {
        "type": "integer",
        "format": "int64",
        "description": "ID of the pet",
    }
    assert "api_key" in delete.input_schema["properties"]
    # OpenAPI says an Authorization header parameter is ignored: the HTTP layer sets it.
    assert "Authorization" not in delete.input_schema["properties"]
    assert delete.input_schema["required"] == ["petId"]
    binding = delete.annotations["x-openapi"]
    assert (binding["method"], binding["path"]) == ("DELETE", "/pet/{petId}")
    assert {"in": "header", "name": "api_key", "property": "api_key"} in binding["parameters"]

    update = _tool(catalog, "updatePet")
    body = update.input_schema["properties"]["body"]
    assert body["description"] == "Update an existent pet in the store"
    assert body["required"] == ["name", "photoUrls"]
    assert body["properties"]["category"]["properties"]["name"]["type"] == "string"
    assert update.input_schema["required"] == ["body"]
    assert update.annotations["x-openapi"]["body"]["content_type"] == "application/json"


def test_description_joins_summary_and_description_and_hints_follow_the_method() -> None:
    catalog = parse_catalog(PETSTORE, name="petstore")
    find = _tool(catalog, "findPetsByStatus")
    assert find.description == (
        "Finds pets by status\n\nMultiple status values can be provided with comma separated "
        "strings."
    )
    assert find.annotations["readOnlyHint"] is True
    delete = _tool(catalog, "deletePet").annotations
    assert (delete["destructiveHint"], delete["idempotentHint"]) == (True, True)


def test_oauth_scopes_become_required_scopes_using_the_weakest_alternative() -> None:
    catalog = parse_catalog(PETSTORE, name="petstore")
    assert _tool(catalog, "addPet").scopes == {"write:pets", "read:pets"}
    assert _tool(catalog, "findPetsByStatus").scopes == {"read:pets"}  # the document default
    # api_key OR oauth: a caller holding only the API key may call it, so no scope is needed.
    assert _tool(catalog, "getPetById").scopes == frozenset()
    # An apiKey scheme declares no OAuth scopes.
    assert _tool(catalog, "get_store_inventory").scopes == frozenset()


def test_openapi_30_schemas_become_json_schema() -> None:
    catalog = parse_catalog(PETSTORE, name="petstore")
    order = _tool(catalog, "placeOrder").input_schema["properties"]["body"]["properties"]
    assert order["quantity"]["exclusiveMaximum"] == 100
    assert "maximum" not in order["quantity"]
    assert order["shipDate"]["example"] == "2024-03-01"  # a YAML date read back as text
    status = _tool(catalog, "addPet").input_schema["properties"]["body"]["properties"]["status"]
    assert status["type"] == ["string", "null"]
    assert None in status["enum"]


def test_output_schema_comes_from_the_success_response_when_it_is_an_object() -> None:
    catalog = parse_catalog(PETSTORE, name="petstore")
    assert _tool(catalog, "getPetById").output_schema is not None
    assert _tool(catalog, "findPetsByStatus").output_schema is None  # an array


def test_multi_tag_spec_resolves_refs_all_of_and_enums() -> None:
    catalog = parse_catalog(COMMERCE, name="commerce")
    assert (
        catalog.description == "Catalog, carts, orders, customers and payments for an online shop."
    )
    assert catalog.version == "2025-06-01"
    assert len(catalog.tools) == 8  # webhooks are not operations a caller can invoke
    listing = _tool(catalog, "listProducts").input_schema["properties"]
    assert listing["limit"]["maximum"] == 100  # from a shared parameter $ref
    assert listing["availability"]["enum"][0] == "in_stock"
    refund = _tool(catalog, "refundOrder")
    assert refund.tags == ("orders", "payments")
    assert refund.scopes == {"payments:refund"}
    assert set(refund.input_schema["required"]) == {"order_id", "Idempotency-Key", "body"}
    product = _tool(catalog, "getProduct").output_schema
    assert product is not None
    assert product["type"] == "object"
    assert product["allOf"][0]["properties"]["price"]["properties"]["currency"]["enum"] == [
        "EUR",
        "USD",
        "GBP",
    ]
    patch = _tool(catalog, "updateProduct").annotations["x-openapi"]
    assert patch["body"]["content_type"] == "application/merge-patch+json"
    deprecated = _tool(catalog, "deleteCustomer")
    assert deprecated.description.startswith("Deprecated. Delete a customer")


def test_cycles_become_defs_references_that_validate() -> None:
    catalog = parse_catalog(COMMERCE, name="commerce")
    tree = _tool(catalog, "getCategoryTree").output_schema
    assert tree is not None
    assert tree["properties"]["children"]["items"] == {"$ref": "#/$defs/Category"}
    assert "Category" in tree["$defs"]
    order = _tool(catalog, "createOrder").output_schema
    assert order is not None
    shipment = order["properties"]["shipments"]["items"]
    assert shipment["properties"]["order"] == {"$ref": "#/$defs/Order"}
    instance = {"id": "o1", "shipments": [{"order": {"id": "o1", "status": "paid"}}]}
    jsonschema.validate(instance, order)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"shipments": [{"order": {"status": "lost"}}]}, order)


def test_openapi_documents_are_detected_from_their_version_field() -> None:
    assert detect_format(yaml.safe_load(PETSTORE)) == "openapi"
    assert detect_format(yaml.safe_load(COMMERCE)) == "openapi"


@pytest.mark.parametrize(
    ("change", "fragment"),
    [
        ({"openapi": "2.0"}, "openapi: must be a 3.0.x or 3.1.x version"),
        ({"paths": []}, "paths: must be an object"),
    ],
)
def test_malformed_documents_are_rejected_naming_the_field(
    change: dict[str, Any], fragment: str
) -> None:
    assert fragment in _problems(_petstore(**change))


def test_swagger_2_is_rejected_with_what_to_do() -> None:
    with pytest.raises(CatalogError, match="convert it to OpenAPI 3"):
        parse_catalog(json.dumps({"swagger": "2.0", "paths": {}}), name="old")


def test_broken_operations_are_rejected_naming_path_and_method() -> None:
    document = _petstore()
    paths = document["paths"]
    paths["/pet/findByStatus"]["get"]["parameters"][0]["schema"] = {
        "$ref": "#/components/schemas/Missing"
    }
    paths["/pet"]["post"]["requestBody"] = {"$ref": "other.yaml#/Pet"}
    paths["/store/order"]["post"]["operationId"] = "updatePet"
    paths["/pet/{petId}"]["get"]["parameters"] = [{"name": "x"}]
    paths["/pet/{petId}"]["delete"]["parameters"][0]["schema"] = {"type": "strnig"}
    message = _problems(document)
    assert "paths./pet/findByStatus.get: $ref '#/components/schemas/Missing' does not" in message
    assert "paths./pet.post: $ref 'other.yaml#/Pet' points outside this document" in message
    assert "paths./pet/{petId}.get: parameters[0]: must be an object with a 'name'" in message
    assert "paths./pet/{petId}.delete.parameters/requestBody: is not a valid JSON Schema" in message
    assert "tool 'updatePet': tool names must be unique" in message


def test_exponential_ref_expansion_is_cut_off() -> None:
    schemas: dict[str, Any] = {"L0": {"type": "string"}}
    for level in range(1, 30):
        below = {"$ref": f"#/components/schemas/L{level - 1}"}
        schemas[f"L{level}"] = {"type": "object", "properties": {"a": below, "b": below}}
    document = copy.deepcopy(_petstore())
    document["components"]["schemas"].update(schemas)
    document["paths"]["/pet"]["put"]["requestBody"]["content"]["application/json"]["schema"] = {
        "$ref": "#/components/schemas/L29"
    }
    assert "paths./pet.put: the schema has more than 20000 nodes" in _problems(document)


def _locations(node: object, prefix: tuple[str | int, ...] = ()) -> list[tuple[str | int, ...]]:
    found = [prefix]
    if isinstance(node, dict):
        for key, value in node.items():
            found += _locations(value, (*prefix, key))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            found += _locations(value, (*prefix, index))
    return found


PETSTORE_JSON = json.loads(json.dumps(yaml.safe_load(PETSTORE), default=str))
_refs = st.sampled_from(
    ["#/components/schemas/Pet", "#/components/schemas", "#/nope", "#", "x.yaml#/a", "#/paths"]
).map(lambda ref: {"$ref": ref})
_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=6) | _refs,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=12,
)


@settings(max_examples=150, deadline=None)
@given(
    st.sampled_from(_locations(PETSTORE_JSON)[1:]),
    _json,
    st.sampled_from(["auto", "openapi", "openai", "anthropic", "mcp", "native"]),
)
def test_any_damage_to_a_document_is_a_catalog_or_a_catalog_error(
    location: tuple[str | int, ...], value: object, fmt: str
) -> None:
    document = copy.deepcopy(PETSTORE_JSON)
    parent = document
    for step in location[:-1]:
        parent = parent[step]
    parent[location[-1]] = value
    # Anything else would reach a gRPC client as INTERNAL instead of naming the problem.
    with contextlib.suppress(CatalogError):
        parse_catalog(json.dumps(document), name="fuzzed", fmt=fmt)
