"""Per-caller admission: rate and concurrency per API key (or peer host), refusals with a
retry hint, and shedding of searches when every reader is busy and the queue is full."""

from __future__ import annotations

import asyncio
import secrets
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import grpc
import httpx2
import pytest

from registry.auth.authentication import Authenticator
from registry.auth.keys import KeyStore, add_key, key_id_of
from registry.config import CallerLimits, ServerConfig
from registry.core import Registry
from registry.errors import Overloaded
from registry.http.app import create_app
from registry.http.listener import HttpListener, bind
from registry.lanes import Lanes
from registry.limits import Admission
from registry.proto import registry_pb2 as pb
from registry.proto import registry_pb2_grpc as pb_grpc
from registry.rpc.server import create_server, mark_serving
from registry.telemetry import ServiceMetrics
from tests.conftest import start_server

BOUNDED_WAIT = 30.0


class Clock:
    """Reason for the fake: token buckets refill with wall time."""

    def __init__(self) -> None:
        self.now = 50.0

    def __call__(self) -> float:
        return self.now


def test_a_caller_past_its_rate_waits_the_time_it_is_told() -> None:
    clock = Clock()
    admission = Admission(CallerLimits(rate=10.0, burst=3, concurrency=100), clock)
    for _ in range(3):
        admission.enter("key:a")
        admission.leave("key:a")
    with pytest.raises(Overloaded) as caught:
        admission.enter("key:a")
    assert caught.value.retry_after == pytest.approx(0.1)
    admission.enter("key:b")  # another caller is not affected
    clock.now += 0.1
    admission.enter("key:a")


def test_a_caller_cannot_hold_more_than_its_concurrency() -> None:
    admission = Admission(CallerLimits(rate=0.0, burst=1, concurrency=2))
    admission.enter("key:a")
    admission.enter("key:a")
    with pytest.raises(Overloaded, match="in flight"):
        admission.enter("key:a")
    admission.leave("key:a")
    admission.enter("key:a")


def test_without_an_authenticator_every_call_counts_against_its_peer_host() -> None:
    admission = Admission(CallerLimits())
    keyed = admission.caller_of(
        (("authorization", "Bearer capreg_0123abcd_sec_ret"),), "ipv4:1.2.3.4:5"
    )
    assert keyed == admission.caller_of((), "ipv4:1.2.3.4:6") == "peer:1.2.3.4"


async def test_an_over_rate_caller_gets_resource_exhausted_with_a_pushback(
    sample_registry: Registry,
) -> None:
    config = ServerConfig(
        listen="127.0.0.1:0", caller_limits=CallerLimits(rate=0.001, burst=2, concurrency=8)
    )
    server, address = await start_server(sample_registry, config)
    try:
        async with grpc.aio.insecure_channel(address) as channel:
            stub = pb_grpc.CapabilityRegistryStub(channel)
            for _ in range(2):
                await stub.ListCatalogs(pb.ListCatalogsRequest())
            call = stub.ListCatalogs(pb.ListCatalogsRequest())
            with pytest.raises(grpc.aio.AioRpcError) as caught:
                await call
    finally:
        await server.stop(None)
    assert caught.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert "retry in" in (caught.value.details() or "")
    trailers: list[tuple[str, str]] = list(caught.value.trailing_metadata() or ())  # type: ignore[arg-type]  # aio metadata is (str, str) pairs
    pushback = [value for key, value in trailers if key == "grpc-retry-pushback-ms"]
    assert int(pushback[0]) > 0


async def test_searches_are_shed_when_readers_and_queue_are_full() -> None:
    lanes = Lanes(read_workers=1, write_queue=1, read_queue=1)
    release = threading.Event()
    started = threading.Event()

    def blocking() -> None:
        started.set()
        assert release.wait(60)

    running = asyncio.ensure_future(lanes.read(None, blocking))
    await asyncio.to_thread(started.wait, 60)
    waiting = asyncio.ensure_future(lanes.read(None, lambda: None))
    await asyncio.sleep(0)  # a yield: the second job takes the one queue place
    with pytest.raises(Overloaded, match="retry"):
        await lanes.read(None, lambda: None)
    release.set()
    await asyncio.gather(running, waiting)
    await lanes.read(None, lambda: None)  # room again


def _bearer(key: str) -> tuple[tuple[str, str]]:
    return (("authorization", f"Bearer {key}"),)


def _forged(key: str) -> str:
    """The key's public id with a wrong secret: what anyone reading `keys list` can send."""
    return f"capreg_{key_id_of(key)}_{secrets.token_urlsafe(32)}"


