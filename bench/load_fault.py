"""Load and faults against a real `capreg serve`: mixed traffic, then kill -9 during swaps.

    python -m bench.load_fault [--seconds 60] [--clients 32] [--kills 10] [--out FILE.md]

1. Idle: one client repeats cached searches; their p50/p99 is the reference.
2. Mixed: `--clients` threads for `--seconds`, each call drawn at random: cached search (50%),
   uncached search (25%), GetSchema (20%), RegisterCatalog of a small catalog whose text
   changes every time, so it is embedded (5%). Reports per kind: calls, p50, p99, errors (any
   status but OK), and calls shed with RESOURCE_EXHAUSTED (the admission policy working, not
   an error); and the server's RSS before and after.
3. Overload: the uncached capacity is measured, then uncached searches arrive open-loop at
   four times it (each with a 2 s deadline) beside 50 cached searches/s: how many were
   answered in time, shed at once, or late, and the cache hits' p50/p99.
   During phases 2 and 3 a probe in a process of its own also sends cached searches at a
   steady pace: its latencies are the server's, not those of a load generator whose own
   threads (one GIL, one event loop for hundreds of calls a second) hold a reply back.
4. Faults: `--kills` rounds of registering a new 600-tool version of one catalog and killing
   the server with SIGKILL at a random moment of it; after each restart the catalog must be
   the previous version or the new one, whole (never a mix, never missing).
A figure here is a measurement of this machine, not a pass/fail test.
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import os
import random
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import grpc
import yaml

from bench.cache_latency import sample_queries
from bench.stats import percentile, rss_mb
from registry.proto import registry_pb2 as pb
from registry.proto import registry_pb2_grpc as pb_grpc
from tests.support.server_process import free_port, serving_process, wait_serving

ROOT = Path(__file__).resolve().parent.parent
KINDS = ("cached search", "uncached search", "schema", "register")
# Rows of the report: every kind, and the repeated searches the cache answered.
ROWS = ("cached search", "(answered from the cache)", "uncached search", "schema", "register")
WEIGHTS = (50, 25, 20, 5)
FAULT_TOOLS = 600
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


def fault_catalog(version: int) -> str:
    tools = [
        {
            "name": f"op_{i}",
            "description": f"Version {version} of operation {i}: moves record {i * 7 + version}.",
            "input_schema": {"type": "object", "properties": {"id": {"type": "string"}}},
        }
        for i in range(FAULT_TOOLS)
    ]
    return yaml.safe_dump(
        {"capreg": 1, "name": "swap", "description": f"Swap v{version}", "tools": tools}
    )


def catalog_versions(address: str) -> set[str]:
    """The versions the served 'swap' catalog's tools come from (empty if it is missing)."""
    with grpc.insecure_channel(address) as channel:
        stub = pb_grpc.CapabilityRegistryStub(channel)
        ids = [f"swap/op_{i}" for i in range(FAULT_TOOLS)]
        try:
            reply = stub.GetSchema(pb.GetSchemaRequest(ids=ids[:50]), timeout=60)
        except grpc.RpcError as exc:
            if exc.code() is grpc.StatusCode.NOT_FOUND:
                return set()
            raise
        tail = stub.GetSchema(pb.GetSchemaRequest(ids=ids[-50:]), timeout=60)
    return {t.description.split(" ")[1] for t in [*reply.tools, *tail.tools]}


