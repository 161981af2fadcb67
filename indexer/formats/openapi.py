"""OpenAPI 3.0/3.1 documents (JSON or YAML) -> a native catalog document, one tool per operation.

A tool's input schema is one object whose properties are the operation's path, query, header
and cookie parameters plus `body` for the request body; the HTTP binding (method, path, where
each property goes) rides in the `x-openapi` annotation so a caller can still make the request.
Local `$ref`s are inlined (cycles become `$defs`). OAuth scopes in the security requirement
become the tool's required scopes. `indexer.formats` validates the result.
"""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

from indexer.formats.openapi_schema import (
    describes_object,
    json_schema_from_openapi30,
    operation_scopes,
    pick_media,
)
from indexer.formats.rules import MAX_CATALOG_DESCRIPTION, MAX_TITLE, MAX_VERSION, Converted
from indexer.formats.schema_refs import RefError, RefResolver
from indexer.model import CatalogFormat

HTTP_METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")
LOCATIONS = ("path", "query", "header", "cookie")
# OpenAPI: header parameters with these names "SHALL be ignored" (the HTTP layer sets them).
_IGNORED_HEADERS = frozenset({"accept", "content-type", "authorization"})
_UNSAFE = re.compile(r"[^A-Za-z0-9]+")
_VERSION = re.compile(r"^3\.[01]\.")
FIELDS = {
    "name": "operationId",
    "description": "summary/description",
    "input_schema": "parameters/requestBody",
    "output_schema": "responses",
    "required_scopes": "security",
}


class _Skip(Exception):
    """An operation that cannot become a tool; the message names where and why."""


def convert(document: object) -> Converted:
    converted = Converted(
        format=CatalogFormat.OPENAPI,
        document={"capreg": 1, "tools": []},
        sources=[],
        fields=dict(FIELDS),
    )
    problems = converted.problems
    if not isinstance(document, dict):
        problems.append("(root): an OpenAPI document must be an object")
        return converted
    spec = _plain(document)
    version = spec.get("openapi")
    if not isinstance(version, str) or not _VERSION.match(version):
        problems.append(f"openapi: must be a 3.0.x or 3.1.x version (is {version!r})")
        return converted
    converted.document.update(_catalog_facts(spec.get("info")))
    paths = spec.get("paths", {})  # 3.1 allows a document of webhooks only
    if not isinstance(paths, dict):
        problems.append("paths: must be an object")
        return converted
    context = _Context(spec, legacy=version.startswith("3.0."))
    for path, item in paths.items():
        try:
            item = context.refs.follow(item)
        except RefError as exc:
            problems.append(f"paths.{path}: {exc}")
            continue
        if not isinstance(item, dict):
            problems.append(f"paths.{path}: must be an object")
            continue
        for method in (m for m in item if m in HTTP_METHODS):
            where = f"paths.{path}.{method}"
            try:
                tool = context.tool(path, method, item)
            except (_Skip, RefError) as exc:
                problems.append(f"{where}: {exc}")
                continue
            converted.document["tools"].append(tool)
            converted.sources.append(where)
    return converted


def _catalog_facts(info: object) -> dict[str, str]:
    if not isinstance(info, dict):
        return {}
    facts: dict[str, str] = {}
    text = info.get("summary") or info.get("description")
    if isinstance(text, str) and text.strip():
        # Specs open with long Markdown; the catalog line is its first paragraph.
        facts["description"] = text.strip().split("\n\n")[0][:MAX_CATALOG_DESCRIPTION]
    if isinstance(info.get("title"), str):
        facts["title"] = info["title"][:MAX_TITLE]
    if isinstance(info.get("version"), str | int | float):
        facts["version"] = str(info["version"])[:MAX_VERSION]
    return facts


