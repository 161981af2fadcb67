"""No caller can stall the others: writes have their own bounded lane, cache hits never queue,
and work whose caller has gone is never started."""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import grpc
import numpy as np
import pytest
import yaml
from numpy.typing import NDArray

from registry.config import ServerConfig, default_read_workers
from registry.core import Registry
from registry.errors import CallerGone
from registry.lanes import WORKER_NICENESS, Lanes, OpensBelowTheLoop
from registry.proto import registry_pb2 as pb
from registry.proto import registry_pb2_grpc as pb_grpc
from registry.rpc.server import load_serving_embedder
from registry.store import SqliteStore
from tests.conftest import DATA, CountingEmbedder, copy_db, start_server

if TYPE_CHECKING:  # the async stub type exists only in the generated .pyi
    from registry.proto.registry_pb2_grpc import CapabilityRegistryAsyncStub as AsyncStub

BOUNDED_WAIT = 60.0


class GatedEmbedder(CountingEmbedder):
    """Holds every encode whose texts contain a marker until the gate opens.

    Reason for the wrapper: it is the only way to keep a lane busy for as long as a test needs
    without sleeping, and to see which texts the model was asked to encode.
    """

    def __init__(self, inner: CountingEmbedder, marker: str) -> None:
        super().__init__(inner.inner)
        self.marker = marker
        self.gate = threading.Event()
        self.seen: list[str] = []
        self.held = threading.Semaphore(0)

    def _hold(self, texts: Sequence[str]) -> None:
        self.seen.extend(texts)
        if any(self.marker in t.lower() for t in texts):
            self.held.release()
            assert self.gate.wait(BOUNDED_WAIT)

    def encode(self, texts: Sequence[str], *, progress: bool = False) -> NDArray[np.float32]:
        self._hold(texts)
        return super().encode(texts, progress=progress)

    def encode_spans(
        self, text: str, spans: Sequence[tuple[int, int]]
    ) -> list[NDArray[np.float32] | None]:
        self._hold([text])
        return super().encode_spans(text, spans)


@pytest.fixture
async def gated(
    sample_db: Path, tmp_path: Path, embedder: CountingEmbedder
) -> AsyncIterator[tuple[AsyncStub, GatedEmbedder]]:
    store = SqliteStore(copy_db(sample_db, tmp_path))
    gated_embedder = GatedEmbedder(embedder, "zebra")
    registry = Registry(store, gated_embedder)
    registry.load()
    config = ServerConfig(listen="127.0.0.1:0", read_workers=2, write_queue=2)
    server, address = await start_server(registry, config)
    async with grpc.aio.insecure_channel(address) as channel:
        yield pb_grpc.CapabilityRegistryStub(channel), gated_embedder
    gated_embedder.gate.set()
    await server.stop(None)
    store.close()


def _catalog(name: str) -> str:
    document = yaml.safe_load((DATA / "mini.yaml").read_text())
    document["name"] = name
    document["tools"][0]["description"] = f"Zebra crossing tool {name}."
    return yaml.safe_dump(document)


async def _held(embedder: GatedEmbedder) -> None:
    assert await asyncio.to_thread(embedder.held.acquire, True, BOUNDED_WAIT)


async def test_slow_writes_never_hold_up_searches(
    gated: tuple[AsyncStub, GatedEmbedder],
) -> None:
    stub, embedder = gated
    writes = [
        asyncio.ensure_future(
            stub.RegisterCatalog(pb.RegisterCatalogRequest(content=_catalog(f"zoo{i}")))
        )
        for i in range(6)
    ]
    await _held(embedder)  # one write is embedding, the others wait or are refused
    reply = await stub.Search(
        pb.SearchRequest(query="open a support ticket for a customer"), timeout=BOUNDED_WAIT
    )
    assert reply.hits[0].id == "support/create_ticket"
    embedder.gate.set()
    codes = []
    for write in writes:
        try:
            await write
            codes.append(grpc.StatusCode.OK)
        except grpc.aio.AioRpcError as exc:
            codes.append(exc.code())
    # One running plus two waiting were admitted; the rest were told to come back later.
    assert codes.count(grpc.StatusCode.OK) == 3
    assert codes.count(grpc.StatusCode.RESOURCE_EXHAUSTED) == 3


async def test_a_cache_hit_is_answered_while_every_reader_is_busy(
    gated: tuple[AsyncStub, GatedEmbedder],
) -> None:
    stub, embedder = gated
    cached = pb.SearchRequest(query="open a support ticket for a customer")
    first = await stub.Search(cached)
    busy = [
        asyncio.ensure_future(stub.Search(pb.SearchRequest(query=f"zebra number {i}")))
        for i in range(2)
    ]
    await _held(embedder)
    await _held(embedder)  # both read workers are now held
    again = await stub.Search(cached, timeout=BOUNDED_WAIT)
    assert again.cached
    assert [h.id for h in again.hits] == [h.id for h in first.hits]
    embedder.gate.set()
    await asyncio.gather(*busy)


