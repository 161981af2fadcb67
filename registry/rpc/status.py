"""The one place domain errors become gRPC status codes."""

from __future__ import annotations

import functools
import logging
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import Any, NoReturn, Protocol, TypeVar

import grpc

from indexer.formats import CatalogError
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
from registry.store import StaleCatalog, StoreError, ToolChanged
from registry.wire import MAX_ERROR_CHARS

__all__ = ["CallContext", "Context", "mapped", "status_for"]

logger = logging.getLogger(__name__)

_CODES: tuple[tuple[type[Exception], grpc.StatusCode], ...] = (
    (InvalidRequest, grpc.StatusCode.INVALID_ARGUMENT),
    (CatalogError, grpc.StatusCode.INVALID_ARGUMENT),
    (ToolsNotFound, grpc.StatusCode.NOT_FOUND),
    (CatalogNotFound, grpc.StatusCode.NOT_FOUND),
    (WorkflowNotFound, grpc.StatusCode.NOT_FOUND),
    (IllegalMove, grpc.StatusCode.FAILED_PRECONDITION),
    (Unauthenticated, grpc.StatusCode.UNAUTHENTICATED),
    (PermissionDenied, grpc.StatusCode.PERMISSION_DENIED),
    (NotReady, grpc.StatusCode.UNAVAILABLE),
    (Overloaded, grpc.StatusCode.RESOURCE_EXHAUSTED),
    (CallerGone, grpc.StatusCode.DEADLINE_EXCEEDED),
    (StaleCatalog, grpc.StatusCode.ABORTED),
    (ToolChanged, grpc.StatusCode.ABORTED),
    (StoreError, grpc.StatusCode.UNAVAILABLE),
)


def status_for(exc: Exception) -> tuple[grpc.StatusCode, str]:
    """The code and message a client sees for `exc`; unexpected errors leak nothing."""
    for kind, code in _CODES:
        if isinstance(exc, kind):
            return code, bounded(str(exc))
    return grpc.StatusCode.INTERNAL, "internal error; the server log has the details"


def bounded(message: str) -> str:
    """At most MAX_ERROR_CHARS: a message echoes input, and input can be large."""
    if len(message) <= MAX_ERROR_CHARS:
        return message
    return message[: MAX_ERROR_CHARS - 20].rstrip() + " ... (truncated)"


Request = TypeVar("Request")
Response = TypeVar("Response")
Servicer = TypeVar("Servicer")


class CallContext(Protocol):
    """What the servicer, the lanes and the interceptors use of a call, for a transport
    other than gRPC: the HTTP adapter (registry/http/call_context.py) implements it."""

    def invocation_metadata(self) -> Iterable[tuple[str, str | bytes]] | None: ...

    def peer(self) -> str: ...

    def time_remaining(self) -> float | None: ...

    def add_done_callback(self, callback: Callable[[Any], None]) -> None: ...

    def set_trailing_metadata(self, trailing_metadata: Sequence[tuple[str, str]]) -> None: ...

    def code(self) -> grpc.StatusCode | None: ...

    async def abort(
        self,
        code: grpc.StatusCode,
        details: str = "",
        trailing_metadata: Sequence[tuple[str, str]] = (),
    ) -> NoReturn: ...


# A gRPC call, or another transport's call through the same servicer.
Context = grpc.aio.ServicerContext[Any, Any] | CallContext
Handler = Callable[[Servicer, Request, Context], Awaitable[Response]]


def mapped(method: Handler[Servicer, Request, Response]) -> Handler[Servicer, Request, Response]:
    """Wraps a servicer method so no exception escapes as UNKNOWN."""

    @functools.wraps(method)
    async def wrapper(self: Servicer, request: Request, context: Context) -> Response:
        try:
            return await method(self, request, context)
        except grpc.aio.AbortError:
            raise
        except Exception as exc:
            code, message = status_for(exc)
            if code is grpc.StatusCode.INTERNAL:
                logger.exception("unexpected error in %s", method.__name__)
            await context.abort(code, message)

    return wrapper
