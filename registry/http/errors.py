"""The one table from gRPC status codes to HTTP statuses, and the one error body shape, with
the way forward read from the domain error behind the refusal."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

import grpc
from google.protobuf.message import Message

from registry.errors import (
    CatalogNotFound,
    IllegalMove,
    Overloaded,
    ToolsNotFound,
    WorkflowNotFound,
)
from registry.http.binding import call_for
from registry.http.body import BodyTooLarge, BodyTooSlow
from registry.http.call_context import HttpAbort
from registry.http.routes import Route

# Every gRPC code, once. FAILED_PRECONDITION is 409, not 412: 412 answers a failed
# conditional header (If-Match), which this API has none of, and clients treat it so; the
# call was refused for the state of a resource (a workflow move not legal in its state),
# which is what 409 says (docs/decisions/0053-http-is-a-transport-over-the-servicer.md).
HTTP_STATUS: Mapping[grpc.StatusCode, int] = MappingProxyType(
    {
        grpc.StatusCode.OK: 200,
        grpc.StatusCode.CANCELLED: 499,
        grpc.StatusCode.UNKNOWN: 500,
        grpc.StatusCode.INVALID_ARGUMENT: 400,
        grpc.StatusCode.DEADLINE_EXCEEDED: 504,
        grpc.StatusCode.NOT_FOUND: 404,
        grpc.StatusCode.ALREADY_EXISTS: 409,
        grpc.StatusCode.PERMISSION_DENIED: 403,
        grpc.StatusCode.RESOURCE_EXHAUSTED: 429,
        grpc.StatusCode.FAILED_PRECONDITION: 409,
        grpc.StatusCode.ABORTED: 409,
        grpc.StatusCode.OUT_OF_RANGE: 400,
        grpc.StatusCode.UNIMPLEMENTED: 501,
        grpc.StatusCode.INTERNAL: 500,
        grpc.StatusCode.UNAVAILABLE: 503,
        grpc.StatusCode.DATA_LOSS: 500,
        grpc.StatusCode.UNAUTHENTICATED: 401,
    }
)
# The refinements: a body over the size limit, or one that stopped arriving, is still
# INVALID_ARGUMENT, but HTTP has a status of its own for each, which proxies and clients
# understand without reading the body.
BODY_TOO_LARGE = 413
BODY_TOO_SLOW = 408


@dataclass(frozen=True)
class ErrorReply:
    status: int
    body: dict[str, Any]
    headers: dict[str, str]


def error_reply(
    code: grpc.StatusCode,
    message: str,
    cause: BaseException | None = None,
    *,
    route: Route | None = None,
    request: Message | None = None,
) -> ErrorReply:
    """`{"error": {"code", "status", "message", ...the way forward}}` for a refusal with
    `code` and `message`, caused by the domain error `cause` (None when not known)."""
    if isinstance(cause, BodyTooLarge):
        status = BODY_TOO_LARGE
    elif isinstance(cause, BodyTooSlow):
        status = BODY_TOO_SLOW
    else:
        status = HTTP_STATUS[code]
    error: dict[str, Any] = {"code": code.name, "status": status, "message": message}
    headers: dict[str, str] = {}
    if isinstance(cause, Overloaded):
        error["retry_after_s"] = round(cause.retry_after, 3)
        # Retry-After takes whole seconds (RFC 9110); the body keeps the precise wait.
        headers["retry-after"] = str(max(1, math.ceil(cause.retry_after)))
    if isinstance(cause, ToolsNotFound):
        error["suggestions"] = cause.missing
    elif isinstance(cause, CatalogNotFound):
        error["suggestions"] = {cause.name: cause.suggestions}
    elif isinstance(cause, WorkflowNotFound):
        error["suggestions"] = {cause.workflow_id: cause.suggestions}
    elif isinstance(cause, IllegalMove):
        error["legal_moves"] = cause.legal
    # A corrected call is offered for reads only: guessing at a write is not a way forward.
    if cause is not None and route is not None and request is not None and not route.admin:
        corrected = _corrected(cause, request)
        if corrected is not None:
            error["next_call"] = call_for(route, corrected)
    return ErrorReply(status, {"error": error}, headers)


def abort_reply(abort: HttpAbort, route: Route, request: Message | None) -> ErrorReply:
    """The reply to a call the servicer or an interceptor refused; the domain error is the
    abort's `__context__` (it was raised in the `except` block that mapped that error)."""
    return error_reply(abort.code, abort.details, abort.__context__, route=route, request=request)


def _corrected(cause: BaseException, request: Message) -> Message | None:
    """`request` with the unknown names replaced by their closest suggestion (when every
    unknown name has one) or without the move that was not legal; None when no corrected
    call is known."""
    field, closest, cleared = _correction(cause)
    if field is None and not cleared:
        return None
    fields = request.DESCRIPTOR.fields_by_name
    if field is not None and (field not in fields or not all(closest.values())):
        return None
    fixed = type(request)()
    fixed.CopyFrom(request)
    if field is not None:
        if fields[field].is_repeated:
            values = [closest[v][0] if v in closest else v for v in getattr(request, field)]
            del getattr(fixed, field)[:]
            getattr(fixed, field).extend(dict.fromkeys(values))
        elif getattr(request, field) in closest:
            setattr(fixed, field, closest[getattr(request, field)][0])
        if fixed == request:
            return None
    for name in cleared:
        if name in fields:
            fixed.ClearField(name)
    return fixed


def _correction(
    cause: BaseException,
) -> tuple[str | None, Mapping[str, Sequence[str]], tuple[str, ...]]:
    """The request field holding the unknown names, each name's suggestions, and the fields
    a corrected call leaves out."""
    if isinstance(cause, ToolsNotFound):
        return "ids", cause.missing, ()
    if isinstance(cause, CatalogNotFound):
        return "catalogs", {cause.name: cause.suggestions}, ()
    if isinstance(cause, WorkflowNotFound):
        # States and moves belong to the unknown workflow: the suggested one starts afresh.
        return "workflow", {cause.workflow_id: cause.suggestions}, ("state", "tool", "arguments")
    if isinstance(cause, IllegalMove):
        # The same state without the move that was not legal: what may be done from here.
        return None, {}, ("tool", "arguments")
    return None, {}, ()
