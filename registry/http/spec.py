"""The OpenAPI 3.1 document of the HTTP API, generated from the route table and the request
and response messages' protobuf descriptors (never written by hand)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import grpc
from google.protobuf.descriptor import Descriptor, FieldDescriptor

from registry.http.binding import BODY_MEDIA_TYPES
from registry.http.errors import BODY_TOO_LARGE, HTTP_STATUS
from registry.http.replies import JSON_TEXT_FIELDS
from registry.http.routes import ROUTES, SERVICE, Route, Source

OPENAPI_VERSION = "3.1.0"
_REF = "#/components/schemas/"
_SCALARS: Mapping[int, dict[str, Any]] = {
    FieldDescriptor.TYPE_STRING: {"type": "string"},
    FieldDescriptor.TYPE_BOOL: {"type": "boolean"},
    FieldDescriptor.TYPE_FLOAT: {"type": "number"},
    FieldDescriptor.TYPE_DOUBLE: {"type": "number"},
    FieldDescriptor.TYPE_UINT32: {"type": "integer", "minimum": 0, "maximum": 2**32 - 1},
    FieldDescriptor.TYPE_INT32: {"type": "integer", "format": "int32"},
    # The protobuf JSON mapping prints 64-bit integers as decimal strings (JavaScript numbers
    # lose precision past 2**53); its parsers accept either.
    FieldDescriptor.TYPE_UINT64: {
        "type": ["string", "integer"],
        "pattern": "^[0-9]+$",
        "minimum": 0,
        "description": "64-bit: a decimal string in responses; a string or a number in requests",
    },
    FieldDescriptor.TYPE_INT64: {
        "type": ["string", "integer"],
        "pattern": "^-?[0-9]+$",
        "description": "64-bit: a decimal string in responses; a string or a number in requests",
    },
    FieldDescriptor.TYPE_BYTES: {"type": "string", "contentEncoding": "base64"},
}


def field_schema(described: FieldDescriptor) -> dict[str, Any]:
    """The JSON schema of one field as the protobuf JSON mapping writes it."""
    message = described.message_type
    if message is not None and message.GetOptions().map_entry:
        value = message.fields_by_name["value"]
        return {"type": "object", "additionalProperties": field_schema(value)}
    if described.is_repeated:
        return {"type": "array", "items": _single(described)}
    return _single(described)


def _single(described: FieldDescriptor) -> dict[str, Any]:
    if described.message_type is not None:
        return {"$ref": _REF + described.message_type.name}
    if described.enum_type is not None:
        return {"type": "string", "enum": [v.name for v in described.enum_type.values]}
    return dict(_SCALARS[described.type])


def message_schema(message: Descriptor) -> dict[str, Any]:
    """A message's schema. Every field without presence is always printed in responses
    (absent means default, explicitly); requests may leave any field out."""
    # Fields gRPC carries as JSON text are JSON values over HTTP (registry/http/replies.py).
    decoded = JSON_TEXT_FIELDS.get(message.full_name, {})
    schema: dict[str, Any] = {
        "type": "object",
        "title": message.full_name,
        "properties": {
            f.name: dict(decoded[f.name]) if f.name in decoded else field_schema(f)
            for f in message.fields
        },
    }
    real_oneofs = [o for o in message.oneofs if len(o.fields) > 1]
    for oneof in real_oneofs:
        names = ", ".join(f.name for f in oneof.fields)
        schema["description"] = f"Exactly one of: {names}."
        schema["oneOf"] = [{"required": [f.name]} for f in oneof.fields]
    return schema


def _messages(roots: list[Descriptor]) -> Iterator[Descriptor]:
    """Every message reachable from `roots` (map entries are inlined, not listed)."""
    seen: set[str] = set()
    pending = list(roots)
    while pending:
        message = pending.pop()
        if message.full_name in seen:
            continue
        seen.add(message.full_name)
        yield message
        for described in message.fields:
            nested = described.message_type
            if nested is None:
                continue
            if nested.GetOptions().map_entry:
                value = nested.fields_by_name["value"].message_type
                if value is not None:
                    pending.append(value)
            else:
                pending.append(nested)


def _parameters(route: Route) -> list[dict[str, Any]]:
    request = route.request_type
    parameters = [
        {
            "name": name,
            "in": "path",
            "required": True,
            "schema": field_schema(request.fields_by_name[name]),
            "description": f"{request.name}.{name}",
        }
        for name in route.path_fields
    ]
    for name, target in route.query_fields.items():
        described = request.fields_by_name[target]
        parameter: dict[str, Any] = {
            "name": name,
            "in": "query",
            "required": False,
            "schema": field_schema(described),
            "description": f"{request.name}.{target}"
            + (" (repeat the parameter for each value)" if described.is_repeated else ""),
        }
        if described.is_repeated:
            parameter["style"] = "form"
            parameter["explode"] = True
        parameters.append(parameter)
    return parameters


def _request_body(route: Route) -> dict[str, Any] | None:
    if route.source is Source.JSON:
        schema = {"$ref": _REF + route.request_type.name}
        return {"required": True, "content": {"application/json": {"schema": schema}}}
    if route.source is Source.TEXT:
        text = {"schema": {"type": "string"}}
        return {
            "required": True,
            "description": f"{route.request_type.name}.{route.text_field}: the raw text",
            "content": dict.fromkeys(BODY_MEDIA_TYPES, text),
        }
    return None


def _refusals(route: Route) -> dict[str, Any]:
    statuses = {
        HTTP_STATUS[grpc.StatusCode.INVALID_ARGUMENT]: "Error",
        HTTP_STATUS[grpc.StatusCode.UNAUTHENTICATED]: "Error",
        HTTP_STATUS[grpc.StatusCode.NOT_FOUND]: "Error",
        HTTP_STATUS[grpc.StatusCode.RESOURCE_EXHAUSTED]: "TooManyRequests",
        HTTP_STATUS[grpc.StatusCode.UNAVAILABLE]: "Error",
    }
    if route.admin:
        statuses[HTTP_STATUS[grpc.StatusCode.PERMISSION_DENIED]] = "Error"
    if route.source is not Source.QUERY:
        statuses[BODY_TOO_LARGE] = "Error"
    refusals: dict[str, Any] = {
        str(status): {"$ref": f"#/components/responses/{name}"}
        for status, name in sorted(statuses.items())
    }
    refusals["default"] = {"$ref": "#/components/responses/Error"}
    return refusals


def _operation(route: Route) -> dict[str, Any]:
    operation: dict[str, Any] = {
        "operationId": route.rpc,
        "summary": route.summary,
        "description": (
            f"The gRPC call {SERVICE.full_name}/{route.rpc}: request {route.request_type.name}, "
            f"response {route.response_type.name} (proto/capreg/v1/registry.proto documents "
            "every field)." + (" Needs the registry:admin scope." if route.admin else "")
        ),
        "parameters": _parameters(route),
        "responses": {
            "200": {
                "description": route.response_type.name,
                "headers": {"x-request-id": {"$ref": "#/components/headers/RequestId"}},
                "content": {
                    "application/json": {"schema": {"$ref": _REF + route.response_type.name}}
                },
            },
            **_refusals(route),
        },
    }
    body = _request_body(route)
    if body is not None:
        operation["requestBody"] = body
    return operation


def _error_schema() -> dict[str, Any]:
    return {
        "type": "object",
        "required": ["error"],
        "properties": {
            "error": {
                "type": "object",
                "required": ["code", "status", "message"],
                "properties": {
                    "code": {"type": "string", "enum": [c.name for c in HTTP_STATUS]},
                    "status": {"type": "integer"},
                    "message": {"type": "string"},
                    "suggestions": {
                        "description": "Each unknown name -> the closest names the caller may use",
                        "type": "object",
                        "additionalProperties": {"type": "array", "items": {"type": "string"}},
                    },
                    "legal_moves": {"type": "array", "items": {"type": "string"}},
                    "retry_after_s": {"type": "number", "minimum": 0},
                    "next_call": {
                        "description": "The corrected call, ready to send",
                        "type": "object",
                        "required": ["method", "path"],
                        "properties": {
                            "method": {"type": "string"},
                            "path": {"type": "string"},
                            "body": {"type": "object"},
                        },
                    },
                },
            }
        },
    }


def _status_only(operation_id: str, description: str) -> dict[str, Any]:
    return {
        "get": {
            "operationId": operation_id,
            "summary": description,
            "security": [],
            "responses": {
                "200": {
                    "description": "serving",
                    "content": {"application/json": {"schema": {"type": "object"}}},
                },
                "503": {"$ref": "#/components/responses/Error"},
            },
        }
    }


def openapi_document(routes: Mapping[str, Route] = ROUTES) -> dict[str, Any]:
    """The document for `routes`: one operation per RPC, one schema per message."""
    paths: dict[str, dict[str, Any]] = {}
    for route in routes.values():
        paths.setdefault(route.path, {})[route.method.lower()] = _operation(route)
    paths["/healthz"] = _status_only("Alive", "The process answers")
    paths["/readyz"] = _status_only("Ready", "The index is loaded and answers (503 until then)")
    roots = [r.request_type for r in routes.values()] + [r.response_type for r in routes.values()]
    schemas = {m.name: message_schema(m) for m in _messages(roots)}
    schemas["Error"] = _error_schema()
    error = {"application/json": {"schema": {"$ref": _REF + "Error"}}}
    return {
        "openapi": OPENAPI_VERSION,
        "info": {
            "title": "capreg",
            "version": SERVICE.file.package,
            "description": (
                "The capability registry over HTTP: each operation is one gRPC call of "
                f"{SERVICE.full_name}, its request read from the path, query and body, its "
                "response the protobuf JSON mapping with every field printed. Errors have one "
                "shape (Error) and a status from one table (docs/http.md)."
            ),
        },
        "security": [{"bearer": []}],
        "paths": dict(sorted(paths.items())),
        "components": {
            "schemas": dict(sorted(schemas.items())),
            "securitySchemes": {
                "bearer": {
                    "type": "http",
                    "scheme": "bearer",
                    "description": "A capreg API key (`capreg keys add`)",
                }
            },
            "headers": {
                "RequestId": {
                    "description": "The request id: the caller's x-request-id, else a new one",
                    "schema": {"type": "string"},
                },
                "RetryAfter": {
                    "description": "Whole seconds to wait (error.retry_after_s is precise)",
                    "schema": {"type": "integer", "minimum": 1},
                },
            },
            "responses": {
                "Error": {"description": "A refusal; see error.code", "content": error},
                "TooManyRequests": {
                    "description": "Over the caller's rate or concurrency, or the server is busy",
                    "headers": {"Retry-After": {"$ref": "#/components/headers/RetryAfter"}},
                    "content": error,
                },
            },
        },
    }
