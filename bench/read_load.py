"""Cache hits under read load, timed by clients outside the server's interpreter (decision 0074).

    python -m bench.read_load [--seconds 20] [--connections 8] [--server-cpus LIST]
        [--client-cpus LIST] [--processes] [--out FILE.md]

A real `capreg serve --keys KEYS --http 127.0.0.1:PORT --catalogs catalogs` over the sample
tools, one key granted `*`, per-caller limits off (the bench is one caller). The 20 cached
queries are each asked once first, so the probe's searches are cache hits (it counts any that
is not).

1. Idle: one connection sends cached searches back to back for --seconds (`wrk -t1 -c1`).
2. Read load: --connections connections back to back (`wrk -t1 -cN`), each cycling cached
   search, cached search, uncached search (a query never asked before), GetSchema of three
   ids; no writes. Eight keep every read thread busy with model work and a queue behind them,
   short of shedding. After a 3 s lead, the probe of 1 runs again beside it.

The figure held to the target: the probe's p99 under read load over its idle p99, within 10x.
wrk is C: its connections cost the server's interpreter nothing, where Python clients in one
process queued replies behind their own GIL and took cores from the server at its own priority.
Without wrk (`--processes`, or wrk not installed) each connection is a Python process of its
own: nothing shared with the server, but they take cores from it. `bench.load_fault` reports
this section too.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlencode

from bench.cache_latency import sample_queries
from bench.load_clients import (
    INSTALL_WRK,
    KEY_VARIABLE,
    Plan,
    Timing,
    Traffic,
    lua_script,
    parse_wrk,
    run_processes,
    wrk_command,
    wrk_path,
    wrk_version,
)
from registry.auth.keys import add_key
from tests.support.server_process import free_port, serving_process

ROOT = Path(__file__).resolve().parent.parent
CACHED_QUERIES = 20
FRESH_QUERIES = 300
TARGET_RATIO = 10.0
# The read load starts this long before the probe (the read lane fills) and ends as long after.
LEAD_SECONDS = 3.0
Runner = Callable[[Plan, int, float], Timing]


@dataclass(frozen=True, kw_only=True)
class ReadLoad:
    method: str
    commands: dict[str, str]
    connections: int
    seconds: float
    tools: int
    idle: Timing
    loaded: Timing
    load: Timing
    cores: int
    load_before: float
    load_after: float
    server_cpus: str
    client_cpus: str

    @property
    def ratio(self) -> float:
        return self.loaded.p99 / self.idle.p99


def cpu_set(text: str) -> set[int]:
    """'0', '0-1' or '0,2-3' as a set of CPU numbers (taskset's list format)."""
    cpus: set[int] = set()
    for part in text.split(","):
        low, _, high = part.partition("-")
        cpus.update(range(int(low), int(high or low) + 1))
    return cpus


def pin_process(pid: int, cpus: str) -> None:
    """Every thread of `pid` on `cpus` (threads it starts later inherit their creator's)."""
    for task in Path(f"/proc/{pid}/task").iterdir():
        os.sched_setaffinity(int(task.name), cpu_set(cpus))


def prepare(url: str, key: str) -> tuple[Traffic, int]:
    """The traffic, with every cached query answered once (its ids give GetSchema's), and the
    number of tools served."""
    queries = sample_queries(CACHED_QUERIES + FRESH_QUERIES)
    cached = ["/v1/search?" + urlencode({"q": q}) for q in queries[:CACHED_QUERIES]]
    fresh = ["/v1/search?" + urlencode({"q": q}) for q in queries[CACHED_QUERIES:]]
    host, port = url.removeprefix("http://").rsplit(":", 1)
    connection = http.client.HTTPConnection(host, int(port), timeout=60)
    headers = {"Authorization": f"Bearer {key}"}

    def get(path: str) -> dict[str, list[dict[str, object]]]:
        connection.request("GET", path, headers=headers)
        response = connection.getresponse()
        body = response.read()
        if response.status != 200:
            raise RuntimeError(f"GET {path}: HTTP {response.status} {body[:200]!r}")
        answer: dict[str, list[dict[str, object]]] = json.loads(body)
        return answer

    ids = sorted({str(hit["id"]) for path in cached for hit in get(path)["hits"]})
    tools = sum(int(str(c["tool_count"])) for c in get("/v1/catalogs")["catalogs"])
    connection.close()
    bodies = [
        json.dumps({"ids": [ids[(i + j) % len(ids)] for j in range(3)]}, separators=(",", ":"))
        for i in range(CACHED_QUERIES)
    ]
    return Traffic(url=url, key=key, cached=cached, fresh=fresh, schema_bodies=bodies), tools


def wrk_runner(wrk: str, traffic: Traffic, folder: Path, cpus: str) -> Runner:
    """Runs wrk with the plans' scripts, written into `folder`."""
    for plan in ("probe", "load"):
        (folder / f"{plan}.lua").write_text(lua_script(plan, traffic))

    def run(plan: Plan, connections: int, seconds: float) -> Timing:
        command = wrk_command(wrk, folder / f"{plan}.lua", traffic.url, connections, seconds)
        env = {**os.environ, KEY_VARIABLE: traffic.key}
        done = subprocess.run(
            [*_pinned(cpus), *command], capture_output=True, text=True, env=env, check=True
        )
        return parse_wrk(done.stdout)

    return run


def _pinned(cpus: str) -> list[str]:
    return ["taskset", "-c", cpus] if cpus else []


def shown_command(plan: Plan, connections: int, seconds: float, cpus: str) -> str:
    """The wrk command line of `plan` as the report shows it."""
    command = wrk_command("wrk", Path(f"{plan}.lua"), "http://127.0.0.1:PORT", connections, seconds)
    return " ".join([*_pinned(cpus), *command])


def process_runner(traffic: Traffic, cpus: str) -> Runner:
    def run(plan: Plan, connections: int, seconds: float) -> Timing:
        if not cpus:
            return run_processes(plan, traffic, connections, seconds)
        own = os.sched_getaffinity(0)
        os.sched_setaffinity(0, cpu_set(cpus))  # the client processes inherit it
        try:
            return run_processes(plan, traffic, connections, seconds)
        finally:
            os.sched_setaffinity(0, own)

    return run


def measure(
    db: Path,
    work: Path,
    *,
    seconds: float,
    connections: int,
    server_cpus: str = "",
    client_cpus: str = "",
    processes: bool = False,
) -> ReadLoad:
    """Serves `db` (the sample catalogs are synced into it) with keys and HTTP, then times
    the probe idle and under read load."""
    keys = work / "read-keys.yaml"
    key = add_key(keys, "bench", ["*"])
    http_address = f"127.0.0.1:{free_port()}"
    extra = ["--catalogs", str(ROOT / "catalogs"), "--keys", str(keys), "--http", http_address]
    wrk = None if processes else wrk_path()
    with serving_process(db, work / "read-load.log", extra) as (_address, process):
        if server_cpus:
            pin_process(process.pid, server_cpus)
        traffic, tools = prepare(f"http://{http_address}", key)
        commands = {}
        if wrk is not None:
            run = wrk_runner(wrk, traffic, work, client_cpus)
            method = f"{wrk_version(wrk)} (Lua scripts from bench/load_clients.py)"
            commands = {
                "probe": shown_command("probe", 1, seconds, client_cpus),
                "load": shown_command("load", connections, seconds + 2 * LEAD_SECONDS, client_cpus),
            }
        else:
            run = process_runner(traffic, client_cpus)
            why = "--processes" if processes else f"wrk not found: {INSTALL_WRK}"
            method = f"one Python client process per connection ({why})"
        run("probe", 1, 2.0)  # connections and code paths warmed, not timed
        load_before = os.getloadavg()[0]
        idle = run("probe", 1, seconds)
        with ThreadPoolExecutor(1) as pool:
            load = pool.submit(run, "load", connections, seconds + 2 * LEAD_SECONDS)
            time.sleep(LEAD_SECONDS)
            loaded = run("probe", 1, seconds)
            loaded_by = load.result()
        load_after = os.getloadavg()[0]
    return ReadLoad(
        method=method,
        commands=commands,
        connections=connections,
        seconds=seconds,
        tools=tools,
        idle=idle,
        loaded=loaded,
        load=loaded_by,
        cores=os.cpu_count() or 1,
        load_before=load_before,
        load_after=load_after,
        server_cpus=server_cpus,
        client_cpus=client_cpus,
    )


def _row(label: str, timing: Timing) -> str:
    return (
        f"| {label} | {timing.requests:,} | {timing.misses} | {timing.errors} | "
        f"{timing.p50:.2f} | {timing.p90:.2f} | {timing.p99:.2f} |"
    )


def section(result: ReadLoad, command: str) -> list[str]:
    """The report's section on cache hits under read load, `command` being what produced it."""
    verdict = "within" if result.ratio <= TARGET_RATIO else "NOT within"
    pinned = "nothing pinned"
    if result.server_cpus or result.client_cpus:
        pinned = f"server on CPUs {result.server_cpus or 'any'}, clients on "
        pinned += f"CPUs {result.client_cpus or 'any'}"
    lines = [
        f"## Cache hits under read load ({result.connections} connections, HTTP)",
        "",
        f"Command: `{command}`  ",
        f"Clients: {result.method}; {pinned}. Server: `capreg serve --keys --http` over the "
        f"{result.tools} tools, one key, per-caller limits off.",
    ]
    if result.commands:
        lines += [
            f"Probe: `{result.commands['probe']}` (idle, then under load).  ",
            f"Read load: `{result.commands['load']}`, from {LEAD_SECONDS:g} s before the probe "
            "to as long after.",
        ]
    load = result.load
    lines += [
        "",
        "| cached search, one connection | answered | not from the cache | errors "
        "| p50 ms | p90 ms | p99 ms |",
        "| --- | --- | --- | --- | --- | --- | --- |",
        _row("idle", result.idle),
        _row("under read load", result.loaded),
        "",
        f"The read load itself ({result.connections} connections cycling cached, cached, "
        f"uncached search, GetSchema): {load.per_second:.0f} requests/s, p50 {load.p50:.1f} ms, "
        f"p99 {load.p99:.1f} ms, {load.errors} errors.",
        "",
        f"**Cached p99 under read load: {result.ratio:.1f}x the idle p99** ({verdict} the "
        f"{TARGET_RATIO:g}x target).",
        "",
        f"Machine: {result.cores} cores; 1-minute load average {result.load_before:.2f} before "
        f"the probe, {result.load_after:.2f} after.",
    ]
    if result.load_before > result.cores / 2:
        lines += [
            "",
            f"The machine was shared while this ran (load {result.load_before:.2f} on "
            f"{result.cores} cores before the first probe): these figures are not final; rerun "
            "on a quiet machine.",
        ]
    return [*lines, ""]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--connections", type=int, default=8)
    parser.add_argument("--server-cpus", default="", help="pin the server (taskset list: 0-1)")
    parser.add_argument("--client-cpus", default="", help="pin the clients (taskset list: 2)")
    parser.add_argument("--processes", action="store_true", help="client processes, not wrk")
    parser.add_argument("--out", type=Path, help="also write the section here")
    args = parser.parse_args()
    if not args.processes and wrk_path() is None:
        print(f"wrk not found ({INSTALL_WRK}); timing with client processes", file=sys.stderr)
    command = " ".join(["python -m bench.read_load", *sys.argv[1:]])
    with tempfile.TemporaryDirectory(prefix="capreg-read-") as tmp:
        result = measure(
            Path(tmp) / "read.db",
            Path(tmp),
            seconds=args.seconds,
            connections=args.connections,
            server_cpus=args.server_cpus,
            client_cpus=args.client_cpus,
            processes=args.processes,
        )
    report = "\n".join(["# Cache hits under read load", "", *section(result, command)])
    print(report)
    if args.out:
        args.out.write_text(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
