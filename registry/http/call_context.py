"""An HTTP request seen as a gRPC call: what the servicer, the lanes and the interceptors use
of a ServicerContext (registry.rpc.status.CallContext), so they run unchanged under HTTP."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from typing import Any, NoReturn

import grpc
from starlette.types import Receive, Scope

logger = logging.getLogger(__name__)


class HttpAbort(grpc.aio.AbortError):
    """What `HttpContext.abort` raises. Raised inside the `except` block that mapped a domain
    error (registry.rpc.status.mapped, the admission interceptor), so its `__context__` is that
    error: registry/http/errors.py reads the way forward from it."""

    def __init__(self, code: grpc.StatusCode, details: str) -> None:
        super().__init__(details)
        self.code = code
        self.details = details


def peer_of(scope: Scope) -> str:
    """The client address in gRPC's peer form ('ipv4:1.2.3.4:5678', 'ipv6:[::1]:5678'), which
    the failed-authentication throttle and admission read the host from."""
    client = scope.get("client")
    if not client:
        return "unknown"
    host, port = client[0], client[1]
    return f"ipv6:[{host}]:{port}" if ":" in host else f"ipv4:{host}:{port}"


class HttpContext:
    """One HTTP request's call context. HTTP carries no deadline, so `time_remaining` is None
    (the servicer then bounds its own waits); a client that disconnects is reported to the
    done callbacks, so the lanes drop work it no longer waits for."""

    __slots__ = ("_callbacks", "_code", "_metadata", "_peer", "_receive", "_trailing", "_watcher")

    def __init__(self, scope: Scope, receive: Receive) -> None:
        # Header names are lower case in ASGI, as gRPC metadata keys are.
        self._metadata = tuple(
            (name.decode("latin-1"), value.decode("latin-1")) for name, value in scope["headers"]
        )
        self._peer = peer_of(scope)
        self._receive = receive
        self._trailing: dict[str, str] = {}
        self._code: grpc.StatusCode | None = None
        self._callbacks: list[Callable[[Any], None]] = []
        self._watcher: asyncio.Task[None] | None = None

    def invocation_metadata(self) -> tuple[tuple[str, str], ...]:
        return self._metadata

    def peer(self) -> str:
        return self._peer

    def time_remaining(self) -> float | None:
        return None

    def add_done_callback(self, callback: Callable[[Any], None]) -> None:
        self._callbacks.append(callback)
        # Only calls that queue work ask; a cache hit never pays for the watch.
        if self._watcher is None:
            self._watcher = asyncio.create_task(self._watch_disconnect())

    def set_trailing_metadata(self, trailing_metadata: Sequence[tuple[str, str]]) -> None:
        self._trailing.update(trailing_metadata)

    def code(self) -> grpc.StatusCode | None:
        return self._code

    async def abort(
        self,
        code: grpc.StatusCode,
        details: str = "",
        trailing_metadata: Sequence[tuple[str, str]] = (),
    ) -> NoReturn:
        self._code = code
        # Merged, not replaced: the request id set before the refusal stays.
        self._trailing.update(trailing_metadata)
        raise HttpAbort(code, details)

    @property
    def trailing(self) -> dict[str, str]:
        return self._trailing

    def finish(self) -> None:
        """The response is decided: run the done callbacks, as gRPC does when a call ends."""
        if self._watcher is not None:
            self._watcher.cancel()
            self._watcher = None
        self._done()

    def _done(self) -> None:
        callbacks, self._callbacks = self._callbacks, []
        for callback in callbacks:
            try:
                callback(self)
            except Exception:  # one callback's fault must not keep the others from running
                logger.exception("a done callback failed")

    async def _watch_disconnect(self) -> None:
        # The body has been read by now: the next message is the client leaving (or, once
        # the response is complete, the server saying so).
        while (await self._receive())["type"] != "http.disconnect":
            pass
        self._done()
