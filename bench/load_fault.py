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
   steady pace.
4. Read load (`bench.read_load`, the figure held to the 10x target): the same database served
   with keys and HTTP; cached searches timed by wrk, one connection idle and then beside
   `--read-connections` connections of reads, clients that share nothing with the server's
   interpreter (Python clients queue replies behind their own GIL and take its cores).
5. Faults: `--kills` rounds of registering a new 600-tool version of one catalog and killing
   the server with SIGKILL at a random moment of it; after each restart the catalog must be
   the previous version or the new one, whole (never a mix, never missing).
A figure here is a measurement of this machine, not a pass/fail test.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path

import grpc

from bench.cache_latency import sample_queries
from bench.load_traffic import (
    PROBE_RATE,
    Overload,
    Probes,
    Tally,
    capacity,
    idle_cached,
    mixed,
    overload,
    probing,
)
from bench.read_load import ReadLoad, measure, section
from bench.stats import percentile, rss_mb
from bench.swap_faults import FAULT_TOOLS, kill_loop
from registry.proto import registry_pb2 as pb
from registry.proto import registry_pb2_grpc as pb_grpc
from tests.support.server_process import serving_process

ROOT = Path(__file__).resolve().parent.parent
# Rows of the report: every kind, and the repeated searches the cache answered.
ROWS = ("cached search", "(answered from the cache)", "uncached search", "schema", "register")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument("--kills", type=int, default=10)
    parser.add_argument("--overload-seconds", type=float, default=20.0)
    parser.add_argument(
        "--read-workers", type=int, default=0, help="passed to capreg serve (0: its default)"
    )
    parser.add_argument("--read-seconds", type=float, default=20.0)
    parser.add_argument("--read-connections", type=int, default=8)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--out", default=str(ROOT / "docs" / "results" / "load-fault.md"))
    args = parser.parse_args()
    load_at_start = os.getloadavg()[0]
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
        read = measure(db, work, seconds=args.read_seconds, connections=args.read_connections)
        kills = kill_loop(work / "faults.db", work / "faults.log", args.kills, args.seed)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    probes = Probes(mixed=mixed_probe, overload=overload_probe)
    report = render(
        args,
        tools,
        idle,
        idle_after,
        tally,
        rss_before,
        rss_after,
        kills,
        overloaded,
        probes,
        read,
        load_at_start,
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
    read: ReadLoad,
    load_at_start: float,
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
    command = (
        f"python -m bench.load_fault --seconds {args.seconds:g} --clients "
        f"{args.clients} --kills {args.kills} --overload-seconds {args.overload_seconds:g} "
        f"--read-seconds {args.read_seconds:g} --read-connections {args.read_connections} "
        f"--seed {args.seed}"
        + (f" --read-workers {args.read_workers}" if args.read_workers else "")
    )
    lines = [
        "# Load and faults",
        "",
        f"Command: `{command}`  ",
        f"Date: {datetime.now(UTC):%Y-%m-%d}; {os.cpu_count()} cores; a real `capreg serve` "
        f"over the {tools} sample tools, per-caller limits off (the bench is one caller); "
        f"1-minute load average {load_at_start:.2f} at the start.",
        "",
        *(
            [
                "The machine was shared while this ran: no figure here is final; rerun on a "
                "quiet machine.",
                "",
            ]
            if load_at_start > (os.cpu_count() or 1) / 2
            else []
        ),
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
        "queueing; the measure held to the target is the read-load section's, whose clients "
        "share nothing with the server's interpreter. A repeated "
        f"query misses the cache after each catalog change (results are keyed by generation), "
        f"so all repeated searches together: p99 {repeated_p99:.1f} ms. "
        f"Server RSS {rss_before:.0f} MB before, {rss_after:.0f} MB after "
        f"({rss_after - rss_before:+.0f} MB).",
        "",
        probe_line(
            probes.mixed,
            f"{probe_p99 / idle_p99:.1f}x the idle cached p99, beside Python load generators",
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
        *section(read, command),
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
