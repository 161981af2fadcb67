"""Replies over HTTP: the fields gRPC carries as JSON text (a tool's schemas and annotations)
are JSON values, wherever a ToolSchema sits in the reply; everything else is the protobuf JSON
mapping."""

from __future__ import annotations

import orjson

from registry.http.replies import reply_body
from registry.proto import registry_pb2 as pb

SCHEMA = '{"type": "object", "properties": {"id": {"type": "string"}}}'


def _tool(input_schema: str = SCHEMA, annotations: str = "{}") -> pb.ToolSchema:
    return pb.ToolSchema(id="hr/get_employee", input_schema=input_schema, annotations=annotations)


def test_a_schema_reply_holds_objects_not_json_text() -> None:
    body = reply_body(pb.GetSchemaResponse(tools=[_tool()]), pb.GetSchemaResponse.DESCRIPTOR)
    [tool] = body["tools"]
    assert tool["input_schema"] == orjson.loads(SCHEMA)
    assert tool["annotations"] == {}
    # No output schema declared: null, not an empty string.
    assert tool["output_schema"] is None


def test_a_schema_inside_an_affordance_is_an_object_too() -> None:
    move = pb.Affordance(
        tool_id="hr/get_employee", schema=_tool(annotations='{"readOnlyHint": true}')
    )
    reply = pb.GetAffordancesResponse(affordances=[move, pb.Affordance(tool_id="hr/x")])
    body = reply_body(reply, pb.GetAffordancesResponse.DESCRIPTOR)
    assert body["affordances"][0]["schema"]["annotations"] == {"readOnlyHint": True}
    assert "schema" not in body["affordances"][1]


def test_numbers_json_cannot_carry_still_make_a_reply() -> None:
    # A YAML .nan and an integer past 64 bits pass validation and json.dumps writes them.
    tool = _tool(input_schema='{"type": "object", "default": NaN, "maximum": 1' + "0" * 30 + "}")
    body = reply_body(pb.GetSchemaResponse(tools=[tool]), pb.GetSchemaResponse.DESCRIPTOR)
    schema = orjson.loads(orjson.dumps(body))["tools"][0]["input_schema"]
    assert schema["default"] is None
    assert schema["maximum"] == 1e30


def test_a_search_reply_is_the_plain_mapping() -> None:
    reply = pb.SearchResponse(hits=[pb.SearchHit(id="hr/get_employee", score=0.5)])
    body = reply_body(reply, pb.SearchResponse.DESCRIPTOR)
    assert body["hits"][0]["id"] == "hr/get_employee"
    assert body["weak_match"] is False
