"""The HTTP app: each route of the table runs its RPC through the same servicer and the same
interceptors (metrics and request ids, per-caller admission) as gRPC; beside them health,
readiness, the OpenAPI document, metrics and the web console's files.

A request body costs nothing until its caller is known: the key (and, for a catalog change,
the admin scope) and the declared size are checked from the headers before a byte of the body
is read."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any

import grpc
import orjson
from google.protobuf.message import Message
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import FileResponse, Response
from starlette.routing import BaseRoute, Mount
from starlette.routing import Route as HttpRoute
from starlette.staticfiles import StaticFiles

from registry.auth.authentication import Authenticator, require_admin
from registry.core import Registry
from registry.errors import CapregError, NotReady
from registry.http.binding import read_request
from registry.http.body import body_limit, refuse_declared_size
from registry.http.call_context import HttpAbort, HttpContext
from registry.http.errors import ErrorReply, abort_reply, error_reply
from registry.http.headers import FrontHeaders
from registry.http.metrics import metrics_routes
from registry.http.replies import reply_body
from registry.http.results import results_routes
from registry.http.routes import ROUTES, Route, Source
from registry.http.spec import openapi_document
from registry.lanes import Lanes
from registry.limits import Admission, Admit
from registry.rpc.interceptors import Behaviour
from registry.rpc.servicer import CapabilityRegistryServicer
from registry.rpc.status import Context, status_for
from registry.telemetry import REQUEST_ID_HEADER, Observed, ServiceMetrics

logger = logging.getLogger(__name__)

CONSOLE = Path(__file__).resolve().parent / "console"
JSON = "application/json"
# Routing's own refusals: a path no route has, a method the path does not take.
_ROUTING_CODES = {404: grpc.StatusCode.NOT_FOUND, 405: grpc.StatusCode.UNIMPLEMENTED}
Handler = Callable[[Request], Awaitable[Response]]


class _Call:
    """One HTTP request on its way through the interceptors, and the message read from it
    (kept for the error reply: a corrected call is built from it)."""

    __slots__ = ("message", "request")

    def __init__(self, request: Request) -> None:
        self.request = request
        self.message: Message | None = None


def _json(body: object, status: int = 200, headers: Mapping[str, str] | None = None) -> Response:
    return Response(orjson.dumps(body), status_code=status, headers=headers, media_type=JSON)


def _refusal(reply: ErrorReply, trailing: Mapping[str, str] | None = None) -> Response:
    headers = dict(reply.headers)
    if trailing and REQUEST_ID_HEADER in trailing:
        headers[REQUEST_ID_HEADER] = trailing[REQUEST_ID_HEADER]
    return _json(reply.body, reply.status, headers)


def _admit_body(route: Route, authenticator: Authenticator, call: _Call, context: Context) -> None:
    """Refuses, from the headers alone, a body nobody will read: the caller's key (throttled
    as every failed login is), the admin scope a catalog change needs, the declared size."""
    principal = authenticator.principal(context.invocation_metadata() or (), context.peer())
    if route.admin:
        require_admin(principal)
    refuse_declared_size(call.request, body_limit(route))


def _reading(
    route: Route, method: Callable[[Any, Context], Awaitable[Message]], authenticator: Authenticator
) -> Behaviour:
    """The innermost behaviour: read the request message, then call the servicer method. A
    malformed request is refused like the servicer refuses one, so it is counted and
    carries a request id as every other refusal does."""

    async def read_then_call(call: _Call, context: Context) -> Message:
        try:
            if route.source is not Source.QUERY:
                _admit_body(route, authenticator, call, context)
            call.message = await read_request(route, call.request)
        except CapregError as exc:
            code, message = status_for(exc)
            await context.abort(code, message)
        return await method(call.message, context)

    return read_then_call


def _endpoint(route: Route, behaviour: Behaviour) -> Handler:
    async def endpoint(request: Request) -> Response:
        context = HttpContext(request.scope, request.receive)
        call = _Call(request)
        try:
            reply = await behaviour(call, context)
        except HttpAbort as abort:
            return _refusal(abort_reply(abort, route, call.message), context.trailing)
        except Exception as exc:  # never a traceback to the client: logged, answered INTERNAL
            logger.exception("unexpected error serving %s over HTTP", route.rpc)
            code, message = status_for(exc)
            return _refusal(error_reply(code, message), context.trailing)
        finally:
            context.finish()
        body = reply_body(reply, route.response_type)
        return _json(body, headers={REQUEST_ID_HEADER: context.trailing[REQUEST_ID_HEADER]})

    return endpoint


def _rpc_routes(
    servicer: CapabilityRegistryServicer,
    authenticator: Authenticator,
    metrics: ServiceMetrics,
    admission: Admission,
) -> list[BaseRoute]:
    # The gRPC server's order, outermost first: every call is counted and carries a request
    # id, refusals included; admission is decided before any work.
    interceptors = (Observed(metrics), Admit(admission))
    routes: list[BaseRoute] = []
    for route in ROUTES.values():
        behaviour = _reading(route, getattr(servicer, route.rpc), authenticator)
        for interceptor in reversed(interceptors):
            behaviour = interceptor.wrap(route.rpc, behaviour)
        routes.append(HttpRoute(route.path, _endpoint(route, behaviour), methods=[route.method]))
    return routes


def create_app(
    registry: Registry,
    authenticator: Authenticator,
    lanes: Lanes,
    metrics: ServiceMetrics,
    admission: Admission,
    *,
    console: Path = CONSOLE,
    results: Path | None = None,
) -> Starlette:
    """The HTTP API over `registry`. Pass the gRPC server's own `lanes`, `metrics` and
    `admission`: both transports then share one read queue, one set of counters and one
    budget per caller."""
    servicer = CapabilityRegistryServicer(registry, authenticator, lanes)
    document = orjson.dumps(openapi_document())

    async def healthz(_request: Request) -> Response:
        return _json({"status": "SERVING"})

    async def readyz(_request: Request) -> Response:
        if registry.ready:
            return _json({"status": "SERVING"})
        try:
            _ = registry.snapshot  # raises NotReady saying what the registry is doing
            cause = NotReady("the registry is loading; retry shortly")
        except NotReady as exc:
            cause = exc
        return _refusal(error_reply(grpc.StatusCode.UNAVAILABLE, str(cause), cause))

    async def openapi(request: Request) -> Response:
        # As gRPC reflection: with keys configured, describing the API needs a valid key.
        if not authenticator.open:
            context = HttpContext(request.scope, request.receive)
            try:
                authenticator.principal(context.invocation_metadata(), context.peer())
            except CapregError as exc:
                code, message = status_for(exc)
                return _refusal(error_reply(code, message, exc))
        return Response(document, media_type=JSON)

    index = console / "index.html"

    async def home(_request: Request) -> Response:
        if index.is_file():
            return FileResponse(index)
        reply = error_reply(
            grpc.StatusCode.NOT_FOUND,
            "no web console is installed here; /openapi.json describes the API",
        )
        reply.body["error"]["next_call"] = {"method": "GET", "path": "/openapi.json"}
        return _refusal(reply)

    icon = console / "favicon.svg"

    async def favicon(_request: Request) -> Response:
        # Browsers ask for /favicon.ico whatever the page links: answered, not a 404 each time.
        return FileResponse(icon, media_type="image/svg+xml")

    async def routing_refusal(_request: Request, exc: Exception) -> Response:
        assert isinstance(exc, HTTPException)
        code = _ROUTING_CODES.get(exc.status_code, grpc.StatusCode.INVALID_ARGUMENT)
        reply = error_reply(code, exc.detail)
        body = {"error": {**reply.body["error"], "status": exc.status_code}}
        return _json(body, exc.status_code, exc.headers)

    routes = _rpc_routes(servicer, authenticator, metrics, admission)
    routes += [
        HttpRoute("/healthz", healthz, methods=["GET"]),
        HttpRoute("/readyz", readyz, methods=["GET"]),
        HttpRoute("/openapi.json", openapi, methods=["GET"]),
        HttpRoute("/", home, methods=["GET"]),
        *results_routes(results, authenticator),
        *metrics_routes(metrics, authenticator),
    ]
    if icon.is_file():
        routes.append(HttpRoute("/favicon.ico", favicon, methods=["GET"]))
    if console.is_dir():
        routes.append(Mount("/console", StaticFiles(directory=console), name="console"))
    return Starlette(
        routes=routes,
        exception_handlers={HTTPException: routing_refusal},
        middleware=[Middleware(FrontHeaders)],
    )