async def test_wrong_secrets_carrying_a_key_id_do_not_spend_that_keys_budget(
    sample_registry: Registry, tmp_path: Path
) -> None:
    reader = add_key(tmp_path / "keys.yaml", "reader", ["hr:read"])
    config = ServerConfig(
        listen="127.0.0.1:0", caller_limits=CallerLimits(rate=1.0, burst=50, concurrency=32)
    )
    keys = KeyStore.load(tmp_path / "keys.yaml")
    server, address = await start_server(sample_registry, config, keys=keys)
    try:
        async with grpc.aio.insecure_channel(address) as channel:
            stub = pb_grpc.CapabilityRegistryStub(channel)
            refused = set()
            for _ in range(300):
                with pytest.raises(grpc.aio.AioRpcError) as caught:
                    await stub.ListCatalogs(
                        pb.ListCatalogsRequest(), metadata=_bearer(_forged(reader))
                    )
                refused.add(caught.value.code())
            listed = await stub.ListCatalogs(pb.ListCatalogsRequest(), metadata=_bearer(reader))
    finally:
        await server.stop(None)
    assert refused <= {grpc.StatusCode.UNAUTHENTICATED, grpc.StatusCode.RESOURCE_EXHAUSTED}
    assert [c.name for c in listed.catalogs] == ["hr"]


@asynccontextmanager
async def both_transports(
    registry: Registry, keys_file: Path, limits: CallerLimits
) -> AsyncIterator[tuple[str, str]]:
    """gRPC and HTTP sharing one authenticator and admission, as `run_server` builds them;
    yields their addresses."""
    authenticator = Authenticator(KeyStore.load(keys_file), reload_interval=0.0)
    admission = Admission(limits, authenticator=authenticator)
    lanes = Lanes(read_workers=2, write_queue=8)
    metrics = ServiceMetrics()
    config = ServerConfig(listen="127.0.0.1:0", caller_limits=limits)
    server, port, health = create_server(config, registry, authenticator, lanes, metrics, admission)
    await server.start()
    mark_serving(health)
    listener = HttpListener(
        create_app(registry, authenticator, lanes, metrics, admission), bind("127.0.0.1:0")
    )
    await listener.start()
    try:
        yield f"127.0.0.1:{port}", listener.url
    finally:
        await listener.stop()
        await server.stop(None)
        await lanes.drain(5.0)


async def test_slow_bodies_and_wrong_secrets_from_another_host_leave_the_reader_answered(
    sample_registry: Registry, tmp_path: Path
) -> None:
    keys_file = tmp_path / "keys.yaml"
    reader = add_key(keys_file, "reader", ["hr:read"])
    # 127.0.0.2 is another host on the loopback network.
    attacker = "127.0.0.2"
    limits = CallerLimits()
    async with both_transports(sample_registry, keys_file, limits) as (address, url):
        host, port = url.removeprefix("http://").rsplit(":", 1)
        head = (
            f"POST /v1/schemas HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {_forged(reader)}"
            "\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{"
        ).encode()
        slow = []
        answers = []
        for _ in range(40):
            reply, writer = await asyncio.open_connection(host, int(port), local_addr=(attacker, 0))
            writer.write(head)  # the body never comes
            await writer.drain()
            slow.append(writer)
            answers.append(asyncio.ensure_future(reply.read(1)))
        transport = httpx2.AsyncHTTPTransport(local_address=attacker)
        async with httpx2.AsyncClient(transport=transport, base_url=url, timeout=30) as other:
            # Every slow body has been dealt with: refused from its head, or admitted and
            # holding one of its caller's slots until they are full.
            for _ in range(int(BOUNDED_WAIT * 10)):
                if all(answer.done() for answer in answers):
                    break
                probe = await other.post(
                    "/v1/schemas",
                    json={"ids": []},
                    headers={"authorization": f"Bearer {_forged(reader)}"},
                )
                if probe.status_code == 429 and "in flight" in probe.json()["error"]["message"]:
                    break
                await asyncio.sleep(0.1)
            else:
                raise AssertionError("the slow bodies were neither refused nor admitted")
            for _ in range(300):
                wrong = await other.get(
                    "/v1/catalogs", headers={"authorization": f"Bearer {_forged(reader)}"}
                )
                assert wrong.status_code in (401, 429)
        async with httpx2.AsyncClient(base_url=url, timeout=30) as http:
            over_http = await http.get(
                "/v1/catalogs", headers={"authorization": f"Bearer {reader}"}
            )
        async with grpc.aio.insecure_channel(address) as channel:
            stub = pb_grpc.CapabilityRegistryStub(channel)
            over_grpc = await stub.ListCatalogs(pb.ListCatalogsRequest(), metadata=_bearer(reader))
        for writer, answer in zip(slow, answers, strict=True):
            answer.cancel()
            writer.close()
    assert over_http.status_code == 200, over_http.text
    assert [c["name"] for c in over_http.json()["catalogs"]] == ["hr"]
    assert [c.name for c in over_grpc.catalogs] == ["hr"]
