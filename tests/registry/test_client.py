"""gRPC statuses become typed bridge errors in one place; suggestions survive the trip."""

from __future__ import annotations

import grpc
import pytest

from mcp_bridge.payloads import schema_recovery
from registry.client import (
    AccessRefused,
    InvalidRequest,
    NotFound,
    RegistryCallFailed,
    RegistryFault,
    RegistryUnavailable,
    error_for,
    parse_suggestions,
)

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
