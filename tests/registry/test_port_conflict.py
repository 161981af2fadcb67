"""A taken gRPC port stops the start: two registries never share one port silently, and a
second `capreg serve` says so in one line."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import grpc
import pytest

from registry.auth.authentication import Authenticator
from registry.config import ServerConfig
from registry.core import Registry
from registry.rpc.server import ServeFailed, create_server

# Generous: a refusal is before the model loads; a start that does not refuse would serve.
EXIT_WITHIN_SECONDS = 120.0


@asynccontextmanager
async def port_held_by_grpc() -> AsyncIterator[int]:
    """A gRPC server with gRPC's default options (SO_REUSEPORT on, as older registries had)
    holding a loopback port."""
    holder = grpc.aio.server()
    port = holder.add_insecure_port("127.0.0.1:0")
    await holder.start()
    try:
        yield port
    finally:
        await holder.stop(None)


async def test_a_second_server_on_a_taken_port_is_refused(empty_registry: Registry) -> None:
    async with port_held_by_grpc() as port:
        config = ServerConfig(listen=f"127.0.0.1:{port}")
        with pytest.raises(ServeFailed, match=f"127.0.0.1:{port}"):
            create_server(config, empty_registry, Authenticator(None))


async def test_capreg_serve_on_a_taken_port_exits_at_once_in_one_line(tmp_path: Path) -> None:
    async with port_held_by_grpc() as port:
        command = [sys.executable, "-m", "capreg.cli", "serve", "--db", str(tmp_path / "r.db")]
        process = await asyncio.create_subprocess_exec(
            *command,
            "--listen",
            f"127.0.0.1:{port}",
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        try:
            _, stderr = await asyncio.wait_for(process.communicate(), EXIT_WITHIN_SECONDS)
        except TimeoutError:
            process.kill()
            await process.wait()
            raise AssertionError("capreg serve started on a port another server holds") from None
    lines = stderr.decode().strip().splitlines()
    assert process.returncode == 1
    assert len(lines) == 1, lines
    assert lines[0].startswith(f"capreg: cannot listen on 127.0.0.1:{port}")
    assert "Traceback" not in stderr.decode()
    assert not (tmp_path / "r.db").exists()
