"""Every route over a real HTTP listener beside a real gRPC server: the same answers as gRPC,
in the protobuf JSON mapping, with request ids, health, readiness and the console mount."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from google.protobuf import json_format

from registry.core import Registry
from registry.http.routes import ROUTES, SERVICE, Source
from registry.proto import registry_pb2 as pb
from tests.conftest import DATA
from tests.registry.http.conftest import Served, serve_both

MINI = (DATA / "mini.yaml").read_text()


def _printed(message: Any) -> dict[str, Any]:
    return json_format.MessageToDict(
        message, preserving_proto_field_name=True, always_print_fields_with_no_presence=True
    )


def test_every_rpc_of_the_service_has_a_route() -> None:
    assert {method.name for method in SERVICE.methods} == set(ROUTES)


@pytest.mark.parametrize("route", ROUTES.values(), ids=list(ROUTES))
def test_each_route_reads_fields_its_request_has_and_only_scalars_from_the_query(
    route: Any,
) -> None:
    fields = route.request_type.fields_by_name
    assert set(route.path_fields) <= set(fields)
    assert (
        not route.text_field
        or fields[route.text_field].type == fields[route.text_field].TYPE_STRING
    )
    for target in route.query_fields.values():
        assert fields[target].message_type is None, target
    if route.source is Source.QUERY and route.method == "GET":
        assert len(route.query_fields) + len(route.path_fields) == len(fields)


async def test_a_search_answers_what_grpc_answers_with_every_field_printed(
    open_api: Served,
) -> None:
    query = "open a support ticket for a customer"
    expected = await open_api.stub.Search(pb.SearchRequest(query=query, limit=3))
    response = await open_api.http.get("/v1/search", params={"q": query, "limit": 3})
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json"
    body = response.json()
    # The second asking is answered from the shared result cache.
    assert body.pop("cached") is True
    printed = _printed(expected)
    assert printed.pop("cached") is False
    assert body == printed
    assert body["weak_match"] is False
    top = body["hits"][0]
    assert top["id"] == "support/create_ticket"
    assert top["next_call"] == {"ids": ["support/create_ticket"], "min_generation": "0"}
    assert isinstance(body["index_generation"], str)


async def test_a_search_takes_repeated_catalog_filters(open_api: Served) -> None:
    query = "look up a customer's record"
    params: list[tuple[str, str | int | float | bool | None]] = [
        ("q", query),
        ("limit", 10),
        ("catalog", "hr"),
        ("catalog", "crm"),
    ]
    response = await open_api.http.get("/v1/search", params=params)
    assert response.status_code == 200
    hits = [hit["id"] for hit in response.json()["hits"]]
    assert hits
    assert {hit.split("/")[0] for hit in hits} <= {"hr", "crm"}
    request = pb.SearchRequest(query=query, limit=10, catalogs=["hr", "crm"])
    expected = await open_api.stub.Search(request)
    assert hits == [hit.id for hit in expected.hits]


async def test_schemas_are_fetched_with_a_json_body_in_request_order(open_api: Served) -> None:
    ids = ["support/create_ticket", "hr/get_employee"]
    response = await open_api.http.post("/v1/schemas", json={"ids": ids})
    assert response.status_code == 200
    tools = response.json()["tools"]
    assert [t["id"] for t in tools] == ids
    assert tools[0]["function_name"] == "support__create_ticket"
    assert tools[0]["input_schema"]["type"] == "object"


async def test_every_schema_over_http_is_an_object_not_json_text(open_api: Served) -> None:
    # gRPC carries JSON Schemas as text; a JSON client reads them as values, at once.
    response = await open_api.http.post("/v1/schemas", json={"ids": ["support/create_ticket"]})
    [tool] = response.json()["tools"]
    grpc_reply = await open_api.stub.GetSchema(pb.GetSchemaRequest(ids=["support/create_ticket"]))
    assert tool["input_schema"] == json.loads(grpc_reply.tools[0].input_schema)
    assert tool["annotations"] == json.loads(grpc_reply.tools[0].annotations)
    expected_output = grpc_reply.tools[0].output_schema
    assert tool["output_schema"] == (json.loads(expected_output) if expected_output else None)
    params = {"workflow": "support/ticket_triage", "with_schemas": "true"}
    moves = (await open_api.http.get("/v1/affordances", params=params)).json()["affordances"]
    assert moves
    assert all(move["schema"]["input_schema"]["type"] == "object" for move in moves)


async def test_a_hits_next_call_is_the_schema_calls_body(open_api: Served) -> None:
    search = await open_api.http.get("/v1/search", params={"q": "post a journal entry"})
    hit = search.json()["hits"][0]
    schemas = await open_api.http.post("/v1/schemas", json=hit["next_call"])
    assert [t["id"] for t in schemas.json()["tools"]] == [hit["id"]]


async def test_catalogs_are_listed_with_their_workflows_and_first_calls(open_api: Served) -> None:
    response = await open_api.http.get("/v1/catalogs", params={"with_warnings": "true"})
    assert response.status_code == 200
    catalogs = {c["name"]: c for c in response.json()["catalogs"]}
    [triage] = catalogs["support"]["workflows"]
    assert triage["id"] == "support/ticket_triage"
    assert triage["next_call"]["workflow"] == "support/ticket_triage"
    assert isinstance(catalogs["support"]["warnings"], list)


async def test_affordances_answer_for_a_state_and_after_a_move(open_api: Served) -> None:
    first = await open_api.http.get("/v1/affordances", params={"workflow": "support/ticket_triage"})
    assert first.status_code == 200
    assert first.json()["state"] == "new"
    offered = {a["tool_id"]: a for a in first.json()["affordances"]}
    assert offered["support/assign_ticket"]["next_state"] == "triaged"
    moved = await open_api.http.get(
        "/v1/affordances",
        params={"workflow": "support/ticket_triage", "tool": "support/assign_ticket"},
    )
    assert moved.json()["state"] == "triaged"


async def test_a_catalog_is_registered_from_its_raw_text_listed_and_deleted(
    open_api: Served,
) -> None:
    put = await open_api.http.put(
        "/v1/catalogs/mini", content=MINI, headers={"content-type": "application/yaml"}
    )
    assert put.status_code == 200
    added = put.json()
    assert (added["catalog"], added["added"], added["version"]) == ("mini", 3, "1.0.0")
    assert added["revision"] == "1"
    listed = await open_api.http.get(
        "/v1/catalogs", params={"min_generation": added["index_generation"]}
    )
    assert "mini" in {c["name"] for c in listed.json()["catalogs"]}
    again = await open_api.http.put("/v1/catalogs/mini", content=MINI, params={"format": "native"})
    assert (again.json()["unchanged"], again.json()["revision"]) == (3, "1")
    deleted = await open_api.http.delete("/v1/catalogs/mini")
    assert deleted.status_code == 200
    assert deleted.json()["removed"] == 3
    after = await open_api.http.get("/v1/catalogs")
    assert "mini" not in {c["name"] for c in after.json()["catalogs"]}


async def test_a_batch_registers_each_catalog_on_its_own(open_api: Served) -> None:
    broken = MINI.replace("name: mini", "name: broken").replace("type: object", "type: array", 1)
    body = {"catalogs": [{"content": MINI}, {"name": "broken", "content": broken}]}
    response = await open_api.http.post("/v1/catalogs:batch", json=body)
    assert response.status_code == 200
    registered, failed = response.json()["results"]
    assert registered["registered"]["catalog"] == "mini"
    assert "failed" not in registered
    assert failed["failed"]["code"] == "INVALID_ARGUMENT"
    assert failed["failed"]["name"] == "broken"


async def test_every_answer_carries_a_request_id_the_caller_may_set(open_api: Served) -> None:
    chosen = await open_api.http.get("/v1/catalogs", headers={"x-request-id": "trace-42"})
    assert chosen.headers["x-request-id"] == "trace-42"
    minted = await open_api.http.get("/v1/catalogs")
    assert len(minted.headers["x-request-id"]) == 16
    refused = await open_api.http.get("/v1/search", params={"q": " "})
    assert refused.status_code == 400
    assert refused.headers["x-request-id"]


async def test_http_calls_are_counted_with_the_grpc_ones(open_api: Served) -> None:
    await open_api.stub.ListCatalogs(pb.ListCatalogsRequest())
    await open_api.http.get("/v1/catalogs")
    await open_api.http.get("/v1/search", params={"q": ""})
    scraped = open_api.scrape()
    assert 'capreg_requests_total{code="OK",rpc="ListCatalogs"} 2.0' in scraped
    assert 'capreg_requests_total{code="INVALID_ARGUMENT",rpc="Search"} 1.0' in scraped


async def test_health_is_open_and_readiness_waits_for_the_registry(
    sample_registry: Registry,
) -> None:
    sample_registry.reader.hold(lambda: "3 of 9 catalog files registered")
    async with serve_both(sample_registry) as served:
        assert (await served.http.get("/healthz")).status_code == 200
        loading = await served.http.get("/readyz")
        assert loading.status_code == 503
        assert loading.json()["error"]["code"] == "UNAVAILABLE"
        assert "3 of 9 catalog files registered" in loading.json()["error"]["message"]
        search = await served.http.get("/v1/search", params={"q": "open a ticket"})
        assert search.status_code == 503
        sample_registry.reader.release()
        ready = await served.http.get("/readyz")
        assert (ready.status_code, ready.json()) == (200, {"status": "SERVING"})


async def test_the_console_folder_is_served_with_its_index_at_the_root(
    sample_registry: Registry, tmp_path: Path
) -> None:
    (tmp_path / "index.html").write_text("<title>console</title>")
    (tmp_path / "app.js").write_text("console.log(1)")
    async with serve_both(sample_registry, console=tmp_path) as served:
        root = await served.http.get("/")
        script = await served.http.get("/console/app.js")
        outside = await served.http.get("/console/../conftest.py")
    assert (root.status_code, root.text) == (200, "<title>console</title>")
    assert (script.status_code, script.text) == (200, "console.log(1)")
    assert outside.status_code == 404


async def test_without_a_console_the_root_points_at_the_api_description(
    sample_registry: Registry, tmp_path: Path
) -> None:
    async with serve_both(sample_registry, console=tmp_path / "none") as served:
        root = await served.http.get("/")
        console = await served.http.get("/console/index.html")
    assert root.status_code == 404
    assert root.json()["error"]["next_call"] == {"method": "GET", "path": "/openapi.json"}
    assert console.status_code == 404


async def test_unknown_paths_and_methods_are_refused_in_the_error_shape(open_api: Served) -> None:
    unknown = await open_api.http.get("/v1/nothing")
    wrong = await open_api.http.post("/v1/search")
    assert unknown.status_code == 404
    assert unknown.json()["error"]["code"] == "NOT_FOUND"
    assert wrong.status_code == 405
    assert wrong.json()["error"] == {
        "code": "UNIMPLEMENTED",
        "status": 405,
        "message": "Method Not Allowed",
    }
    assert set(wrong.headers["allow"].split(", ")) == {"GET", "HEAD"}