def kill_loop(db: Path, log: Path, rounds: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    lines = []
    for version in range(1, rounds + 1):
        address = f"127.0.0.1:{free_port()}"
        command = [sys.executable, "-m", "capreg.cli", "serve", "--db", str(db)]
        with log.open("ab") as sink:
            process = subprocess.Popen([*command, "--listen", address], stdout=sink, stderr=sink)
            wait_serving(address, process, seconds=600)
            before = catalog_versions(address)
            source = db.parent / f"swap-{version}.yaml"
            source.write_text(fault_catalog(version))
            register = [sys.executable, "-m", "capreg.cli", "register", str(source)]
            sender = subprocess.Popen(
                [*register, "--server", address],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            delay = rng.uniform(0.5, 9.0)
            time.sleep(delay)
            process.send_signal(signal.SIGKILL)
            process.wait()
            sender.wait()
            process = subprocess.Popen([*command, "--listen", address], stdout=sink, stderr=sink)
            try:
                wait_serving(address, process, seconds=600)
                after = catalog_versions(address)
            finally:
                process.send_signal(signal.SIGTERM)
                process.wait(timeout=60)
        whole = len(after) <= 1
        allowed = after in ({str(version)}, before) or (not before and not after)
        verdict = "ok" if whole and allowed else "MIXED OR LOST"
        shown = ",".join(sorted(after)) or "none"
        earlier = ",".join(sorted(before)) or "none"
        lines.append(f"| {version} | {delay:.1f} | {earlier} | {shown} | {verdict} |")
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument("--kills", type=int, default=10)
    parser.add_argument("--overload-seconds", type=float, default=20.0)
    parser.add_argument(
        "--read-workers", type=int, default=0, help="passed to capreg serve (0: its default)"
    )
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--out", default=str(ROOT / "docs" / "results" / "load-fault.md"))
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="capreg-load-"))
    queries = sample_queries(400)
    cached, fresh = queries[:20], queries[20:]
    try:
        db = work / "load.db"
        extra = ["--catalogs", str(ROOT / "catalogs")]
        if args.read_workers:
            extra += ["--read-workers", str(args.read_workers)]
        with (
            serving_process(db, work / "serve.log", extra) as (
                address,
                process,
            ),
            grpc.insecure_channel(address) as channel,
        ):
            stub = pb_grpc.CapabilityRegistryStub(channel)
            listing = stub.ListCatalogs(pb.ListCatalogsRequest(), timeout=60)
            ids = [
                h.id
                for q in fresh[:60]
                for h in stub.Search(pb.SearchRequest(query=q, limit=5), timeout=60).hits
            ]
            idle = idle_cached(stub, cached, 1_000)
            rss_before = rss_mb(process.pid)
            with probing(address, cached, PROBE_RATE, args.seconds) as mixed_probe:
                tally = mixed(address, cached, fresh, sorted(set(ids)), args.seconds, args.clients)
            rss_after = rss_mb(process.pid)
            idle_after = idle_cached(stub, cached, 1_000)
            served_per_s = capacity(address, fresh)
            with probing(address, cached, PROBE_RATE, args.overload_seconds) as overload_probe:
                overloaded = asyncio.run(
                    overload(address, cached, fresh, 4 * served_per_s, args.overload_seconds)
                )
        tools = sum(c.tool_count for c in listing.catalogs)
        kills = kill_loop(work / "faults.db", work / "faults.log", args.kills, args.seed)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    probes = Probes(mixed=mixed_probe, overload=overload_probe)
    report = render(
        args, tools, idle, idle_after, tally, rss_before, rss_after, kills, overloaded, probes
    )
    print(report)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(report)
    return 0


