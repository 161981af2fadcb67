"""The parts of an OpenAPI operation that need translating: 3.0 schemas, media, security."""

from __future__ import annotations

from typing import Any

# Preferred request/response encodings, best first; anything else is taken as listed.
_MEDIA_PREFERENCE = ("application/json", "application/x-www-form-urlencoded", "multipart/form-data")


def pick_media(content: object) -> tuple[str | None, dict[str, Any]]:
    """(media type, media object) of the best-described encoding, or (None, {})."""
    if not isinstance(content, dict) or not content:
        return None, {}
    ranked = sorted(
        (k for k in content if isinstance(content[k], dict)),
        key=lambda k: (
            _MEDIA_PREFERENCE.index(k) if k in _MEDIA_PREFERENCE else 1 if "json" in k else 9
        ),
    )
    if not ranked:
        return None, {}
    return ranked[0], content[ranked[0]]


def operation_scopes(requirements: object, oauth_schemes: set[str]) -> list[str]:
    """Scopes a caller needs: those of the weakest alternative requirement.

    Requirements are alternatives (any one suffices) of AND-ed schemes; capreg's scopes are
    AND-ed, so the least demanding alternative is what a caller must hold. An alternative
    with no OAuth scopes (an API key, or `{}` for optional auth) requires none.
    """
    if not isinstance(requirements, list) or not requirements:
        return []
    options = []
    for requirement in requirements:
        if not isinstance(requirement, dict):
            continue
        options.append(
            sorted(
                {
                    scope
                    for scheme, scopes in requirement.items()
                    if scheme in oauth_schemes and isinstance(scopes, list)
                    for scope in scopes
                    if isinstance(scope, str)
                }
            )
        )
    return min(options, key=len) if options else []


def describes_object(schema: dict[str, Any]) -> bool:
    """Whether only objects can match: `type: object`, or an untyped `allOf` of objects."""
    if "type" in schema:
        return bool(schema["type"] == "object")
    parts = schema.get("allOf")
    return (
        isinstance(parts, list)
        and bool(parts)
        and all(isinstance(p, dict) and describes_object(p) for p in parts)
    )


def json_schema_from_openapi30(node: Any) -> Any:
    """An OpenAPI 3.0 Schema Object as JSON Schema: `nullable` and boolean exclusive bounds.

    3.1 schemas are JSON Schema 2020-12 already; 3.0's dialect differs in these keywords, and
    a JSON Schema reader would otherwise ignore `nullable` or reject a boolean bound.
    """
    if isinstance(node, list):
        return [json_schema_from_openapi30(item) for item in node]
    if not isinstance(node, dict):
        return node
    schema = {key: json_schema_from_openapi30(value) for key, value in node.items()}
    if isinstance(schema.get("nullable"), bool) and schema.pop("nullable"):
        kind = schema.get("type")
        if isinstance(kind, str):
            schema["type"] = [kind, "null"]
        if isinstance(schema.get("enum"), list) and None not in schema["enum"]:
            schema["enum"] = [*schema["enum"], None]
    for exclusive, bound in (("exclusiveMinimum", "minimum"), ("exclusiveMaximum", "maximum")):
        flag = schema.get(exclusive)
        if isinstance(flag, bool):
            del schema[exclusive]
            if flag and bound in schema:
                schema[exclusive] = schema.pop(bound)
    return schema
