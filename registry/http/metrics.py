"""`GET /metrics` on the HTTP listener: Prometheus's text format, for a key granted
`registry:metrics` or an administrator's (the counts cover every catalog, whoever may see it)."""

from __future__ import annotations

import orjson
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from registry.auth.authentication import Authenticator
from registry.errors import CapregError
from registry.http.call_context import peer_of
from registry.http.errors import error_reply
from registry.rpc.status import status_for
from registry.telemetry import EXPOSITION_MEDIA_TYPE, ServiceMetrics, require_metrics_reader

# The counts are for the key that asked: no shared cache may keep them.
_NO_STORE = {"cache-control": "private, no-store"}


def metrics_routes(metrics: ServiceMetrics, authenticator: Authenticator) -> list[BaseRoute]:
    async def scrape(request: Request) -> Response:
        try:
            principal = authenticator.principal(
                tuple(request.headers.items()), peer_of(request.scope)
            )
            require_metrics_reader(principal)
        except CapregError as exc:
            code, message = status_for(exc)
            reply = error_reply(code, message, exc)
            body = orjson.dumps(reply.body)
            return Response(body, reply.status, reply.headers, "application/json")
        return Response(metrics.exposition(), headers=_NO_STORE, media_type=EXPOSITION_MEDIA_TYPE)

    return [Route("/metrics", scrape, methods=["GET"])]
