"""Search latency over gRPC with and without the result cache, against `capreg serve`.

Usage: python -m bench.cache_latency [--queries 200] [--repeats 200] [--out FILE.md]

Serves the sample catalogs from a temporary database (a cold start: every tool is embedded),
then times, at concurrency 1: uncached searches (distinct queries: each is new to the
query-embedding and result caches), cached searches (one query repeated), and the `capreg
search` command end to end (process start included). Prints a table and writes markdown.
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import grpc
import yaml

from bench.stats import percentile
from registry.ingest.catalog_dir import catalog_files
from registry.proto import registry_pb2 as pb
from registry.proto import registry_pb2_grpc as pb_grpc
from tests.support.server_process import serving

ROOT = Path(__file__).resolve().parent.parent


def sample_queries(limit: int) -> list[str]:
    """Distinct, realistic needs: the sample catalogs' example requests and descriptions."""
    queries: list[str] = []
    for path in catalog_files(ROOT / "catalogs"):
        document = yaml.safe_load(path.read_text())
        for tool in document.get("tools", []):
            meta = tool.get("_meta") or {}
            queries.extend(tool.get("examples") or meta.get("capreg/examples") or [])
            first = (tool.get("description") or "").split(". ")[0]
            if first:
                queries.append(first)
    unique = list(dict.fromkeys(q.strip() for q in queries if q.strip()))
    return unique[:limit]


def time_calls(stub: pb_grpc.CapabilityRegistryStub, queries: list[str]) -> tuple[list[float], int]:
    samples, cached = [], 0
    for query in queries:
        started = time.perf_counter()
        reply = stub.Search(pb.SearchRequest(query=query), timeout=30)
        samples.append((time.perf_counter() - started) * 1000)
        cached += reply.cached
    return samples, cached


def time_cli(address: str, queries: list[str]) -> list[float]:
    """Wall time of `capreg search QUERY` as a user runs it, interpreter start included."""
    samples = []
    env = {**os.environ, "CAPREG_SERVER": address}
    for query in queries:
        started = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "capreg.cli", "search", query],
            check=True,
            capture_output=True,
            env=env,
        )
        samples.append((time.perf_counter() - started) * 1000)
    return samples


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=200)
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "results" / "cache.md")
    args = parser.parse_args()
    queries = sample_queries(args.queries)
    with tempfile.TemporaryDirectory() as tmp:
        db, log = Path(tmp) / "bench.db", Path(tmp) / "serve.log"
        catalogs = ["--catalogs", str(ROOT / "catalogs")]
        with serving(db, log, catalogs) as address, grpc.insecure_channel(address) as channel:
            stub = pb_grpc.CapabilityRegistryStub(channel)
            stub.Search(pb.SearchRequest(query="warm up the connection"), timeout=30)
            uncached, hits_u = time_calls(stub, queries)
            repeated = [queries[0]] * args.repeats
            stub.Search(pb.SearchRequest(query=queries[0]), timeout=30)
            cached, hits_c = time_calls(stub, repeated)
            cli = time_cli(address, queries[:10])
        cold = re.search(r"(\d+) registered \((\d+) tools embedded\)", log.read_text())
        ready = re.search(r"ready in ([\d.]+)s", log.read_text())
    rows = [
        ("uncached (distinct queries)", uncached, hits_u),
        ("cached (repeated query)", cached, hits_c),
    ]
    table = [
        "| search over gRPC, concurrency 1 | n | served from cache | p50 ms | p95 ms | p99 ms |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for label, samples, from_cache in rows:
        table.append(
            f"| {label} | {len(samples)} | {from_cache} | {statistics.median(samples):.2f} "
            f"| {percentile(samples, 0.95):.2f} | {percentile(samples, 0.99):.2f} |"
        )
    catalogs_line = (
        f"Cold start: {cold.group(1)} catalogs, {cold.group(2)} tools embedded; server ready "
        f"{ready.group(1)} s after launch (model load included)."
        if cold and ready
        else "Cold start: not found in the server log."
    )
    report = "\n".join(
        [
            "# Result cache: search latency",
            "",
            f"Command: `python -m bench.cache_latency --queries {args.queries} "
            f"--repeats {args.repeats}`",
            f"Date: {datetime.now(UTC):%Y-%m-%d}; machine: {platform.machine()}, "
            f"{platform.python_implementation()} {platform.python_version()}; "
            "server: `capreg serve` over the sample catalogs (300 tools), client in another "
            "process on loopback.",
            "",
            *table,
            "",
            catalogs_line,
            "",
            f"`capreg search` end to end (new process each time, n={len(cli)}): p50 "
            f"{statistics.median(cli):.0f} ms (the search itself is the gRPC figure above).",
            "",
        ]
    )
    print(report)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(report)


if __name__ == "__main__":
    main()
