"""Runs the bridge over stdio or streamable HTTP; the HTTP edge admits only bearer callers."""

from __future__ import annotations

import logging
import socket
import sys

import uvicorn
from starlette.datastructures import Headers
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from mcp_bridge.config import BridgeConfig, HttpListen
from mcp_bridge.server import build_server, forwarded_bearer, static_key
from registry.client import AsyncRegistryClient
from registry.wire import bearer_key, is_loopback

logger = logging.getLogger(__name__)


class CannotListen(Exception):
    """The HTTP address cannot be bound (in use, not local, not permitted)."""


class RequireBearer:
    """Answers 401 to any HTTP request without `Authorization: Bearer <key>`.

    The key itself is judged by the registry on every call; refusing keyless requests here
    means an anonymous client never reaches a tool, and never borrows anyone else's key.
    """

    def __init__(self, app: ASGIApp) -> None:
        self._app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and bearer_key(Headers(scope=scope).items()) is None:
            response = JSONResponse(
                {
                    "error": "invalid_token",
                    "error_description": "send 'Authorization: Bearer <capreg API key>'",
                },
                status_code=401,
                headers={"WWW-Authenticate": 'Bearer realm="capreg"'},
            )
            await response(scope, receive, send)
            return
        await self._app(scope, receive, send)


def _url(host: str, port: int, path: str) -> str:
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}{path}"


def _bind(listen: HttpListen) -> socket.socket:
    # Binding here, not in uvicorn, makes port 0 work and lets us print the real port.
    family = socket.AF_INET6 if ":" in listen.host else socket.AF_INET
    try:
        return socket.create_server((listen.host, listen.port), family=family)
    except OSError as exc:
        raise CannotListen(f"cannot listen on {listen.host}:{listen.port}: {exc.strerror}") from exc


async def serve_http(config: BridgeConfig, listen: HttpListen, client: AsyncRegistryClient) -> None:
    server = build_server(client, forwarded_bearer)
    # `host` turns on the SDK's DNS-rebinding protection for loopback addresses.
    app = server.streamable_http_app(streamable_http_path=listen.path, host=listen.host)
    sock = _bind(listen)
    url = _url(listen.host, sock.getsockname()[1], listen.path)
    if not is_loopback(f"{listen.host}:{listen.port}"):
        logger.warning(
            "serving on %s without TLS: bearer keys cross the network in clear; "
            "put a TLS-terminating proxy in front",
            url,
        )
    uvicorn_server = uvicorn.Server(
        uvicorn.Config(RequireBearer(app), log_level="warning", lifespan="on")
    )
    # A plain line on stderr (the CLI logs at WARNING): clients and tests wait for it.
    print(
        f"capreg bridge: MCP over streamable HTTP at {url} (registry {config.registry.address})",
        file=sys.stderr,
        flush=True,
    )
    await uvicorn_server.serve(sockets=[sock])


async def run_bridge(config: BridgeConfig) -> None:
    """Serves until the client closes stdin (stdio) or the process is interrupted (HTTP)."""
    async with AsyncRegistryClient(config.registry) as client:
        if config.http is not None:
            await serve_http(config, config.http, client)
            return
        print(
            f"capreg bridge: MCP over stdio (registry {config.registry.address})",
            file=sys.stderr,
            flush=True,
        )
        await build_server(client, static_key(config.api_key)).run_stdio_async()
