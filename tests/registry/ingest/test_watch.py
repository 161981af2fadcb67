"""`capreg serve --watch`: files added, changed or removed while serving; only changes embed."""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import grpc
import pytest
import yaml

from registry.core import Registry
from registry.ingest.watch import FolderWatcher
from registry.proto import registry_pb2 as pb
from registry.proto import registry_pb2_grpc as pb_grpc
from tests.conftest import DATA, CountingEmbedder
from tests.support.server_process import free_port, wait_serving

MINI = (DATA / "mini.yaml").read_text()
CLOCK = {
    "tools": [{"name": "now", "description": "Current time.", "inputSchema": {"type": "object"}}]
}


def _mini(**tool_changes: object) -> str:
    document = yaml.safe_load(MINI)
    document["tools"][0].update(tool_changes)
    return yaml.safe_dump(document)


def _names(registry: Registry) -> set[str]:
    return {c.name for c in registry.catalogs()}


def test_added_changed_and_removed_files_register_update_and_delete(
    empty_registry: Registry, embedder: CountingEmbedder, tmp_path: Path
) -> None:
    watcher = FolderWatcher(empty_registry, tmp_path)
    (tmp_path / "mini.yaml").write_text(MINI)
    (tmp_path / "clock.json").write_text(json.dumps(CLOCK))
    (tmp_path / "notes.txt").write_text("not a catalog")
    added = watcher.scan_once()
    assert {o.catalog for o in added.registered.values()} == {"mini", "clock"}
    assert embedder.texts == 4
    assert watcher.catalogs == {tmp_path / "mini.yaml": "mini", tmp_path / "clock.json": "clock"}

    assert watcher.scan_once().registered == {}  # nothing changed: not even read again

    (tmp_path / "mini.yaml").write_text(_mini(description="Seven-day forecast for any city."))
    changed = watcher.scan_once()
    (outcome,) = changed.registered.values()
    assert (outcome.updated, outcome.unchanged, outcome.embedded) == (1, 2, 1)
    assert embedder.texts == 5  # only the edited tool

    (tmp_path / "clock.json").unlink()
    removed = watcher.scan_once()
    assert removed.deleted == {tmp_path / "clock.json": "clock"}
    assert _names(empty_registry) == {"mini"}
    assert embedder.texts == 5


def test_a_touched_but_unchanged_file_embeds_nothing(
    empty_registry: Registry, embedder: CountingEmbedder, tmp_path: Path
) -> None:
    watcher = FolderWatcher(empty_registry, tmp_path)
    path = tmp_path / "mini.yaml"
    path.write_text(MINI)
    first = watcher.scan_once().registered[path]
    path.write_text(MINI + "\n# a comment\n")
    again = watcher.scan_once().registered[path]
    assert (again.unchanged, again.embedded, again.revision) == (3, 0, first.revision)
    assert embedder.texts == 3


def test_a_broken_file_keeps_the_served_version_until_it_is_fixed(
    empty_registry: Registry, embedder: CountingEmbedder, tmp_path: Path
) -> None:
    watcher = FolderWatcher(empty_registry, tmp_path)
    path = tmp_path / "mini.yaml"
    path.write_text(MINI)
    watcher.scan_once()
    path.write_text(_mini(input_schema={"type": "array"}))
    broken = watcher.scan_once()
    assert "input_schema" in broken.failed[path]
    assert empty_registry.catalogs()[0].revision == 1
    assert watcher.scan_once().failed == {}  # not retried until the file changes again
    path.write_text(_mini(description="Forecast for the next seven days in one city."))
    fixed = watcher.scan_once()
    assert fixed.registered[path].revision == 2
    assert embedder.texts == 4


def test_a_file_that_renames_its_catalog_replaces_the_old_one(
    empty_registry: Registry, tmp_path: Path
) -> None:
    watcher = FolderWatcher(empty_registry, tmp_path)
    path = tmp_path / "weather.yaml"
    path.write_text(MINI)
    watcher.scan_once()
    document = yaml.safe_load(MINI)
    document["name"] = "weather"
    path.write_text(yaml.safe_dump(document))
    report = watcher.scan_once()
    assert report.deleted == {path: "mini"}
    assert _names(empty_registry) == {"weather"}


def test_a_catalog_deleted_through_the_api_is_not_an_error_when_its_file_goes(
    empty_registry: Registry, tmp_path: Path
) -> None:
    watcher = FolderWatcher(empty_registry, tmp_path)
    (tmp_path / "mini.yaml").write_text(MINI)
    watcher.scan_once()
    empty_registry.delete("mini")
    (tmp_path / "mini.yaml").unlink()
    assert watcher.scan_once().deleted == {tmp_path / "mini.yaml": "mini"}


async def _until(condition: Callable[[], bool], seconds: float = 60.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "condition not met in time"
        await asyncio.sleep(0.05)


async def test_the_watch_loop_follows_the_folder_until_stopped(
    empty_registry: Registry, tmp_path: Path
) -> None:
    watcher = FolderWatcher(empty_registry, tmp_path)
    stop = asyncio.Event()
    task = asyncio.create_task(watcher.run(stop, interval=0.05))
    (tmp_path / "mini.yaml").write_text(MINI)
    await _until(lambda: _names(empty_registry) == {"mini"})
    (tmp_path / "mini.yaml").unlink()
    await _until(lambda: _names(empty_registry) == set())
    stop.set()
    await asyncio.wait_for(task, timeout=10)


@pytest.mark.model  # `capreg serve` loads it
def test_serve_watch_registers_and_deletes_files_without_a_restart(tmp_path: Path) -> None:
    folder = tmp_path / "catalogs"
    folder.mkdir()
    (folder / "mini.yaml").write_text(MINI)
    address = f"127.0.0.1:{free_port()}"
    command = [
        *(sys.executable, "-m", "capreg.cli", "serve", "--db", str(tmp_path / "r.db")),
        *("--listen", address, "--catalogs", str(folder), "--watch", "--watch-interval", "0.1"),
    ]
    log = tmp_path / "serve.log"
    with log.open("w") as sink:
        process = subprocess.Popen(command, stdout=sink, stderr=sink, text=True)
    try:
        wait_serving(address, process, seconds=120, log=log)
        with grpc.insecure_channel(address) as channel:
            stub = pb_grpc.CapabilityRegistryStub(channel)

            def names() -> set[str]:
                reply = stub.ListCatalogs(pb.ListCatalogsRequest(), timeout=10)
                return {c.name for c in reply.catalogs}

            assert names() == {"mini"}
            (folder / "clock.json").write_text(json.dumps(CLOCK))
            _wait(lambda: names() == {"mini", "clock"})
            (folder / "mini.yaml").unlink()
            _wait(lambda: names() == {"clock"})
    finally:
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=30) == 0, log.read_text()
    assert "watching for changes" in log.read_text()


def _wait(condition: Callable[[], bool], seconds: float = 60.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.1)
