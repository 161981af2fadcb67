"""Search latency over gRPC and over HTTP from one `capreg serve` serving both.

Usage: python -m bench.http_latency [--queries 200] [--repeats 300] [--max-load 1.5]
[--out FILE.md]

Serves the sample catalogs from a temporary database with `--http`, then times, at
concurrency 1 and alternating the transports call by call (so machine noise falls on both
alike): uncached searches (each base query once per transport, tagged so neither answers
the other from a cache) and cached searches (one query repeated). HTTP is timed with two
clients on one keep-alive connection each: the standard library's http.client (a thin
client, as gRPC's C-core stub is) and httpx2 (what Python services commonly use). Refuses to
run while the machine's 1-minute load is above --max-load. Prints a markdown table and
writes it to --out.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import urlencode

import grpc
import httpx2

from bench.cache_latency import sample_queries
from bench.stats import percentile
from registry.proto import registry_pb2 as pb
from registry.proto import registry_pb2_grpc as pb_grpc
from tests.support.server_process import free_port, serving

ROOT = Path(__file__).resolve().parent.parent
# The gap the HTTP path may add to gRPC's at p50 (docs/decisions/0053).
TARGET_MS = 1.5
Search = Callable[[str], bool]  # sends one search; True when it was answered from the cache


def grpc_search(stub: pb_grpc.CapabilityRegistryStub) -> Search:
    def search(query: str) -> bool:
        return bool(stub.Search(pb.SearchRequest(query=query), timeout=30).cached)

    return search


def stdlib_search(connection: http.client.HTTPConnection) -> Search:
    def search(query: str) -> bool:
        connection.request("GET", "/v1/search?" + urlencode({"q": query}))
        response = connection.getresponse()
        body = response.read()
        if response.status != 200:
            raise RuntimeError(f"HTTP {response.status}: {body[:200]!r}")
        return bool(json.loads(body)["cached"])

    return search


def httpx_search(client: httpx2.Client) -> Search:
    def search(query: str) -> bool:
        response = client.get("/v1/search", params={"q": query})
        response.raise_for_status()
        return bool(response.json()["cached"])

    return search


def timed(search: Search, query: str) -> tuple[float, bool]:
    started = time.perf_counter()
    cached = search(query)
    return (time.perf_counter() - started) * 1000, cached


def run(
    searches: dict[str, Search], queries: list[str], repeats: int
) -> dict[tuple[str, str], tuple[list[float], int]]:
    """(transport, kind) -> (samples in ms, how many were cache hits)."""
    samples: dict[tuple[str, str], tuple[list[float], int]] = {}

    def record(transport: str, kind: str, query: str) -> None:
        elapsed, cached = timed(searches[transport], query)
        times, hits = samples.setdefault((transport, kind), ([], 0))
        times.append(elapsed)
        samples[(transport, kind)] = (times, hits + cached)

    names = list(searches)
    for i, query in enumerate(queries):
        # Rotate who goes first, so no transport always follows another's model work.
        for j in range(len(names)):
            transport = names[(i + j) % len(names)]
            record(transport, "uncached", f"{query} t{(i + j) % len(names)}n{i}")
    repeated = queries[0]
    for search in searches.values():
        search(repeated)  # in the result cache, for every transport alike
    for i in range(repeats):
        for j in range(len(names)):
            record(names[(i + j) % len(names)], "cached", repeated)
    return samples


def report_lines(
    samples: dict[tuple[str, str], tuple[list[float], int]], labels: dict[str, str]
) -> list[str]:
    table = [
        "| search, concurrency 1 | transport | n | from cache | p50 ms | p95 ms | p99 ms |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for (transport, kind), (times, hits) in samples.items():
        table.append(
            f"| {kind} | {labels[transport]} | {len(times)} | {hits} | "
            f"{statistics.median(times):.2f} | {percentile(times, 0.95):.2f} | "
            f"{percentile(times, 0.99):.2f} |"
        )
    table.append("")
    for kind in ("uncached", "cached"):
        grpc_p50 = statistics.median(samples[("grpc", kind)][0])
        for transport in labels:
            if transport == "grpc":
                continue
            gap = statistics.median(samples[(transport, kind)][0]) - grpc_p50
            verdict = "within" if gap <= TARGET_MS else "NOT within"
            table.append(
                f"- {kind}: {labels[transport]} p50 is {gap:+.2f} ms from gRPC's ({verdict} "
                f"the {TARGET_MS} ms target)"
            )
    return table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=300)
    parser.add_argument("--max-load", type=float, default=1.5)
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "results" / "http-latency.md")
    args = parser.parse_args()
    load_before = os.getloadavg()[0]
    if load_before > args.max_load:
        sys.exit(f"load average {load_before:.2f} > {args.max_load}: run when the machine is quiet")
    queries = sample_queries(args.queries)
    http_port = free_port()
    with tempfile.TemporaryDirectory() as tmp:
        db, log = Path(tmp) / "bench.db", Path(tmp) / "serve.log"
        extra = ["--catalogs", str(ROOT / "catalogs"), "--http", f"127.0.0.1:{http_port}"]
        with (
            serving(db, log, extra) as address,
            grpc.insecure_channel(address) as channel,
            httpx2.Client(base_url=f"http://127.0.0.1:{http_port}", timeout=30.0) as client,
        ):
            connection = http.client.HTTPConnection("127.0.0.1", http_port, timeout=30)
            searches = {
                "grpc": grpc_search(pb_grpc.CapabilityRegistryStub(channel)),
                "http": stdlib_search(connection),
                "httpx2": httpx_search(client),
            }
            for search in searches.values():
                search("warm up the connection")
            samples = run(searches, queries, args.repeats)
            connection.close()
    load_after = os.getloadavg()[0]
    labels = {"grpc": "gRPC", "http": "HTTP (http.client)", "httpx2": "HTTP (httpx2)"}
    report = "\n".join(
        [
            "# Search latency: gRPC and HTTP from one server",
            "",
            f"Command: `python -m bench.http_latency --queries {args.queries} "
            f"--repeats {args.repeats}`",
            "",
            f"Date: {datetime.now(UTC):%Y-%m-%d}; machine: {platform.machine()}, "
            f"{os.cpu_count()} CPUs, {platform.python_implementation()} "
            f"{platform.python_version()}; 1-minute load {load_before:.2f} before, "
            f"{load_after:.2f} after. Server: one `capreg serve --http` over the sample "
            "catalogs (300 tools), no keys; clients in another process on loopback, one "
            "connection each, calls alternating between transports.",
            "",
            *report_lines(samples, labels),
            "",
        ]
    )
    print(report)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(report)


if __name__ == "__main__":
    main()
