"""The traffic `bench.load_fault` sends a real server: idle cached searches, the mixed load, a
paced probe in a process of its own, the uncached capacity, and open-loop overload."""

from __future__ import annotations

import asyncio
import multiprocessing
import random
import threading
import time
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import grpc
import yaml

from registry.proto import registry_pb2 as pb
from registry.proto import registry_pb2_grpc as pb_grpc

KINDS = ("cached search", "uncached search", "schema", "register")
WEIGHTS = (50, 25, 20, 5)
# Cached searches per second from the separate probe process.
PROBE_RATE = 20.0


@dataclass(frozen=True, kw_only=True)
class Probes:
    """Cache-hit latencies seen by the separate probe process, per phase."""

    mixed: list[float]
    overload: list[float]


@dataclass
class Tally:
    latencies: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    errors: dict[str, dict[str, int]] = field(default_factory=lambda: defaultdict(dict))
    shed: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    lock: threading.Lock = field(default_factory=threading.Lock)

    def record(self, kind: str, seconds: float, code: grpc.StatusCode | None) -> None:
        with self.lock:
            if code is None:
                self.latencies[kind].append(seconds)
            elif code is grpc.StatusCode.RESOURCE_EXHAUSTED:
                self.shed[kind] += 1
            else:
                counts = self.errors[kind]
                counts[code.name] = counts.get(code.name, 0) + 1


def small_catalog(serial: int) -> str:
    tools = [
        {
            "name": f"step_{i}",
            "description": f"Runs load step {i} of batch {serial} and reports its outcome.",
            "input_schema": {"type": "object", "properties": {"batch": {"type": "string"}}},
        }
        for i in range(3)
    ]
    document = {"capreg": 1, "name": "loadgen", "description": "Load test", "tools": tools}
    return yaml.safe_dump(document)


def idle_cached(
    stub: pb_grpc.CapabilityRegistryStub, queries: list[str], calls: int
) -> list[float]:
    for query in queries:
        stub.Search(pb.SearchRequest(query=query), timeout=60)
    samples = []
    for i in range(calls):
        started = time.perf_counter()
        stub.Search(pb.SearchRequest(query=queries[i % len(queries)]), timeout=60)
        samples.append(time.perf_counter() - started)
    return samples


def probe_cache_hits(
    address: str,
    queries: list[str],
    rate: float,
    seconds: float,
    results: multiprocessing.Queue[list[float]],
) -> None:
    """Cached searches at `rate`/s from this process alone; puts the latencies of those the
    cache answered. Paced, one at a time: a call that overruns its slot delays the next."""
    samples = []
    with grpc.insecure_channel(address) as channel:
        stub = pb_grpc.CapabilityRegistryStub(channel)
        begin = time.perf_counter()
        for serial in range(int(rate * seconds)):
            delay = begin + serial / rate - time.perf_counter()
            if delay > 0:
                time.sleep(delay)
            started = time.perf_counter()
            try:
                reply = stub.Search(
                    pb.SearchRequest(query=queries[serial % len(queries)]), timeout=30
                )
            except grpc.RpcError:
                continue
            if reply.cached:
                samples.append(time.perf_counter() - started)
    results.put(samples)


@contextmanager
def probing(address: str, queries: list[str], rate: float, seconds: float) -> Iterator[list[float]]:
    """Runs `probe_cache_hits` in a fresh process for the duration of the block; the list it
    yields holds the probe's latencies once the block is left."""
    context = multiprocessing.get_context("spawn")
    results = context.Queue()
    process = context.Process(
        target=probe_cache_hits, args=(address, queries, rate, seconds, results)
    )
    process.start()
    samples: list[float] = []
    try:
        yield samples
        samples.extend(results.get(timeout=seconds + 120))
    finally:
        process.join(timeout=30)
        if process.is_alive():
            process.kill()


