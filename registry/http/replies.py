"""A response message as the HTTP API writes it: the protobuf JSON mapping with every field
printed, except that the fields gRPC carries as JSON text (a tool's input and output schemas
and its annotations) are JSON values, so a client reads `tool["input_schema"]["properties"]`
without parsing a string inside the JSON it already parsed."""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

import orjson
from google.protobuf import json_format
from google.protobuf.descriptor import Descriptor
from google.protobuf.message import Message

# Message -> its JSON text fields, each with the JSON schema of the value it becomes (the
# OpenAPI document reads this table too). An empty text (no output schema) becomes null.
JSON_TEXT_FIELDS: Mapping[str, Mapping[str, dict[str, Any]]] = MappingProxyType(
    {
        "capreg.v1.ToolSchema": {
            "input_schema": {"type": "object", "description": "JSON Schema of the arguments"},
            "output_schema": {
                "type": ["object", "null"],
                "description": "JSON Schema of the result; null when the tool declares none",
            },
            "annotations": {
                "type": "object",
                "description": "MCP tool annotations (title, readOnlyHint, ...); {} when none",
            },
        }
    }
)


def reply_body(reply: Message, response_type: Descriptor) -> dict[str, Any]:
    """`reply`, a `response_type` message, as the HTTP API's JSON object."""
    body = json_format.MessageToDict(
        reply, preserving_proto_field_name=True, always_print_fields_with_no_presence=True
    )
    _decode_json_text(body, response_type)
    return body


def _decode_json_text(body: dict[str, Any], message: Descriptor) -> None:
    """Replaces, in place, each JSON text field of `body` (a `message`) and of the messages
    inside it with the value the text holds."""
    for name in JSON_TEXT_FIELDS.get(message.full_name, ()):
        text = body.get(name)
        if isinstance(text, str):
            body[name] = _value(text) if text else None
    for field in message.fields:
        nested = field.message_type
        if nested is None or not _holds_json_text(nested):
            continue
        value = body.get(field.name)
        for item in (value or []) if field.is_repeated else [value]:
            if isinstance(item, dict):
                _decode_json_text(item, nested)


def _value(text: str) -> Any:
    """The value of JSON text the registry wrote (json.dumps of a validated value)."""
    try:
        # orjson reads an integer past 64 bits as a float, as a JavaScript client would.
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        # NaN and Infinity (a YAML .nan, written out by json.dumps) are not JSON: null.
        return json.loads(text, parse_constant=lambda _constant: None, parse_int=_integer)


def _integer(digits: str) -> int | float:
    number = int(digits)
    return number if -(2**63) <= number < 2**64 else float(number)


@functools.cache
def _holds_json_text(message: Descriptor) -> bool:
    """Whether a message of this type holds a JSON text field, itself or inside: a search
    answer does not, so it is written without a walk."""
    pending, seen = [message], set()
    while pending:
        current = pending.pop()
        if current.full_name in seen:
            continue
        seen.add(current.full_name)
        if current.full_name in JSON_TEXT_FIELDS:
            return True
        pending.extend(f.message_type for f in current.fields if f.message_type is not None)
    return False
