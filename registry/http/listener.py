"""Serves the HTTP app with uvicorn in the registry's own process and event loop, beside the
gRPC server, and stops it with that server.

The peer's own address is the client's: `X-Forwarded-For` is believed only from the proxies
the operator names. A slow client cannot hold a connection: a TLS handshake and each request
head must be complete within HEAD_TIMEOUT_SECONDS (bodies keep a pace of their own, body.py)."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import uvicorn
from starlette.types import ASGIApp
from uvicorn.protocols.http.h11_impl import H11Protocol

from registry.errors import CapregError
from registry.wire import MAX_QUERY_CHARS, listen_host

# The request line and headers uvicorn buffers (h11's default is 16 KiB): a search's text
# travels in the query string, so the longest allowed one, percent-encoded, must fit.
MAX_REQUEST_HEAD_BYTES = MAX_QUERY_CHARS * 12 + 64 * 1024
STARTUP_SECONDS = 30.0
# uvicorn's own default backlog.
LISTEN_BACKLOG = 2048
# From a connection's opening, or from the end of the previous answer on it, to the end of
# the next request's head (and, with TLS, to the end of the handshake). uvicorn has no such
# deadline: a head sent a byte at a time held a connection for as long as the client liked.
HEAD_TIMEOUT_SECONDS = 10.0


class CannotListen(CapregError):
    """The HTTP address cannot be bound (in use, not local, not permitted)."""


class _HeadDeadline(H11Protocol):
    """uvicorn's HTTP/1.1 connection, closed when a request head is not complete within
    HEAD_TIMEOUT_SECONDS. Bytes arriving do not move the deadline: only a whole head does."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._deadline: asyncio.TimerHandle | None = None

    # The ignore is uvicorn's: it narrows asyncio's BaseTransport to Transport the same way.
    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._await_head()

    def data_received(self, data: bytes) -> None:
        cycle = self.cycle
        super().data_received(data)
        if self.cycle is not cycle:  # a whole head arrived: its request is under way
            self._head_arrived()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        # Unless a pipelined head was already waiting, the next one is due from now.
        if not self.transport.is_closing() and self.cycle.response_complete:
            self._await_head()

    def connection_lost(self, exc: Exception | None) -> None:
        self._head_arrived()
        super().connection_lost(exc)

    def _await_head(self) -> None:
        self._head_arrived()
        self._deadline = self.loop.call_later(HEAD_TIMEOUT_SECONDS, self._head_too_slow)

    def _head_arrived(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _head_too_slow(self) -> None:
        self._deadline = None
        if not self.transport.is_closing():
            self.transport.close()


class _Embedded(uvicorn.Server):
    """uvicorn inside the registry's process: the registry owns SIGINT and SIGTERM, and
    stops this server itself (uvicorn would otherwise take the signals over)."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        """uvicorn's start on given sockets (lifespan is off), with a deadline on the TLS
        handshake: asyncio's default waits 60 s for a client that never says hello."""
        config = self.config
        assert sockets is not None, "the listener always passes its bound socket"

        def create_protocol(_loop: asyncio.AbstractEventLoop | None = None) -> asyncio.Protocol:
            return config.http_protocol_class(  # type: ignore[call-arg]  # uvicorn's own call
                config=config,
                server_state=self.server_state,
                app_state=self.lifespan.state,
                _loop=_loop,
            )

        loop = asyncio.get_running_loop()
        handshake = HEAD_TIMEOUT_SECONDS if config.ssl else None
        self.servers = [
            await loop.create_server(
                create_protocol,
                sock=sock,
                ssl=config.ssl,
                backlog=config.backlog,
                ssl_handshake_timeout=handshake,
            )
            for sock in sockets
        ]
        self.started = True


def bind(listen: str) -> socket.socket:
    """A listening socket on `listen` (HOST:PORT; port 0 picks one), bound before serving
    so a busy port fails the start at once and the real port can be reported."""
    host = listen_host(listen)
    port = int(listen.rpartition(":")[2])
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # IPPROTO_TCP named, not left 0 as socket.create_server leaves it: asyncio turns Nagle's
    # algorithm off only on accepted sockets whose proto says TCP, and with it on, a
    # response written in two parts waits ~40 ms for the client's delayed ACK.
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(LISTEN_BACKLOG)
    except OSError as exc:
        sock.close()
        raise CannotListen(f"cannot serve HTTP on {listen}: {exc.strerror}") from exc
    return sock


class HttpListener:
    """`app` served on `sock` until `stop`."""

    def __init__(
        self,
        app: ASGIApp,
        sock: socket.socket,
        *,
        tls_cert: Path | None = None,
        tls_key: Path | None = None,
        grace_seconds: float = 5.0,
        trusted_proxies: Sequence[str] = (),
    ) -> None:
        """`trusted_proxies`: addresses and networks (CIDR) whose X-Forwarded-For and
        X-Forwarded-Proto are believed; empty, no forwarded header is believed."""
        self._sock = sock
        self.tls = tls_cert is not None and tls_key is not None
        config = uvicorn.Config(
            app,
            http=_HeadDeadline,
            # uvicorn believes X-Forwarded-For from loopback by default (and reads an
            # environment variable for more): a client could rotate it past the failed-login
            # throttle and write any address into the audit log.
            proxy_headers=bool(trusted_proxies),
            forwarded_allow_ips=list(trusted_proxies),
            # The registry configured logging already; per-request lines are the metrics'
            # and the request ids' job.
            log_config=None,
            access_log=False,
            lifespan="off",
            ws="none",
            ssl_certfile=str(tls_cert) if self.tls else None,
            ssl_keyfile=str(tls_key) if self.tls else None,
            timeout_graceful_shutdown=max(int(grace_seconds), 1),
            h11_max_incomplete_event_size=MAX_REQUEST_HEAD_BYTES,
        )
        self._server = _Embedded(config)
        self._task: asyncio.Task[None] | None = None

    @property
    def port(self) -> int:
        return int(self._sock.getsockname()[1])

    @property
    def url(self) -> str:
        host = self._sock.getsockname()[0]
        shown = f"[{host}]" if ":" in host else host
        return f"{'https' if self.tls else 'http'}://{shown}:{self.port}"

    async def start(self) -> None:
        """Returns once the server accepts connections."""
        self._task = asyncio.create_task(self._server.serve(sockets=[self._sock]))
        ends = time.monotonic() + STARTUP_SECONDS
        while not self._server.started:
            if self._task.done():
                self._task.result()  # raises what stopped it
                raise CannotListen(f"the HTTP server on {self.url} stopped while starting")
            if time.monotonic() >= ends:
                raise CannotListen(f"the HTTP server on {self.url} did not start")
            await asyncio.sleep(0.01)

    async def stop(self) -> None:
        """Stops accepting; requests in flight get the grace period to finish."""
        self._server.should_exit = True
        if self._task is not None:
            await self._task
        self._sock.close()