async def test_a_search_whose_deadline_passed_in_the_queue_is_never_run(
    gated: tuple[AsyncStub, GatedEmbedder],
) -> None:
    stub, embedder = gated
    busy = [
        asyncio.ensure_future(stub.Search(pb.SearchRequest(query=f"zebra number {i}")))
        for i in range(2)
    ]
    await _held(embedder)
    await _held(embedder)
    late = pb.SearchRequest(query="a request nobody waits for")
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await stub.Search(late, timeout=0.2)
    assert caught.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
    embedder.gate.set()
    await asyncio.gather(*busy)
    # The queued job found its caller gone and never reached the model.
    await stub.Search(pb.SearchRequest(query="open a support ticket"), timeout=BOUNDED_WAIT)
    assert not any("nobody waits" in text for text in embedder.seen)


async def test_draining_drops_queued_work_and_reports_what_still_runs() -> None:
    lanes = Lanes(read_workers=1, write_queue=1)
    release = threading.Event()
    started = threading.Event()

    def blocking() -> str:
        started.set()
        assert release.wait(BOUNDED_WAIT)
        return "done"

    running = asyncio.ensure_future(lanes.read(None, blocking))
    await asyncio.to_thread(started.wait, BOUNDED_WAIT)
    queued = asyncio.ensure_future(lanes.read(None, lambda: "never"))
    await asyncio.sleep(0)  # a yield, not a wait: the job reaches the pool's queue
    assert not await lanes.drain(0.05)
    with pytest.raises(asyncio.CancelledError):
        await queued
    release.set()
    assert await running == "done"
    assert await lanes.drain(BOUNDED_WAIT)


def test_work_for_a_departed_caller_is_refused_as_caller_gone() -> None:
    class Departed:
        def time_remaining(self) -> float:
            return 0.0

        def add_done_callback(self, _callback: object) -> None:
            return None

    lanes = Lanes(read_workers=1, write_queue=1)
    with pytest.raises(CallerGone):
        asyncio.run(lanes.read(Departed(), lambda: "work"))


@pytest.mark.parametrize(("cores", "threads"), [(1, 2), (2, 2), (3, 3), (4, 4), (16, 4)])
def test_the_read_lane_has_a_thread_per_core_from_two_to_four(
    monkeypatch: pytest.MonkeyPatch, cores: int, threads: int
) -> None:
    monkeypatch.setattr("os.sched_getaffinity", lambda _pid: set(range(cores)))
    assert default_read_workers() == threads
    assert ServerConfig().read_workers == threads


# Nice values are per thread on Linux only; elsewhere nothing is lowered.
TASKS = Path("/proc/self/task")
per_thread_niceness = pytest.mark.skipif(not TASKS.is_dir(), reason="Linux threads only")


def _niceness(native_id: int) -> int:
    return os.getpriority(os.PRIO_PROCESS, native_id)


def _native_threads() -> set[int]:
    return {int(entry.name) for entry in TASKS.iterdir()}


@per_thread_niceness
def test_threads_an_opening_starts_run_below_the_event_loop() -> None:
    release = threading.Event()
    opener = OpensBelowTheLoop()

    def opening() -> threading.Thread:
        inside = threading.Thread(target=release.wait)
        inside.start()
        return inside

    opened = opener(opening)
    opener.wait()
    inside = opened.result()
    beside = threading.Thread(target=release.wait)
    beside.start()
    try:
        assert inside.native_id is not None
        assert beside.native_id is not None
        # At least WORKER_NICENESS: a suite run under `nice 19` cannot be raised to it.
        assert _niceness(inside.native_id) >= WORKER_NICENESS
        assert _niceness(beside.native_id) == _niceness(threading.get_native_id())
    finally:
        release.set()
        beside.join()
        inside.join()


def test_an_opening_that_fails_raises_where_it_is_waited_for() -> None:
    opener = OpensBelowTheLoop()
    opened = opener(lambda: 1)

    def broken() -> int:
        raise OSError("no model in /nowhere")

    opener(broken)
    with pytest.raises(OSError, match="/nowhere"):
        opener.wait()
    assert opened.result() == 1


@per_thread_niceness
@pytest.mark.model
def test_the_threads_the_model_starts_run_below_the_event_loop() -> None:
    # ONNX Runtime's intra-op thread did the read lane's model work at the loop's priority.
    before = _native_threads()
    opener = OpensBelowTheLoop()
    # Held: the session's threads end with it.
    embedder = load_serving_embedder(ServerConfig(), opener)
    opener.wait()
    started = _native_threads() - before
    assert started, "the serving model starts threads of its own"
    assert {t: _niceness(t) for t in started if _niceness(t) < WORKER_NICENESS} == {}
    assert embedder.dimension > 0
