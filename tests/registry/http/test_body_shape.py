"""A JSON body's shape is checked against its request message before protobuf reads it: each
wrong type is refused naming the field's path, in the API's words."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from registry.errors import InvalidRequest
from registry.http.binding import parse_json
from registry.http.routes import ROUTES
from registry.proto import registry_pb2 as pb


@pytest.mark.parametrize(
    ("rpc", "body", "message"),
    [
        ("GetSchema", {"ids": "x"}, 'ids: expected a list of tool ids like ["catalog/name"]'),
        ("GetSchema", {"ids": [1]}, 'ids[0]: expected a tool id like "catalog/name", got a number'),
        ("GetSchema", {"ids": [None]}, "ids[0]: expected a tool id like"),
        (
            "GetSchema",
            {"min_generation": "soon"},
            'min_generation: expected a whole number, got "soon"',
        ),
        (
            "GetSchema",
            {"min_generation": True},
            "min_generation: expected a whole number, got true",
        ),
        (
            "GetSchema",
            {"idz": ["hr/x"]},
            "idz: not a field of this call (it takes: ids, min_generation)",
        ),
        ("RegisterCatalogs", {"catalogs": {}}, "catalogs: expected a list of catalogs like"),
        ("RegisterCatalogs", {"catalogs": ["hr"]}, "catalogs[0]: expected a catalog like"),
        (
            "RegisterCatalogs",
            {"catalogs": [{"content": 5}]},
            "catalogs[0].content: expected a string",
        ),
        ("RegisterCatalogs", {"catalogs": [{"nam": "x"}]}, "catalogs[0].nam: not a field"),
    ],
)
def test_a_wrong_type_is_named_by_its_path_in_the_apis_terms(
    rpc: str, body: dict[str, Any], message: str
) -> None:
    with pytest.raises(InvalidRequest) as caught:
        parse_json(ROUTES[rpc], _encoded(body))
    assert str(caught.value).startswith(message)


@pytest.mark.parametrize(
    "body",
    [
        {"ids": ["hr/get_employee"], "min_generation": "12"},
        {"ids": ["hr/get_employee"], "minGeneration": 12},
        {"ids": None},
    ],
)
def test_what_the_protobuf_json_mapping_accepts_still_passes(body: dict[str, Any]) -> None:
    message = parse_json(ROUTES["GetSchema"], _encoded(body))
    assert isinstance(message, pb.GetSchemaRequest)


def _encoded(body: dict[str, Any]) -> bytes:
    return orjson.dumps(body)
