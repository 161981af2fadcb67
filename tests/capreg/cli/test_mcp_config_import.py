"""`capreg import-mcp --config`: an MCP client's configuration registered server by server
into a real registry with keys, one broken server failing alone, `--only` and `--watch`."""

from __future__ import annotations

import asyncio
import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from registry.auth.keys import KeyStore, add_key
from registry.core import Registry
from tests.conftest import start_server

CAPREG = [sys.executable, "-m", "capreg.cli"]
# The real third-party server from PyPI (a dev dependency), started by the venv's python.
TIME = {"command": sys.executable, "args": ["-m", "mcp_server_time", "--local-timezone", "UTC"]}
BROKEN = {"command": "/nonexistent/mcp-server", "args": ["--stdio"]}
WAIT = 120.0  # seconds for a round of the watch: it starts python servers


@dataclass
class Served:
    address: str
    admin: str
    registry: Registry


@pytest.fixture
async def served(empty_registry: Registry, tmp_path: Path) -> AsyncIterator[Served]:
    """A real registry on loopback that enforces keys, with an administrator's key."""
    keys = tmp_path / "keys.yaml"
    admin = add_key(keys, "ops", ["registry:admin", "*"])
    server, address = await start_server(empty_registry, keys=KeyStore.load(keys))
    yield Served(address, admin, empty_registry)
    await server.stop(None)


def _env(key: str | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "CAPREG_API_KEY"}
    if key:
        env["CAPREG_API_KEY"] = key
    return env


async def _capreg(*args: str, key: str | None = None) -> subprocess.CompletedProcess[str]:
    # In a thread: the registry answering the command runs on this event loop.
    return await asyncio.to_thread(
        subprocess.run,
        [*CAPREG, *args],
        capture_output=True,
        text=True,
        env=_env(key),
        timeout=180,
    )


def _write(path: Path, servers: dict[str, Any]) -> Path:
    # Whole at once, as an editor's save-by-rename: the watch must not see half a file.
    partial = path.with_suffix(".partial")
    partial.write_text(json.dumps({"mcpServers": servers}, indent=2))
    partial.replace(path)
    return path


def _catalogs(registry: Registry) -> set[str]:
    return {summary.name for summary in registry.catalogs()}


async def test_each_server_of_a_claude_desktop_config_becomes_a_catalog_and_a_broken_one_fails(
    served: Served, tmp_path: Path
) -> None:
    config = _write(tmp_path / "claude_desktop_config.json", {"time": TIME, "broken": BROKEN})
    result = await _capreg(
        "import-mcp", "--config", str(config), "--server", served.address, key=served.admin
    )
    assert result.returncode == 1, result.stderr
    assert result.stdout.startswith(f"time: 2 tools from {sys.executable} -m mcp_server_time")
    assert "2 added, 0 updated, 0 removed, 0 unchanged (revision 1, 2 embedded)" in result.stdout
    assert f"imported 1 of 2 servers from {config}; failed: broken" in result.stdout
    assert "FAILED broken: cannot start or reach the MCP server" in result.stderr
    assert _catalogs(served.registry) == {"time"}
    (clock,) = served.registry.schemas(["time/get_current_time"])
    assert "timezone" in clock.tool.input_schema["properties"]

    again = await _capreg(
        "import-mcp", "--config", str(config), "--only", "time", "--server", served.address,
        key=served.admin,
    )  # fmt: skip
    assert again.returncode == 0, again.stderr
    assert "0 added, 0 updated, 0 removed, 2 unchanged (revision 1, 0 embedded)" in again.stdout


