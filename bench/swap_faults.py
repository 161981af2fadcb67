"""The fault rounds of `bench.load_fault`: a server killed with SIGKILL while it swaps in a new
version of a large catalog must serve the old version or the new one, whole, after a restart."""

from __future__ import annotations

import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import grpc
import yaml

from registry.proto import registry_pb2 as pb
from registry.proto import registry_pb2_grpc as pb_grpc
from tests.support.server_process import free_port, wait_serving

FAULT_TOOLS = 600


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
