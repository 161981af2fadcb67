"""Slow clients cannot hold connections: a request head must be complete within its deadline
and a body must keep arriving, or the connection is dropped (slowloris)."""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path

import orjson

from registry.core import Registry
from registry.http.listener import HEAD_TIMEOUT_SECONDS
from tests.conftest import self_signed_certificate
from tests.registry.http.conftest import Served, serve_both
from tests.registry.http.raw_http import PATIENCE_SECONDS, RawConnection


async def _trickle(connection: RawConnection, data: bytes) -> None:
    """Sends `data` one byte a second, until the server hangs up."""
    with contextlib.suppress(ConnectionError):
        for byte in data:
            await connection.send(bytes([byte]))
            await asyncio.sleep(1.0)


def test_the_deadlines_drop_a_slow_client_well_within_the_issues_30_seconds() -> None:
    assert HEAD_TIMEOUT_SECONDS <= PATIENCE_SECONDS / 2


async def test_an_unfinished_request_head_is_dropped(open_api: Served) -> None:
    connection = await RawConnection.open(open_api.url)
    try:
        await connection.send_head("GET", "/healthz", {"x-slow": "1"}, finished=False)
        assert await connection.closed_by_server()
    finally:
        await connection.close()


async def test_a_connection_that_never_sends_a_byte_is_dropped(open_api: Served) -> None:
    connection = await RawConnection.open(open_api.url)
    try:
        assert await connection.closed_by_server()
    finally:
        await connection.close()


async def test_a_request_head_sent_a_byte_a_second_is_dropped_all_the_same(
    open_api: Served,
) -> None:
    connection = await RawConnection.open(open_api.url)
    head = b"GET /healthz HTTP/1.1\r\nhost: capreg.test\r\n" + b"x-slow: 1\r\n" * 100
    trickling = asyncio.create_task(_trickle(connection, head))
    try:
        assert await connection.closed_by_server()
    finally:
        trickling.cancel()
        await connection.close()


async def test_a_body_that_stops_arriving_is_answered_408_and_dropped(
    secured_api: Served,
) -> None:
    connection = await RawConnection.open(secured_api.url)
    headers = {**secured_api.auth("reader"), "content-type": "application/json"}
    try:
        await connection.send_head("POST", "/v1/schemas", {**headers, "content-length": "100"})
        await connection.send(b'{"ids": [')
        response = await connection.response()
        assert await connection.closed_by_server()
    finally:
        await connection.close()
    assert response.status == 408
    assert response.headers["connection"] == "close"
    assert orjson.loads(response.body)["error"]["status"] == 408


async def test_a_body_sent_a_byte_a_second_is_answered_408_all_the_same(
    secured_api: Served,
) -> None:
    connection = await RawConnection.open(secured_api.url)
    headers = {**secured_api.auth("reader"), "content-type": "application/json"}
    body = b'{"ids": [' + b'"hr/get_employee", ' * 40 + b'"hr/get_employee"]}'
    await connection.send_head("POST", "/v1/schemas", {**headers, "content-length": f"{len(body)}"})
    trickling = asyncio.create_task(_trickle(connection, body))
    try:
        response = await connection.response()
    finally:
        trickling.cancel()
        await connection.close()
    assert response.status == 408


async def test_after_an_answer_the_next_head_has_the_same_deadline(open_api: Served) -> None:
    connection = await RawConnection.open(open_api.url)
    try:
        await connection.send_head("GET", "/healthz", {})
        assert (await connection.response()).status == 200
        # Keep-alive: a byte of a next request, then nothing.
        await connection.send(b"G")
        assert await connection.closed_by_server()
    finally:
        await connection.close()


async def test_a_tls_handshake_never_finished_is_dropped(
    sample_registry: Registry, tmp_path: Path
) -> None:
    cert, key = self_signed_certificate(tmp_path)
    async with serve_both(sample_registry, tls=(cert, key)) as served:
        connection = await RawConnection.open(served.url)
        try:
            # A TCP connection that never says ClientHello.
            assert await connection.closed_by_server()
        finally:
            await connection.close()
