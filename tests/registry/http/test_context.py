"""The HTTP request as a call context: peers in gRPC's form, aborts that keep the domain error
behind them, and done callbacks run once, at the end or when the client leaves."""

from __future__ import annotations

import asyncio
from typing import Any

import grpc
import pytest
from starlette.types import Message

from registry.errors import ToolsNotFound
from registry.http.call_context import HttpAbort, HttpContext, peer_of
from registry.rpc.status import status_for


class Channel:
    """Reason for the fake: an ASGI receive channel is how a client's leaving arrives, and a
    test must say when it leaves."""

    def __init__(self) -> None:
        self.messages: asyncio.Queue[Message] = asyncio.Queue()

    async def receive(self) -> Message:
        return await self.messages.get()


def _scope(client: tuple[str, int] | None = ("10.0.0.7", 5123)) -> dict[str, Any]:
    headers = [(b"authorization", b"Bearer k"), (b"x-request-id", b"abc")]
    return {"type": "http", "headers": headers, "client": client}


def test_peers_read_as_grpc_writes_them() -> None:
    assert peer_of(_scope()) == "ipv4:10.0.0.7:5123"
    assert peer_of(_scope(("::1", 80))) == "ipv6:[::1]:80"
    assert peer_of(_scope(None)) == "unknown"


def test_headers_are_the_calls_metadata_and_there_is_no_deadline() -> None:
    context = HttpContext(_scope(), Channel().receive)
    assert context.invocation_metadata() == (("authorization", "Bearer k"), ("x-request-id", "abc"))
    assert context.time_remaining() is None


async def test_an_abort_keeps_the_domain_error_and_the_trailing_metadata() -> None:
    context = HttpContext(_scope(), Channel().receive)
    context.set_trailing_metadata((("x-request-id", "abc"),))

    async def refuse() -> None:
        try:
            raise ToolsNotFound({"hr/x": ["hr/get_employee"]})
        except ToolsNotFound as exc:
            await context.abort(*status_for(exc), trailing_metadata=(("retry", "1"),))

    with pytest.raises(HttpAbort) as caught:
        await refuse()
    assert caught.value.code is grpc.StatusCode.NOT_FOUND
    assert isinstance(caught.value.__context__, ToolsNotFound)
    assert isinstance(caught.value, grpc.aio.AbortError)
    assert context.code() is grpc.StatusCode.NOT_FOUND
    assert context.trailing == {"x-request-id": "abc", "retry": "1"}


async def test_done_callbacks_run_once_when_the_response_is_decided() -> None:
    context = HttpContext(_scope(), Channel().receive)
    seen: list[object] = []
    context.add_done_callback(seen.append)
    context.finish()
    context.finish()
    assert seen == [context]


async def test_done_callbacks_run_as_soon_as_the_client_leaves() -> None:
    channel = Channel()
    context = HttpContext(_scope(), channel.receive)
    left = asyncio.Event()
    context.add_done_callback(lambda _call: left.set())
    await channel.messages.put({"type": "http.request", "body": b"", "more_body": False})
    await channel.messages.put({"type": "http.disconnect"})
    await asyncio.wait_for(left.wait(), timeout=10)
    context.finish()
