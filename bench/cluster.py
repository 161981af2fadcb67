"""Replicas on PostgreSQL: how fast a write reaches the others, what a replica's searches cost
against the SQLite node's, how long a replica joining 100k tools takes to start, and searches
per second through a round-robin target over 1, 2 and 3 replicas.

Usage: python -m bench.cluster [--server postgresql://postgres@127.0.0.1:5432] [--writes 50]
       [--queries 200] [--out docs/results/cluster.md]

Every figure comes from real `capreg serve` processes on this machine and its PostgreSQL; the
catalogs are the 10k-tool server mirrors of `bench.registration` (1,573 catalogs), embeddings
copied from `.capreg/bench/bench.db` (run `make bench` first). On two cores, more replicas
share the same two cores: the throughput rows measure the overhead of the round-robin path,
not scaling.
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import sqlite3
import statistics
import time
from contextlib import ExitStack
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import grpc

from bench.performance import throughput
from bench.postgres_copy import EMBEDDINGS, EVERYTHING, copy_tables, fresh_database
from bench.registration import CACHE, ensure_cached, seeded_store, write_folder
from bench.stats import percentile
from capreg.evaluation.sampler import catalog_sources, load_pool, with_variants
from registry.auth.shared_keys import add_key
from registry.proto import registry_pb2 as pb
from registry.proto import registry_pb2_grpc as pb_grpc
from registry.store import PostgresStore
from tests.support.server_process import serving_process

ROOT = Path(__file__).resolve().parent.parent
WORKDIR = ROOT / ".capreg" / "bench" / "cluster"


# The bearer key every call sends: replicas on PostgreSQL take their keys from the store
# (the SQLite node, with no keys file, serves loopback callers as administrators).
AUTH: tuple[tuple[str, str | bytes], ...] = ()


def stub(address: str) -> pb_grpc.CapabilityRegistryStub:
    return pb_grpc.CapabilityRegistryStub(grpc.insecure_channel(address))


def latencies(address: str, queries: list[str]) -> list[float]:
    client = stub(address)
    client.Search(pb.SearchRequest(query="warm up"), timeout=60, metadata=AUTH)
    samples = []
    for query in queries:
        started = time.perf_counter()
        client.Search(pb.SearchRequest(query=query), timeout=60, metadata=AUTH)
        samples.append((time.perf_counter() - started) * 1000)
    return samples


def propagation(
    writer: str, followers: list[str], sources: list[tuple[str, str]], writes: int
) -> list[float]:
    """Milliseconds from each write's response until every follower answers with it."""
    client, watchers = stub(writer), [stub(a) for a in followers]
    delays = []
    for index in range(writes):
        name, content = sources[index * 7 % len(sources)]
        document = json.loads(content)
        document["tools"][0]["description"] += f" (revised {time.time_ns()})"
        reply = client.RegisterCatalog(
            pb.RegisterCatalogRequest(content=json.dumps(document), name=name, format="native"),
            timeout=60,
            metadata=AUTH,
        )
        committed = time.perf_counter()
        for watcher in watchers:
            while (
                watcher.ListCatalogs(
                    pb.ListCatalogsRequest(), timeout=10, metadata=AUTH
                ).index_generation
                < reply.index_generation
            ):
                time.sleep(0.001)
        delays.append((time.perf_counter() - committed) * 1000)
    return delays


ROUND_ROBIN = (("grpc.lb_policy_name", "round_robin"),)


