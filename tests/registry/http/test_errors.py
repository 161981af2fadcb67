"""Refusals over HTTP: one status table, one body shape, the way forward (suggestions, the
corrected call, when to retry), and malformed input named before any work."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import urlsplit

import grpc
import pytest

from indexer.formats import CatalogError
from registry.config import CallerLimits
from registry.core import Registry
from registry.errors import (
    CallerGone,
    CatalogNotFound,
    IllegalMove,
    InvalidRequest,
    NotReady,
    Overloaded,
    PermissionDenied,
    ToolsNotFound,
    Unauthenticated,
    WorkflowNotFound,
)
from registry.http.body import BodyTooLarge, BodyTooSlow
from registry.http.errors import HTTP_STATUS, error_reply
from registry.proto import registry_pb2 as pb
from registry.rpc.status import status_for
from registry.store import StaleCatalog, StoreError
from registry.wire import MAX_MESSAGE_BYTES, MAX_QUERY_CHARS
from tests.registry.http.conftest import Served, serve_both


def refusal(response: Any, status: int) -> dict[str, Any]:
    """The error object of a refusal, after checking the one shape every refusal has."""
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/json"
    body = response.json()
    assert set(body) == {"error"}
    error: dict[str, Any] = body["error"]
    assert {"code", "status", "message"} <= set(error)
    assert error["status"] == status
    expected = status if status in (408, 413) else HTTP_STATUS[grpc.StatusCode[error["code"]]]
    assert expected == status
    return error


def test_every_grpc_code_has_one_http_status() -> None:
    assert set(HTTP_STATUS) == set(grpc.StatusCode)
    assert HTTP_STATUS[grpc.StatusCode.OK] == 200
    assert all(400 <= status < 600 for code, status in HTTP_STATUS.items() if code.value[0])


@pytest.mark.parametrize(
    ("error", "status", "forward"),
    [
        (InvalidRequest("query must not be empty"), 400, set()),
        (CatalogError("mini", ["tools[0]: bad"]), 400, set()),
        (BodyTooLarge("body: too large"), 413, set()),
        (BodyTooSlow("body: stopped"), 408, set()),
        (ToolsNotFound({"hr/x": ["hr/get_employee"]}), 404, {"suggestions"}),
        (CatalogNotFound("hrr", ["hr"]), 404, {"suggestions"}),
        (WorkflowNotFound("support/triage", ["support/ticket_triage"]), 404, {"suggestions"}),
        (
            IllegalMove("support/ticket_triage", "new", "support/close_ticket", []),
            409,
            {"legal_moves"},
        ),
        (Unauthenticated("missing credentials"), 401, set()),
        (PermissionDenied("lacks registry:admin"), 403, set()),
        (NotReady("loading"), 503, set()),
        (Overloaded("busy", retry_after=0.05), 429, {"retry_after_s"}),
        (CallerGone("gone"), 504, set()),
        (StaleCatalog("hr", 3, 4), 409, set()),
        (StoreError("unreadable"), 503, set()),
        (RuntimeError("secret detail"), 500, set()),
    ],
    ids=lambda value: type(value).__name__ if isinstance(value, Exception) else None,
)
def test_each_domain_error_has_its_status_and_way_forward(
    error: Exception, status: int, forward: set[str]
) -> None:
    code, message = status_for(error)
    reply = error_reply(code, message, error)
    assert reply.status == status
    assert set(reply.body["error"]) == {"code", "status", "message", *forward}
    assert reply.body["error"]["code"] == code.name
    assert "secret detail" not in str(reply.body)


def test_an_overloaded_refusal_says_when_to_retry_in_whole_seconds_and_precisely() -> None:
    code, message = status_for(Overloaded("busy", retry_after=0.05))
    reply = error_reply(code, message, Overloaded("busy", retry_after=0.05))
    assert reply.headers == {"retry-after": "1"}
    assert reply.body["error"]["retry_after_s"] == 0.05


async def test_an_unknown_id_suggests_close_ones_and_the_corrected_call_works(
    open_api: Served,
) -> None:
    ids = ["hr/get_employe", "support/create_ticket"]
    response = await open_api.http.post("/v1/schemas", json={"ids": ids})
    error = refusal(response, 404)
    assert error["code"] == "NOT_FOUND"
    assert error["suggestions"]["hr/get_employe"][0] == "hr/get_employee"
    call = error["next_call"]
    assert (call["method"], call["path"]) == ("POST", "/v1/schemas")
    assert call["body"] == {"ids": ["hr/get_employee", "support/create_ticket"]}
    fixed = await open_api.http.post(call["path"], json=call["body"])
    assert [t["id"] for t in fixed.json()["tools"]] == call["body"]["ids"]


async def test_an_id_without_a_close_match_gets_no_corrected_call(open_api: Served) -> None:
    response = await open_api.http.post("/v1/schemas", json={"ids": ["zzzz/qqqq"]})
    error = refusal(response, 404)
    assert error["suggestions"] == {"zzzz/qqqq": []}
    assert "next_call" not in error


async def test_an_unknown_catalog_filter_suggests_and_corrects_the_search(
    open_api: Served,
) -> None:
    params = {"q": "look up an employee", "catalog": "hrr"}
    error = refusal(await open_api.http.get("/v1/search", params=params), 404)
    assert error["suggestions"] == {"hrr": ["hr"]}
    call = error["next_call"]
    assert call["method"] == "GET"
    assert urlsplit(call["path"]).query == "q=look+up+an+employee&catalog=hr"
    fixed = await open_api.http.get(call["path"])
    assert fixed.status_code == 200


async def test_an_unknown_workflow_suggests_and_corrects_the_call(open_api: Served) -> None:
    params = {"workflow": "support/ticket_triag", "state": "new"}
    error = refusal(await open_api.http.get("/v1/affordances", params=params), 404)
    assert error["suggestions"] == {"support/ticket_triag": ["support/ticket_triage"]}
    assert error["next_call"]["path"] == "/v1/affordances?workflow=support%2Fticket_triage"


async def test_an_illegal_move_is_a_conflict_listing_the_legal_ones(open_api: Served) -> None:
    params = {"workflow": "support/ticket_triage", "tool": "support/close_ticket"}
    error = refusal(await open_api.http.get("/v1/affordances", params=params), 409)
    assert error["code"] == "FAILED_PRECONDITION"
    assert any("support/assign_ticket" in move for move in error["legal_moves"])
    # The same state without the move: what may be done from here.
    assert error["next_call"]["path"] == "/v1/affordances?workflow=support%2Fticket_triage"


async def test_a_write_to_an_unknown_catalog_suggests_but_never_guesses_a_call(
    open_api: Served,
) -> None:
    error = refusal(await open_api.http.delete("/v1/catalogs/hrr"), 404)
    assert error["suggestions"] == {"hrr": ["hr"]}
    assert "next_call" not in error


@pytest.mark.parametrize(
    ("method", "path", "request_args", "named"),
    [
        ("POST", "/v1/schemas", {"content": b"{not json"}, "body: not valid JSON"),
        ("POST", "/v1/schemas", {"json": [1, 2]}, "body: must be a JSON object"),
        ("POST", "/v1/schemas", {"json": {"ids": 5}}, "ids: expected a list of tool ids"),
        ("POST", "/v1/schemas", {"json": {"idz": ["hr/x"]}}, "idz: not a field of this call"),
        ("POST", "/v1/catalogs:batch", {"json": {"catalogs": [{"nam": "x"}]}}, "[0].nam: not"),
        ("GET", "/v1/search", {"params": {"q": "x", "limit": "ten"}}, "limit: must be a whole"),
        ("GET", "/v1/search", {"params": {"q": "x", "limit": "-1"}}, "limit: must be a whole"),
        ("GET", "/v1/search", {"params": [("q", "x"), ("limit", "1"), ("limit", "2")]}, "limit:"),
        ("GET", "/v1/search", {"params": {"q": "x", "lmit": "3"}}, "lmit: not a parameter"),
        ("GET", "/v1/search", {"params": {"q": "x" * (MAX_QUERY_CHARS + 1)}}, "q: at most"),
        ("GET", "/v1/catalogs", {"params": {"with_warnings": "maybe"}}, "with_warnings:"),
        ("PUT", "/v1/catalogs/mini", {"content": b"\xff\xfe"}, "body: not UTF-8"),
        ("GET", "/v1/search", {"params": {"q": "   "}}, "query must not be empty"),
    ],
)
async def test_malformed_input_is_400_naming_the_field(
    open_api: Served, method: str, path: str, request_args: dict[str, Any], named: str
) -> None:
    response = await open_api.http.request(method, path, **request_args)
    error = refusal(response, 400)
    assert error["code"] == "INVALID_ARGUMENT"
    assert named in error["message"]
    assert "Traceback" not in response.text


async def test_a_wrongly_typed_body_field_is_refused_in_the_apis_terms(open_api: Served) -> None:
    error = refusal(await open_api.http.post("/v1/schemas", json={"ids": "hr/get_employee"}), 400)
    assert error["message"] == (
        'ids: expected a list of tool ids like ["catalog/name"], got a string'
    )
    # Nothing of the protobuf parser's wording reaches the caller.
    for protobuf in ("repeated field", "GetSchemaRequest", "Failed to parse"):
        assert protobuf not in error["message"]


async def test_a_body_declared_too_large_is_refused_before_it_is_sent(open_api: Served) -> None:
    url = urlsplit(str(open_api.http.base_url))
    reader, writer = await asyncio.open_connection(url.hostname, url.port)
    writer.write(
        b"POST /v1/schemas HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n"
        + f"content-length: {MAX_MESSAGE_BYTES + 1}\r\n\r\n".encode()
    )
    await writer.drain()
    head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), timeout=30)
    writer.close()
    assert head.startswith(b"HTTP/1.1 413 ")


async def test_a_streamed_body_past_the_limit_is_413(open_api: Served) -> None:
    chunk = b" " * (1 << 20)

    async def chunks() -> AsyncIterator[bytes]:
        for _ in range(MAX_MESSAGE_BYTES // len(chunk) + 1):
            yield chunk

    response = await open_api.http.post("/v1/catalogs:batch", content=chunks())
    error = refusal(response, 413)
    assert error["code"] == "INVALID_ARGUMENT"
    assert error["message"].startswith("body: at most")


async def test_a_bad_catalog_is_400_naming_the_entry_and_rule(open_api: Served) -> None:
    bad = (
        "capreg: 1\nname: bad\ntools:\n  - {name: x, description: d, input_schema: {type: array}}\n"
    )
    error = refusal(await open_api.http.put("/v1/catalogs/bad", content=bad), 400)
    assert "input_schema" in error["message"]


async def test_past_its_rate_a_caller_gets_429_with_retry_after_on_either_transport(
    sample_registry: Registry,
) -> None:
    limits = CallerLimits(rate=0.5, burst=2, concurrency=32)
    async with serve_both(sample_registry, limits=limits) as served:
        assert (await served.http.get("/v1/catalogs")).status_code == 200
        await served.stub.ListCatalogs(pb.ListCatalogsRequest())
        # The third call in the burst, whichever the transport, is over this caller's rate.
        response = await served.http.get("/v1/catalogs")
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await served.stub.ListCatalogs(pb.ListCatalogsRequest())
    error = refusal(response, 429)
    assert error["code"] == "RESOURCE_EXHAUSTED"
    assert 0 < error["retry_after_s"] <= 2.0
    assert response.headers["retry-after"] == "2"
    assert response.headers["x-request-id"]
    assert caught.value.code() is grpc.StatusCode.RESOURCE_EXHAUSTED