def _plain(value: object) -> Any:
    """JSON values only: YAML reads `200:` as an int key and `2024-01-01` as a date."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, dt.date | dt.datetime):
        return value.isoformat()
    if value is None or isinstance(value, str | int | float | bool):
        return value
    return str(value)


class _Context:
    """What every operation of one document shares."""

    def __init__(self, spec: dict[str, Any], *, legacy: bool) -> None:
        self.spec = spec
        self.refs = RefResolver(spec)
        self.legacy = legacy
        components = spec.get("components")
        schemes = components.get("securitySchemes") if isinstance(components, dict) else None
        self.oauth = {
            name
            for name, scheme in (schemes.items() if isinstance(schemes, dict) else [])
            if isinstance(scheme, dict) and scheme.get("type") in ("oauth2", "openIdConnect")
        }

    def tool(self, path: str, method: str, item: dict[str, Any]) -> dict[str, Any]:
        operation = item[method]
        if not isinstance(operation, dict):
            raise _Skip("must be an object")
        expansion = self.refs.expansion()
        properties: dict[str, Any] = {}
        required: list[str] = []
        binding: list[dict[str, str]] = []
        for parameter in self._parameters(item, operation):
            name, location = parameter["name"], parameter["in"]
            prop = name
            while prop in properties:  # the same name in two locations: say which
                prop = f"{location}_{prop}"
            schema = expansion.expand(_parameter_schema(parameter))
            if not isinstance(schema, dict):
                raise _Skip(f"parameter '{name}': its schema must be an object")
            if isinstance(parameter.get("description"), str):
                schema = {**schema, "description": parameter["description"]}
            if parameter.get("deprecated") is True:
                schema = {**schema, "deprecated": True}
            properties[prop] = schema
            if location == "path" or parameter.get("required") is True:
                required.append(prop)
            binding.append({"in": location, "name": name, "property": prop})
        openapi: dict[str, Any] = {"method": method.upper(), "path": path, "parameters": binding}
        body = self.refs.follow(operation.get("requestBody"))
        if body is not None and not isinstance(body, dict):
            raise _Skip("requestBody: must be an object")
        if isinstance(body, dict):
            prop = "body"
            while prop in properties:
                prop = f"request_{prop}"
            media_type, media = pick_media(body.get("content"))
            schema = expansion.expand(media.get("schema", {}))
            if isinstance(body.get("description"), str) and isinstance(schema, dict):
                # Describes this body in this operation, so it wins over the shared schema's.
                schema = {**schema, "description": body["description"]}
            properties[prop] = schema
            if body.get("required") is True:
                required.append(prop)
            openapi["body"] = {"property": prop, "content_type": media_type}
        input_schema: dict[str, Any] = {"type": "object", "properties": properties}
        if required:
            input_schema["required"] = required
        if expansion.defs:
            input_schema["$defs"] = expansion.defs
        server = self._server(item, operation)
        if server:
            openapi["server"] = server
        tool: dict[str, Any] = {
            "name": operation.get("operationId", _generated_name(method, path)),
            "description": _description(operation),
            "input_schema": self._dialect(input_schema),
            "annotations": {**_hints(method), "x-openapi": openapi},
            "required_scopes": operation_scopes(
                operation.get("security", self.spec.get("security")), self.oauth
            ),
        }
        if operation.get("tags") is not None:
            tool["tags"] = operation["tags"]
        output = self._output_schema(operation.get("responses"))
        if output is not None:
            tool["output_schema"] = output
        return tool

    def _parameters(self, item: dict[str, Any], operation: dict[str, Any]) -> list[Any]:
        """Path-level parameters overridden by operation-level ones with the same name+in."""
        merged: dict[tuple[str, str], dict[str, Any]] = {}
        for raw in (item.get("parameters"), operation.get("parameters")):
            if raw is None:
                continue
            if not isinstance(raw, list):
                raise _Skip("parameters: must be a list")
            for index, entry in enumerate(raw):
                parameter = self.refs.follow(entry)
                if (
                    not isinstance(parameter, dict)
                    or not isinstance(parameter.get("name"), str)
                    or parameter.get("in") not in LOCATIONS
                ):
                    raise _Skip(
                        f"parameters[{index}]: must be an object with a 'name' and 'in' "
                        f"(one of {', '.join(LOCATIONS)})"
                    )
                if parameter["in"] == "header" and parameter["name"].lower() in _IGNORED_HEADERS:
                    continue
                merged[(parameter["name"], parameter["in"])] = parameter
        return list(merged.values())

    def _output_schema(self, responses: object) -> dict[str, Any] | None:
        """The success response's JSON schema when it is an object (what MCP can express)."""
        if not isinstance(responses, dict):
            return None
        success = sorted(code for code in responses if code.startswith("2"))  # 200 < 201 < 2XX
        if not success:
            return None
        response = self.refs.follow(responses[success[0]])
        media_type, media = pick_media(
            response.get("content") if isinstance(response, dict) else None
        )
        if media_type is None or "schema" not in media:
            return None
        expansion = self.refs.expansion()
        schema = expansion.expand(media["schema"])
        if not isinstance(schema, dict) or not describes_object(schema):
            return None
        schema = {"type": "object", **schema}
        if expansion.defs:
            schema["$defs"] = expansion.defs
        return self._dialect(schema)

    def _server(self, item: dict[str, Any], operation: dict[str, Any]) -> str:
        for owner in (operation, item, self.spec):
            servers = owner.get("servers")
            if isinstance(servers, list) and servers and isinstance(servers[0], dict):
                url = servers[0].get("url")
                return url if isinstance(url, str) else ""
        return ""

    def _dialect(self, schema: dict[str, Any]) -> dict[str, Any]:
        converted: dict[str, Any] = json_schema_from_openapi30(schema) if self.legacy else schema
        return converted


def _parameter_schema(parameter: dict[str, Any]) -> object:
    if "schema" in parameter:
        return parameter["schema"]
    _, media = pick_media(parameter.get("content"))
    return media.get("schema", {})


def _description(operation: dict[str, Any]) -> object:
    parts = [operation.get(k) for k in ("summary", "description")]
    if any(p is not None and not isinstance(p, str) for p in parts):
        # Pass the odd value on so the validator names it.
        return next(p for p in parts if p is not None and not isinstance(p, str))
    texts = [p.strip() for p in parts if isinstance(p, str) and p.strip()]
    if len(texts) == 2 and texts[1].startswith(texts[0].rstrip(".")):
        texts = texts[1:]
    text = "\n\n".join(texts)
    if operation.get("deprecated") is True:
        text = f"Deprecated. {text}".strip()
    return text


def _generated_name(method: str, path: str) -> str:
    """`GET /pets/{petId}` -> `get_pets_petId`, for operations without an operationId."""
    return "_".join(p for p in [method, *_UNSAFE.split(path)] if p)


def _hints(method: str) -> dict[str, bool]:
    """MCP annotations implied by HTTP method semantics (RFC 9110 safe/idempotent)."""
    if method in ("get", "head", "options", "trace"):
        return {"readOnlyHint": True}
    hints = {"readOnlyHint": False}
    if method in ("put", "delete"):
        hints["idempotentHint"] = True
    if method == "delete":
        hints["destructiveHint"] = True
    return hints
