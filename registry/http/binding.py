"""Reads a route's request message from an HTTP request (path, query string, body) and writes
a request message back as the HTTP call that sends it (an error's `next_call`)."""

from __future__ import annotations

import asyncio
from typing import Any
from urllib.parse import quote, urlencode

import orjson
from google.protobuf import json_format
from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message
from starlette.requests import Request

from registry.errors import InvalidRequest
from registry.http.body import body_limit, read_body
from registry.http.body_shape import check_shape
from registry.http.routes import Route, Source
from registry.wire import MAX_QUERY_CHARS

# The longest value any query parameter may carry (a search's text); each field's own limit
# is checked by the domain core, naming the field.
MAX_PARAMETER_CHARS = MAX_QUERY_CHARS
_UNSIGNED_BITS = {FieldDescriptor.TYPE_UINT32: 32, FieldDescriptor.TYPE_UINT64: 64}
_SIGNED_BITS = {FieldDescriptor.TYPE_INT32: 32, FieldDescriptor.TYPE_INT64: 64}
_BOOLEANS = {"true": True, "1": True, "false": False, "0": False}
# What a Source.TEXT body may be sent as: the text is read the same way whatever is declared.
BODY_MEDIA_TYPES = ("application/yaml", "application/json", "text/plain")
# JSON bodies up to this size are parsed on the event loop (well under a millisecond); a
# larger one (only an administrator's may be) on a worker thread, so cache hits and health
# checks are answered meanwhile.
INLINE_PARSE_BYTES = 64 * 1024


async def read_request(route: Route, request: Request) -> Message:
    """`route`'s request message from `request`; InvalidRequest naming the parameter or
    field for anything malformed."""
    if route.source is Source.JSON:
        body = await read_body(request, body_limit(route))
        if len(body) <= INLINE_PARSE_BYTES:
            return parse_json(route, body)
        return await asyncio.to_thread(parse_json, route, body)
    message = route.new_request()
    for name in route.path_fields:
        setattr(message, name, request.path_params[name])
    _read_query(route, request, message)
    if route.source is Source.TEXT:
        body = await read_body(request, body_limit(route))
        try:
            setattr(message, route.text_field, body.decode("utf-8"))
        except UnicodeDecodeError as exc:
            raise InvalidRequest(f"body: not UTF-8 text (byte {exc.start})") from None
    return message


def parse_json(route: Route, body: bytes) -> Message:
    """`route`'s request message from a JSON body; a list longer than its field may hold is
    refused before its items are read (reading 200,000 of them would take seconds)."""
    try:
        document = {} if body.isspace() or not body else orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise InvalidRequest(f"body: not valid JSON ({exc})") from None
    if not isinstance(document, dict):
        raise InvalidRequest(f"body: must be a JSON object ({route.request_type.name})")
    for name, most in route.max_items.items():
        items = document.get(name)
        if isinstance(items, list) and len(items) > most:
            raise InvalidRequest(f"{name}: at most {most} per call (got {len(items)})")
    check_shape(document, route.request_type)
    message = route.new_request()
    try:
        json_format.ParseDict(document, message)
    except json_format.ParseError as exc:
        raise InvalidRequest(f"body: {exc}") from None
    return message


def _read_query(route: Route, request: Request, message: Message) -> None:
    fields = route.query_fields
    by_name = route.request_type.fields_by_name
    seen: set[str] = set()
    for name, value in request.query_params.multi_items():
        target = fields.get(name)
        if target is None:
            known = ", ".join(sorted(fields)) or "none"
            raise InvalidRequest(f"{name[:64]}: not a parameter of this call (it takes: {known})")
        if len(value) > MAX_PARAMETER_CHARS:
            raise InvalidRequest(
                f"{name}: at most {MAX_PARAMETER_CHARS} characters (got {len(value)})"
            )
        described = by_name[target]
        parsed = _scalar(name, described, value)
        if described.is_repeated:
            getattr(message, target).append(parsed)
        elif name in seen:
            raise InvalidRequest(f"{name}: given more than once")
        else:
            setattr(message, target, parsed)
        seen.add(name)


def _scalar(name: str, described: FieldDescriptor, value: str) -> Any:
    kind = described.type
    if kind == FieldDescriptor.TYPE_STRING:
        return value
    if kind == FieldDescriptor.TYPE_BOOL:
        if value.lower() not in _BOOLEANS:
            raise InvalidRequest(f"{name}: must be true or false (got {value[:32]!r})")
        return _BOOLEANS[value.lower()]
    if kind in _UNSIGNED_BITS:
        low, high = 0, 2 ** _UNSIGNED_BITS[kind] - 1
    elif kind in _SIGNED_BITS:
        high = 2 ** (_SIGNED_BITS[kind] - 1) - 1
        low = -high - 1
    else:
        # Only scalar fields travel in a query string; a route reading others is a bug here.
        raise InvalidRequest(f"{name}: cannot be given in the query string")
    try:
        number = int(value)
    except ValueError:
        number = None
    if number is None or not low <= number <= high:
        raise InvalidRequest(f"{name}: must be a whole number from {low} to {high}")
    return number


def call_for(route: Route, message: Message) -> dict[str, Any]:
    """The HTTP call that sends `message` on `route`: method, path with its query string,
    and the JSON body where the route takes one. Fields left at their default are left out."""
    path = route.path
    for name in route.path_fields:
        path = path.replace("{" + name + "}", quote(getattr(message, name), safe=""))
    call: dict[str, Any] = {"method": route.method}
    if route.source is Source.JSON:
        call["path"] = path
        call["body"] = json_format.MessageToDict(message, preserving_proto_field_name=True)
        return call
    pairs: list[tuple[str, Any]] = []
    for name, target in route.query_fields.items():
        value = getattr(message, target)
        values = list(value) if route.request_type.fields_by_name[target].is_repeated else [value]
        pairs.extend((name, _query_text(v)) for v in values if v)
    call["path"] = f"{path}?{urlencode(pairs)}" if pairs else path
    return call


def _query_text(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
