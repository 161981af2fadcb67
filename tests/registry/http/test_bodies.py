"""Request bodies cost nothing until the caller is known: a body is refused from its headers
alone (no key, a key that may not write, a size over what the call takes), a streamed body is
cut off at the call's limit, and a huge document never holds up other callers while parsed."""

from __future__ import annotations

import asyncio
import threading
import time

import httpx2
import orjson

from registry.http.body import MAX_READ_BODY_BYTES
from registry.wire import MAX_MESSAGE_BYTES
from tests.registry.http.conftest import Served
from tests.registry.http.raw_http import RawConnection
from tests.registry.http.test_errors import refusal

# The body of the probe: 39 MB, under the 40 MiB message limit.
PROBE_BYTES = 39_000_000
JSON = {"content-type": "application/json"}


async def test_a_body_without_a_key_is_refused_before_it_is_sent(secured_api: Served) -> None:
    connection = await RawConnection.open(secured_api.url)
    try:
        await connection.send_head(
            "POST", "/v1/schemas", {**JSON, "content-length": f"{PROBE_BYTES}"}
        )
        # Not one byte of the body is sent: only a server that did not wait for it answers.
        response = await connection.response()
    finally:
        await connection.close()
    assert response.status == 401
    assert orjson.loads(response.body)["error"]["code"] == "UNAUTHENTICATED"


async def test_a_catalog_from_a_key_that_may_not_write_is_refused_before_it_is_sent(
    secured_api: Served,
) -> None:
    connection = await RawConnection.open(secured_api.url)
    reader = secured_api.auth("reader")
    try:
        headers = {**reader, "content-type": "application/yaml", "content-length": "10000000"}
        await connection.send_head("PUT", "/v1/catalogs/vault", headers)
        response = await connection.response()
    finally:
        await connection.close()
    assert response.status == 403


async def test_a_body_over_what_its_call_takes_is_refused_413_before_it_is_sent(
    secured_api: Served,
) -> None:
    # A schema lookup reads at most 50 ids: a megabyte is no lookup, whoever sends it.
    for role, method, path, size in (
        ("reader", "POST", "/v1/schemas", MAX_READ_BODY_BYTES + 1),
        ("admin", "POST", "/v1/schemas", PROBE_BYTES),
        ("admin", "POST", "/v1/catalogs:batch", MAX_MESSAGE_BYTES + 1),
    ):
        connection = await RawConnection.open(secured_api.url)
        try:
            headers = {**secured_api.auth(role), **JSON, "content-length": str(size)}
            await connection.send_head(method, path, headers)
            response = await connection.response()
        finally:
            await connection.close()
        assert response.status == 413, (role, path)
        assert orjson.loads(response.body)["error"]["code"] == "INVALID_ARGUMENT"


async def test_a_streamed_body_is_cut_off_at_its_calls_limit(secured_api: Served) -> None:
    connection = await RawConnection.open(secured_api.url)
    chunk = b"[" * 65536
    try:
        headers = {**secured_api.auth("reader"), **JSON, "transfer-encoding": "chunked"}
        await connection.send_head("POST", "/v1/schemas", headers)
        for _ in range(MAX_READ_BODY_BYTES // len(chunk) + 1):
            await connection.send(b"%x\r\n%s\r\n" % (len(chunk), chunk))
        # The body never ends: the answer comes from the bytes counted so far.
        response = await connection.response()
    finally:
        await connection.close()
    assert response.status == 413


async def test_the_largest_valid_schema_lookup_fits_the_read_limit(secured_api: Served) -> None:
    # 50 ids of the longest allowed length, every character escaped as a surrogate pair.
    long_id = "hr/" + "\U0001f600" * 190
    body = orjson.dumps({"ids": [long_id] * 50}).decode()
    escaped = body.replace("\U0001f600", "\\ud83d\\ude00").encode()
    assert len(escaped) <= MAX_READ_BODY_BYTES
    response = await secured_api.http.post(
        "/v1/schemas", content=escaped, headers={**secured_api.auth("reader"), **JSON}
    )
    assert refusal(response, 404)["code"] == "NOT_FOUND"


async def test_a_huge_batch_never_holds_up_other_callers(secured_api: Served) -> None:
    # 200,000 entries, each one valid in itself: reading them all is seconds of work that a
    # batch of at most 1,000 catalogs never needs.
    batch = orjson.dumps({"catalogs": [{"name": "a", "content": "x"}] * 200_000})
    admin = {**secured_api.auth("admin"), **JSON}
    # Another caller, on its own thread: it sees the server's event loop from outside.
    done = threading.Event()
    waits: list[float] = []

    def poll() -> None:
        with httpx2.Client(base_url=secured_api.url, timeout=30.0) as other:
            while not waits or not done.is_set():
                started = time.perf_counter()
                assert other.get("/healthz").status_code == 200
                waits.append(time.perf_counter() - started)
                time.sleep(0.01)

    poller = asyncio.create_task(asyncio.to_thread(poll))
    try:
        response = await secured_api.http.post("/v1/catalogs:batch", content=batch, headers=admin)
    finally:
        done.set()
        await poller
    assert refusal(response, 400)["code"] == "INVALID_ARGUMENT"
    # The bound for another caller while a huge body is dealt with.
    assert max(waits) < 1.0, max(waits)