def mixed(
    address: str, cached: list[str], fresh: list[str], ids: list[str], seconds: float, clients: int
) -> Tally:
    tally = Tally()
    ends = time.monotonic() + seconds
    counter = iter(range(10**9))
    counter_lock = threading.Lock()

    def client(seed: int) -> None:
        rng = random.Random(seed)
        with grpc.insecure_channel(address) as channel:
            stub = pb_grpc.CapabilityRegistryStub(channel)
            while time.monotonic() < ends:
                kind = rng.choices(KINDS, WEIGHTS)[0]
                with counter_lock:
                    serial = next(counter)
                started = time.perf_counter()
                code = None
                try:
                    if kind == "cached search":
                        reply = stub.Search(pb.SearchRequest(query=rng.choice(cached)), timeout=30)
                        if reply.cached:
                            elapsed = time.perf_counter() - started
                            tally.record("(answered from the cache)", elapsed, None)
                    elif kind == "uncached search":
                        query = f"{fresh[serial % len(fresh)]} (request {serial})"
                        stub.Search(pb.SearchRequest(query=query), timeout=30)
                    elif kind == "schema":
                        stub.GetSchema(pb.GetSchemaRequest(ids=rng.sample(ids, 3)), timeout=30)
                    else:
                        request = pb.RegisterCatalogRequest(content=small_catalog(serial))
                        stub.RegisterCatalog(request, timeout=60)
                except grpc.RpcError as exc:
                    code = exc.code()
                tally.record(kind, time.perf_counter() - started, code)

    threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return tally


def capacity(address: str, fresh: list[str], seconds: float = 10.0, clients: int = 8) -> float:
    """Uncached searches per second the server completes with `clients` closed-loop clients."""
    ends = time.monotonic() + seconds
    done = [0] * clients

    def client(index: int) -> None:
        with grpc.insecure_channel(address) as channel:
            stub = pb_grpc.CapabilityRegistryStub(channel)
            serial = 0
            while time.monotonic() < ends:
                query = f"{fresh[(index * 7919 + serial) % len(fresh)]} (capacity {index}-{serial})"
                stub.Search(pb.SearchRequest(query=query), timeout=60)
                done[index] += 1
                serial += 1

    threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return sum(done) / seconds


@dataclass
class Overload:
    offered_per_s: float
    uncached: int = 0
    in_time: int = 0
    shed: int = 0
    late: int = 0
    other: int = 0
    cached: list[float] = field(default_factory=list)
    # Cached searches that failed, by status code (a starved server can drop them).
    cached_errors: dict[str, int] = field(default_factory=dict)


async def overload(
    address: str, cached: list[str], fresh: list[str], rate: float, seconds: float
) -> Overload:
    """Open-loop arrivals: uncached searches at `rate`/s, each with a 2 s deadline, and
    cached searches at 50/s, for `seconds`."""
    result = Overload(offered_per_s=rate)
    deadline = 2.0
    async with grpc.aio.insecure_channel(address) as channel:
        stub = pb_grpc.CapabilityRegistryStub(channel)

        async def uncached_call(serial: int) -> None:
            query = f"{fresh[serial % len(fresh)]} (overload {serial})"
            try:
                await stub.Search(pb.SearchRequest(query=query), timeout=deadline)
                result.in_time += 1
            except grpc.aio.AioRpcError as exc:
                if exc.code() is grpc.StatusCode.RESOURCE_EXHAUSTED:
                    result.shed += 1
                elif exc.code() is grpc.StatusCode.DEADLINE_EXCEEDED:
                    result.late += 1
                else:
                    result.other += 1

        async def cached_call(serial: int) -> None:
            started = time.perf_counter()
            try:
                reply = await stub.Search(
                    pb.SearchRequest(query=cached[serial % len(cached)]), timeout=30
                )
            except grpc.aio.AioRpcError as exc:
                name = exc.code().name
                result.cached_errors[name] = result.cached_errors.get(name, 0) + 1
                return
            if reply.cached:
                result.cached.append(time.perf_counter() - started)

        tasks = []
        begin = time.perf_counter()
        arrivals = [(i / rate, "u", i) for i in range(int(rate * seconds))]
        arrivals += [(i / 50.0, "c", i) for i in range(int(50 * seconds))]
        for at, kind, serial in sorted(arrivals):
            delay = begin + at - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            call = uncached_call(serial) if kind == "u" else cached_call(serial)
            tasks.append(asyncio.create_task(call))
        await asyncio.gather(*tasks)
    result.uncached = int(rate * seconds)
    return result