async def test_only_picks_servers_and_a_renamed_key_is_announced(
    served: Served, tmp_path: Path
) -> None:
    config = _write(tmp_path / "mcp.json", {"time": TIME, "Paris Time": TIME, "broken": BROKEN})
    result = await _capreg(
        "import-mcp", "--config", str(config), "--only", "Paris Time", "--server", served.address,
        key=served.admin,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("Paris-Time: 2 tools from ")
    assert "note: server 'Paris Time' is catalog 'Paris-Time'" in result.stderr
    assert _catalogs(served.registry) == {"Paris-Time"}


async def test_an_unknown_only_name_lists_the_servers_and_starts_none(tmp_path: Path) -> None:
    config = _write(tmp_path / "mcp.json", {"time": TIME, "broken": BROKEN})
    result = await _capreg("import-mcp", "--config", str(config), "--only", "tiem")
    assert result.returncode == 1
    assert result.stderr == (
        f"capreg: {config}: no server named 'tiem' (its servers: time, broken)\n"
    )


async def test_config_options_refuse_to_mix_with_a_single_server(tmp_path: Path) -> None:
    mixed = await _capreg("import-mcp", "time", "--config", "mcp.json")
    assert mixed.returncode == 1
    assert "--config imports the servers its file names" in mixed.stderr
    stray = await _capreg("import-mcp", "time", "--watch", "--", "run")
    assert stray.stderr == "capreg: --watch go with --config FILE\n"


class Lines:
    """A process's stdout, line by line, read on a thread so each wait has a deadline."""

    def __init__(self, process: subprocess.Popen[str]) -> None:
        self._lines: queue.Queue[str | None] = queue.Queue()
        assert process.stdout is not None
        stdout = process.stdout

        def pump() -> None:
            for line in stdout:
                self._lines.put(line.rstrip("\n"))
            self._lines.put(None)

        threading.Thread(target=pump, daemon=True).start()

    def round(self) -> list[str]:
        """The lines of one watch round: up to its `watching ...` line."""
        deadline = time.monotonic() + WAIT
        lines: list[str] = []
        while True:
            line = self._lines.get(timeout=max(0.0, deadline - time.monotonic()))
            assert line is not None, f"the watch ended; it printed {lines}"
            if line.startswith("watching "):
                return lines
            lines.append(line)


def _ctrl_c_stops() -> None:
    # A shell without job control starts background jobs with SIGINT ignored, and the child
    # inherits that: the test's Ctrl-C must reach the watch however the suite was started.
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.fixture
def watching(served: Served, tmp_path: Path) -> Iterator[tuple[Path, subprocess.Popen[str]]]:
    config = _write(tmp_path / "claude_desktop_config.json", {"time": TIME})
    command = ["import-mcp", "--config", str(config), "--watch", "--watch-interval", "0.05"]
    process = subprocess.Popen(
        [*CAPREG, *command, "--server", served.address],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=_env(served.admin),
        preexec_fn=_ctrl_c_stops,
    )
    with process:  # closes the pipes however the test ended
        yield config, process
        if process.poll() is None:
            process.kill()
            process.wait(timeout=30)


async def test_watch_imports_what_the_file_adds_or_changes_and_keeps_what_it_drops(
    served: Served, watching: tuple[Path, subprocess.Popen[str]]
) -> None:
    config, process = watching
    lines = Lines(process)
    first = await asyncio.to_thread(lines.round)
    assert first[0].startswith("time: 2 tools from ")
    assert first[-1] == f"imported 1 of 1 servers from {config}"

    # A new server is imported; the unchanged one is not started again.
    _write(config, {"time": TIME, "utc": TIME})
    added = await asyncio.to_thread(lines.round)
    assert [line.split(":")[0] for line in added[:-1]] == ["utc"]
    assert added[-1] == f"imported 1 of 1 servers from {config} (1 unchanged, not restarted)"
    assert _catalogs(served.registry) == {"time", "utc"}

    # A changed entry is imported again; a dropped one keeps its catalog.
    berlin = {**TIME, "args": ["-m", "mcp_server_time", "--local-timezone", "Europe/Berlin"]}
    _write(config, {"utc": berlin})
    changed = await asyncio.to_thread(lines.round)
    assert changed[0].startswith("utc: 2 tools from ")
    assert "0 added" in changed[0]
    assert _catalogs(served.registry) == {"time", "utc"}

    process.send_signal(signal.SIGINT)
    _, stderr = await asyncio.to_thread(process.communicate, timeout=30)
    assert process.returncode == 130
    assert f"note: server 'time' left {config}; its catalog stays registered" in stderr


async def test_watch_reports_a_broken_edit_and_carries_on(
    served: Served, watching: tuple[Path, subprocess.Popen[str]]
) -> None:
    config, process = watching
    lines = Lines(process)
    await asyncio.to_thread(lines.round)
    config.write_text('{"mcpServers": {"time": ')  # an editor half-way through a save
    assert await asyncio.to_thread(lines.round) == []
    _write(config, {"time": TIME, "broken": BROKEN})
    fixed = await asyncio.to_thread(lines.round)
    assert fixed == [
        f"imported 0 of 1 servers from {config} (1 unchanged, not restarted); failed: broken"
    ]
    process.send_signal(signal.SIGINT)
    _, stderr = await asyncio.to_thread(process.communicate, timeout=30)
    assert f"capreg: {config}:1:" in stderr
    assert "what was imported stays registered" in stderr
    assert "FAILED broken: cannot start or reach the MCP server" in stderr