def startup_s(db: str | Path, log: Path) -> float:
    started = time.perf_counter()
    with serving_process(db, log):
        return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--server", default="postgresql://postgres@127.0.0.1:5432")
    parser.add_argument("--writes", type=int, default=50)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--datasets", default=None)
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "results" / "cluster.md")
    args = parser.parse_args()
    WORKDIR.mkdir(parents=True, exist_ok=True)
    pool, tasks = load_pool(args.datasets)
    sources = catalog_sources(with_variants(pool, 10_000)[:10_000])
    queries = [t.query[:500] for t in random.Random(11).sample(tasks, args.queries)]
    folder = WORKDIR / "catalogs"
    write_folder(folder, sources)
    ensure_cached(sources)
    big_tools = sqlite3.connect(CACHE).execute("SELECT count(*) FROM tools").fetchone()[0]
    result: dict[str, Any] = {}
    with ExitStack() as stack:
        dsn = fresh_database(args.server, "capreg_bench_cluster")
        copy_tables(dsn, CACHE, EMBEDDINGS)
        store = PostgresStore(dsn)
        global AUTH  # set once, before any call
        AUTH = (("authorization", f"Bearer {add_key(store, 'bench', ['registry:admin', '*'])}"),)
        store.close()
        first, _ = stack.enter_context(
            serving_process(dsn, WORKDIR / "replica-1.log", ["--catalogs", str(folder)])
        )
        others = [
            stack.enter_context(serving_process(dsn, WORKDIR / f"replica-{i}.log"))[0]
            for i in (2, 3)
        ]
        single_db = WORKDIR / "single.db"
        seeded_store(single_db)
        single, _ = stack.enter_context(
            serving_process(single_db, WORKDIR / "single.log", ["--catalogs", str(folder)])
        )
        replica_ms = latencies(others[0], queries)
        single_ms = latencies(single, queries)
        result["replica_p50"] = statistics.median(replica_ms)
        result["single_p50"] = statistics.median(single_ms)
        result["replica_p99"] = percentile(replica_ms, 0.99)
        result["single_p99"] = percentile(single_ms, 0.99)
        delays = propagation(first, others, sources, args.writes)
        result["propagation"] = (statistics.median(delays), percentile(delays, 0.99), max(delays))
        rates = {}
        replicas = [first, *others]
        for count in (1, 2, 3):
            target = "ipv4:" + ",".join(replicas[:count])
            rates[count] = tuple(
                throughput(
                    target,
                    queries,
                    8,
                    5.0,
                    distinct=distinct,
                    options=ROUND_ROBIN,
                    metadata=AUTH,
                    tag=f"{count}r",
                )
                for distinct in (False, True)
            )
        result["rates"] = rates
    # A replica joining 100k stored tools, against the SQLite node with the same store.
    big = fresh_database(args.server, "capreg_bench_cluster_100k")
    copied = copy_tables(big, CACHE, EVERYTHING)
    sqlite_copy = WORKDIR / "big.db"
    for suffix in ("", "-wal", "-shm"):
        Path(f"{sqlite_copy}{suffix}").unlink(missing_ok=True)
    with sqlite3.connect(CACHE) as original, sqlite3.connect(sqlite_copy) as duplicate:
        original.backup(duplicate)
    joins = sorted(startup_s(big, WORKDIR / f"join-{i}.log") for i in range(3))
    singles = sorted(startup_s(sqlite_copy, WORKDIR / f"big-{i}.log") for i in range(3))
    result["startup"] = (copied, joins[1], singles[1])
    write_report(result, args, big_tools)


def write_report(result: dict[str, Any], args: argparse.Namespace, big_tools: int) -> None:
    p50, p99, worst = result["propagation"]
    ratio = result["replica_p50"] / result["single_p50"]
    tools, join, single = result["startup"]
    lines = [
        "# Replicas on PostgreSQL",
        "",
        f"Command: `python -m bench.cluster --writes {args.writes} --queries {args.queries}`  ",
        f"Date: {datetime.now(UTC):%Y-%m-%d}; {platform.machine()}, 2 cores, PostgreSQL on "
        "the same machine. Three `capreg serve --db postgresql://...` replicas (follow interval "
        "1 s) and one SQLite node, all on 10,000 tools in 1,573 catalogs (the server mirrors of "
        "bench.registration); queries: labeled task texts cut at 500 characters.",
        "",
        "| measurement | result | target |",
        "| --- | --- | --- |",
        f"| a write's commit until both other replicas answer with it, over {args.writes} "
        f"one-tool changes: p50 / p99 / max | {p50:.1f} / {p99:.1f} / {worst:.1f} ms | within "
        "the staleness bound (1 s) |",
        f"| uncached search p50 (p99): replica on PostgreSQL / SQLite node | "
        f"{result['replica_p50']:.1f} ({result['replica_p99']:.1f}) / {result['single_p50']:.1f} "
        f"({result['single_p99']:.1f}) ms; ratio {ratio:.2f} | <= 1.1 |",
        f"| start-up joining {tools:,} stored tools (median of 3) / SQLite node, same store | "
        f"{join:.1f} / {single:.1f} s; ratio {join / single:.2f} | <= 1.2 |",
        "",
        "Searches per second through a round-robin target, 8 clients, 5 s each (on two cores "
        "every replica shares the same two cores: this measures the overhead of the path, "
        "not scaling):",
        "",
        "| replicas | cached searches/s | uncached searches/s |",
        "| --- | --- | --- |",
    ]
    for count, (cached, uncached) in result["rates"].items():
        lines.append(f"| {count} | {cached:,.0f} | {uncached:,.0f} |")
    lines.append("")
    if tools != big_tools:
        lines.append(f"(The SQLite cache held {big_tools:,} tools; {tools:,} were copied.)")
    report = "\n".join(lines)
    print(report)
    args.out.write_text(report)


if __name__ == "__main__":
    main()
