"""Per-caller admission: rate and concurrency per API key (or peer host), refusals with a
retry hint, and shedding of searches when every reader is busy and the queue is full."""

from __future__ import annotations

import asyncio
import threading

import grpc
import pytest

from registry.config import CallerLimits, ServerConfig
from registry.core import Registry
from registry.errors import Overloaded
from registry.lanes import Lanes
from registry.limits import Admission, caller_of
from registry.proto import registry_pb2 as pb
from registry.proto import registry_pb2_grpc as pb_grpc
from tests.conftest import start_server


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


def test_calls_count_against_the_key_id_or_else_the_peer_host() -> None:
    keyed = caller_of((("authorization", "Bearer capreg_0123abcd_sec_ret"),), "ipv4:1.2.3.4:5")
    assert keyed == "key:0123abcd"
    assert "sec" not in keyed
    assert caller_of((), "ipv4:1.2.3.4:5") == caller_of((), "ipv4:1.2.3.4:6") == "peer:1.2.3.4"


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