def render(
    args: argparse.Namespace,
    tools: int,
    idle: list[float],
    idle_after: list[float],
    tally: Tally,
    rss_before: float,
    rss_after: float,
    kills: list[str],
    overloaded: Overload,
    probes: Probes,
) -> str:
    ms = 1000.0

    def probe_line(samples: list[float], target: str) -> str:
        if not samples:
            return "- separate probe process: no call was answered from the cache"
        p99 = percentile(samples, 0.99) * ms
        return (
            f"- separate probe process ({PROBE_RATE:g} cached searches/s): p50 "
            f"{statistics.median(samples) * ms:.1f} ms, p99 {p99:.1f} ms over "
            f"{len(samples):,} cache hits ({target})"
        )

    probe_p99 = percentile(probes.mixed, 0.99) * ms if probes.mixed else float("nan")

    idle_p99 = percentile(idle, 0.99) * ms
    rows = []
    for kind in ROWS:
        samples = tally.latencies[kind]
        errors = sum(tally.errors[kind].values())
        detail = ", ".join(f"{k} {v}" for k, v in sorted(tally.errors[kind].items()))
        rows.append(
            f"| {kind} | {len(samples):,} | {percentile(samples, 0.5) * ms:.1f} | "
            f"{percentile(samples, 0.99) * ms:.1f} | {errors}{f' ({detail})' if detail else ''} "
            f"| {tally.shed[kind]} |"
        )
    cached_p99 = percentile(tally.latencies["(answered from the cache)"], 0.99) * ms
    repeated_p99 = percentile(tally.latencies["cached search"], 0.99) * ms
    total_errors = sum(sum(e.values()) for e in tally.errors.values())
    mixed_kills = sum("MIXED" in line for line in kills)
    lines = [
        "# Load and faults",
        "",
        f"Command: `python -m bench.load_fault --seconds {args.seconds:g} --clients "
        f"{args.clients} --kills {args.kills} --overload-seconds {args.overload_seconds:g} "
        f"--seed {args.seed}"
        + (f" --read-workers {args.read_workers}" if args.read_workers else "")
        + "`  ",
        f"Date: {datetime.now(UTC):%Y-%m-%d}; {os.cpu_count()} cores; a real `capreg serve` "
        f"over the {tools} sample tools, per-caller limits off (the bench is one caller).",
        "",
        "## Idle cached searches (1 client, 1,000 calls)",
        "",
        f"p50 {statistics.median(idle) * ms:.2f} ms, p99 {idle_p99:.2f} ms "
        f"(after the mixed run: p50 {statistics.median(idle_after) * ms:.2f} ms, "
        f"p99 {percentile(idle_after, 0.99) * ms:.2f} ms).",
        "",
        f"## Mixed load ({args.clients} clients, {args.seconds:g} s)",
        "",
        "| kind | calls | p50 ms | p99 ms | errors | shed (RESOURCE_EXHAUSTED) |",
        "| --- | --- | --- | --- | --- | --- |",
        *rows,
        "",
        f"Errors: {total_errors}. Cache hits under mixed load, as the loaded clients time them: "
        f"p99 {cached_p99:.1f} ms = {cached_p99 / idle_p99:.1f}x the idle cached p99; the "
        f"{args.clients} clients share one Python process, so this includes that process's own "
        "queueing, and the separate probe below is the measure held to the target. A repeated "
        f"query misses the cache after each catalog change (results are keyed by generation), "
        f"so all repeated searches together: p99 {repeated_p99:.1f} ms. "
        f"Server RSS {rss_before:.0f} MB before, {rss_after:.0f} MB after "
        f"({rss_after - rss_before:+.0f} MB).",
        "",
        probe_line(
            probes.mixed,
            f"{probe_p99 / idle_p99:.1f}x the idle cached p99; target: within 10x",
        ),
        "",
        f"## 4x overload ({args.overload_seconds:g} s, open loop)",
        "",
        f"Uncached capacity (8 closed-loop clients): {overloaded.offered_per_s / 4:.0f} "
        f"searches/s. Offered: {overloaded.offered_per_s:.0f} uncached searches/s, each with a "
        "2 s deadline, plus 50 cached searches/s.",
        "",
        f"- uncached: {overloaded.uncached:,} sent; {overloaded.in_time:,} answered within "
        f"their deadline, {overloaded.shed:,} shed at once (RESOURCE_EXHAUSTED), "
        f"{overloaded.late:,} past their deadline, {overloaded.other} other errors",
        f"- cache hits: p50 {statistics.median(overloaded.cached or [float('nan')]) * ms:.1f} "
        f"ms, p99 {percentile(overloaded.cached, 0.99) * ms:.1f} ms "
        f"({len(overloaded.cached):,} calls; target p99 under 20 ms); cached searches failed: "
        f"{sum(overloaded.cached_errors.values())}"
        + "".join(f", {k} {v}" for k, v in sorted(overloaded.cached_errors.items())),
        probe_line(probes.overload, "target p99 under 20 ms"),
        "",
        f"## kill -9 during a {FAULT_TOOLS}-tool catalog swap ({len(kills)} rounds)",
        "",
        "| round | killed after s | served before | served after restart | verdict |",
        "| --- | --- | --- | --- | --- |",
        *kills,
        "",
        f"Mixed or lost catalogs: {mixed_kills} of {len(kills)}.",
        "",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
