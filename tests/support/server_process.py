"""Starts `capreg serve` as a separate process for benchmarks and waits until it serves."""

from __future__ import annotations

import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_serving(
    address: str, process: subprocess.Popen[Any], seconds: float, log: Path | None = None
) -> None:
    """Polls the health service until SERVING; raises if the process exits or time runs out.

    With `log` (where the process writes its output), the error quotes the log's end: a
    server that fails to start in CI is then diagnosed from the test report alone."""
    deadline = time.monotonic() + seconds
    with grpc.insecure_channel(address) as channel:
        stub = health_pb2_grpc.HealthStub(channel)
        while time.monotonic() < deadline:
            if process.poll() is not None:
                said = f":\n{_tail(log)}" if log is not None else ""
                raise RuntimeError(f"capreg serve exited with {process.returncode}{said}")
            try:
                reply = stub.Check(health_pb2.HealthCheckRequest(), timeout=1)
                if reply.status == health_pb2.HealthCheckResponse.SERVING:
                    return
            except grpc.RpcError:
                pass
            time.sleep(0.2)
    raise TimeoutError(f"capreg serve on {address} not ready after {seconds}s")


SERVING_LINE = re.compile(r"capreg serving \d+ tools on (\S+) ")


def wait_serving_logged(process: subprocess.Popen[Any], log: Path, seconds: float) -> str:
    """Waits for a `capreg serve --listen HOST:0` to log that it serves; returns the address
    it bound. No port is chosen before the server binds it, so none can be taken between."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        found = SERVING_LINE.search(log.read_text(errors="replace"))
        if found:
            return found.group(1)
        if process.poll() is not None:
            raise RuntimeError(f"capreg serve exited with {process.returncode}:\n{_tail(log)}")
        time.sleep(0.2)
    raise TimeoutError(f"capreg serve not ready after {seconds}s:\n{_tail(log)}")


def _tail(log: Path, characters: int = 4000) -> str:
    return log.read_text(errors="replace")[-characters:]


@contextmanager
def serving_process(
    db: Path | str, log: Path, extra: Sequence[str] = ()
) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """`capreg serve --db DB` on a free loopback port, logging to `log`; yields its address
    and process."""
    address = f"127.0.0.1:{free_port()}"
    # Benchmarks drive one server hard from one process: per-caller limits off, so they
    # measure the service, not its admission policy.
    command = [sys.executable, "-m", "capreg.cli", "serve", "--db", str(db)]
    command += ["--caller-rate", "0", "--caller-concurrency", "100000"]
    with log.open("wb") as sink:
        process = subprocess.Popen(
            [*command, "--listen", address, *extra], stdout=sink, stderr=sink
        )
        try:
            wait_serving(address, process, seconds=600, log=log)
            yield address, process
        finally:
            process.send_signal(signal.SIGTERM)
            process.wait(timeout=60)


@contextmanager
def serving(db: Path | str, log: Path, extra: Sequence[str] = ()) -> Iterator[str]:
    """`capreg serve --db DB` on a free loopback port; yields its address."""
    with serving_process(db, log, extra) as (address, _):
        yield address
