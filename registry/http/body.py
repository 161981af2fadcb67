"""Reads a request body within what its call takes: a size per route (a call that only reads
takes a few kilobytes, a catalog up to the message limit) and a pace (a body must keep
arriving), so a stalled or endless body holds nothing for long."""

from __future__ import annotations

import asyncio

from starlette.requests import ClientDisconnect, Request

from registry.errors import CallerGone, InvalidRequest
from registry.http.routes import Route
from registry.wire import MAX_MESSAGE_BYTES

# A call that only reads (a schema lookup): its largest valid body, 50 ids of 193 characters
# each sent as \uXXXX\uXXXX surrogate pairs, is 116 KB; this is that twice over.
MAX_READ_BODY_BYTES = 256 * 1024
# A call that changes catalogs (an administrator's): gRPC's own message limit.
MAX_WRITE_BODY_BYTES = MAX_MESSAGE_BYTES
# The pace: no pause longer than this between two parts of a body...
BODY_IDLE_SECONDS = 10.0
# ...and, once this many seconds have passed, at least BODY_MIN_BYTES_PER_SECOND on average.
BODY_GRACE_SECONDS = 10.0
BODY_MIN_BYTES_PER_SECOND = 16 * 1024


class BodyTooLarge(InvalidRequest):
    """A request body over what its call takes: answered 413, at once."""


class BodyTooSlow(InvalidRequest):
    """A request body that stopped arriving or arrives too slowly: answered 408."""


def body_limit(route: Route) -> int:
    """The most bytes `route`'s body may hold."""
    return MAX_WRITE_BODY_BYTES if route.admin else MAX_READ_BODY_BYTES


def refuse_declared_size(request: Request, limit: int) -> None:
    """BodyTooLarge when the request's Content-Length is over `limit`: refused from its
    headers, before a byte of the body is read."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise BodyTooLarge(_too_large(limit, int(declared)))


async def read_body(request: Request, limit: int) -> bytes:
    """The whole body of `request`: BodyTooLarge past `limit` bytes (declared or counted),
    BodyTooSlow when it does not keep the pace, CallerGone when the client leaves."""
    refuse_declared_size(request, limit)
    loop = asyncio.get_running_loop()
    started = loop.time()
    chunks: list[bytes] = []
    size = 0
    parts = request.stream()
    while True:
        due = started + BODY_GRACE_SECONDS + size / BODY_MIN_BYTES_PER_SECOND
        wait = min(BODY_IDLE_SECONDS, due - loop.time())
        if wait <= 0:
            raise BodyTooSlow(_too_slow(size))
        try:
            chunk = await asyncio.wait_for(anext(parts), wait)
        except StopAsyncIteration:
            break
        except TimeoutError:
            raise BodyTooSlow(_too_slow(size)) from None
        except ClientDisconnect:
            raise CallerGone("the client left while sending its request body") from None
        size += len(chunk)
        if size > limit:
            raise BodyTooLarge(_too_large(limit, size))
        chunks.append(chunk)
    return b"".join(chunks)


def _too_large(limit: int, size: int) -> str:
    return f"body: at most {limit} bytes for this call (got {size} or more)"


def _too_slow(size: int) -> str:
    return (
        f"body: stopped after {size} bytes; a body must keep arriving (no pause over "
        f"{BODY_IDLE_SECONDS:.0f}s, and after {BODY_GRACE_SECONDS:.0f}s at least "
        f"{BODY_MIN_BYTES_PER_SECOND} bytes a second)"
    )
