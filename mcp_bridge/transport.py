"""Runs the bridge over stdio or streamable HTTP; the HTTP edge admits only bearer callers."""

from __future__ import annotations

import logging
import socket
import sys

import uvicorn
from starlette.datastructures import Headers
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from mcp_bridge.config import BridgeConfig, HttpListen
from mcp_bridge.server import build_server, forwarded_bearer, static_key
from mcp_bridge.sessions import SessionsPerKey, owner_of
from registry.client import AccessRefused, AsyncRegistryClient, RegistryCallFailed
from registry.wire import bearer_key, is_loopback

logger = logging.getLogger(__name__)

SESSION_HEADER = "mcp-session-id"


class CannotListen(Exception):
    """The HTTP address cannot be bound (in use, not local, not permitted)."""


def _refusal(description: str) -> JSONResponse:
    return JSONResponse(
        {"error": "invalid_token", "error_description": description},
        status_code=401,
        headers={"WWW-Authenticate": 'Bearer realm="capreg"'},
    )


class RequireBearer:
    """Answers 401 to any HTTP request without `Authorization: Bearer <key>`, and to a request
    opening a session with a key the registry does not accept; 429 to one opening a session
    for a key that holds its share of them already.

    The key is judged by the registry again on every call; checking it when a session opens
    means an arbitrary bearer string cannot hold a session (and its memory) open.
    """

    def __init__(self, app: ASGIApp, client: AsyncRegistryClient, sessions: SessionsPerKey) -> None:
        self._app = app
        self._client = client
        self._sessions = sessions

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        key = bearer_key(headers.items())
        if key is None:
            await _refusal("send 'Authorization: Bearer <capreg API key>'")(scope, receive, send)
            return
        session_id = headers.get(SESSION_HEADER)
        if session_id is None and scope.get("method") == "POST":
            try:
                await self._client.list_catalogs(key=key)
            except AccessRefused:
                await _refusal("the registry does not accept this key")(scope, receive, send)
                return
            except RegistryCallFailed as exc:
                response = JSONResponse({"error": "unavailable", "error_description": str(exc)})
                response.status_code = 503
                await response(scope, receive, send)
                return
            await self._open(owner_of(key), scope, receive, send)
            return
        if session_id is None:
            await self._app(scope, receive, send)
            return
        self._sessions.begin(session_id)
        status: list[int] = []
        try:
            await self._app(scope, receive, _watching(send, status))
        finally:
            answered = status[0] if status else 500
            ended = scope.get("method") == "DELETE" and answered < 400
            self._sessions.end(session_id, gone=ended or answered == 404)

    async def _open(self, owner: str, scope: Scope, receive: Receive, send: Send) -> None:
        if not self._sessions.reserve(owner):
            await _too_many_sessions(self._sessions.per_key)(scope, receive, send)
            return
        opened: list[str] = []

        async def note_session(message: Message) -> None:
            if message["type"] == "http.response.start" and message["status"] < 400:
                session_id = Headers(raw=message["headers"]).get(SESSION_HEADER)
                if session_id:
                    opened.append(session_id)
            await send(message)

        try:
            await self._app(scope, receive, note_session)
        finally:
            self._sessions.settle(owner, opened[0] if opened else None)


def _watching(send: Send, status: list[int]) -> Send:
    async def watched(message: Message) -> None:
        if message["type"] == "http.response.start":
            status.append(message["status"])
        await send(message)

    return watched


def _too_many_sessions(per_key: int) -> JSONResponse:
    # A JSON-RPC error, as the SDK answers its own session limit.
    message = (
        f"this key holds {per_key} open sessions, the most one key may; end one "
        "(DELETE with its mcp-session-id) or let one idle out"
    )
    return JSONResponse(
        {"jsonrpc": "2.0", "id": None, "error": {"code": -32000, "message": message}},
        status_code=429,
    )


def _url(host: str, port: int, path: str, *, tls: bool = False) -> str:
    shown = f"[{host}]" if ":" in host else host
    return f"{'https' if tls else 'http'}://{shown}:{port}{path}"


def _bind(listen: HttpListen) -> socket.socket:
    # Binding here, not in uvicorn, makes port 0 work and lets us print the real port.
    family = socket.AF_INET6 if ":" in listen.host else socket.AF_INET
    # IPPROTO_TCP named (socket.create_server leaves it 0): asyncio turns Nagle's algorithm off
    # only on accepted sockets whose proto says TCP; with it on, a response written in two
    # parts waits ~40 ms for the client's delayed ACK.
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((listen.host, listen.port))
        sock.listen(socket.SOMAXCONN)
    except OSError as exc:
        sock.close()
        raise CannotListen(f"cannot listen on {listen.host}:{listen.port}: {exc.strerror}") from exc
    return sock


async def serve_http(config: BridgeConfig, listen: HttpListen, client: AsyncRegistryClient) -> None:
    server = build_server(client, forwarded_bearer)
    # `host` turns on the SDK's DNS-rebinding protection for loopback addresses.
    app = server.streamable_http_app(
        streamable_http_path=listen.path,
        host=listen.host,
        session_idle_timeout=listen.session_idle_seconds,
        max_sessions=listen.max_sessions,
    )
    sock = _bind(listen)
    tls = listen.tls_cert is not None and listen.tls_key is not None
    url = _url(listen.host, sock.getsockname()[1], listen.path, tls=tls)
    if not tls and not is_loopback(f"[{listen.host}]:{listen.port}"):
        logger.warning(
            "serving on %s without TLS (--insecure-http): bearer keys cross the network in "
            "clear unless a TLS-terminating proxy is in front",
            url,
        )
    uvicorn_server = uvicorn.Server(
        uvicorn.Config(
            RequireBearer(
                app,
                client,
                SessionsPerKey(listen.max_sessions_per_key, listen.session_idle_seconds),
            ),
            log_level="warning",
            lifespan="on",
            ssl_certfile=str(listen.tls_cert) if tls else None,
            ssl_keyfile=str(listen.tls_key) if tls else None,
        )
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
