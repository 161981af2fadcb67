"""Keeps a folder's catalog files registered while serving (`capreg serve --watch`).

Polling, not inotify: it works the same on every platform and on network mounts, and one
`stat` per file per interval is nothing beside embedding. A file counts as changed when its
modification time, size or inode changes (an editor's save-by-rename changes the inode).
Registration itself is incremental, so re-registering a file embeds only the tools whose
text changed; a touched but unchanged file costs a hash comparison.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass, field
from pathlib import Path

from indexer.formats import CatalogError
from registry.core import RegisterOutcome, Registry
from registry.errors import CatalogNotFound
from registry.ingest.catalog_dir import SyncProgress, catalog_files, read_catalog_file, request_name

logger = logging.getLogger(__name__)

DEFAULT_INTERVAL = 1.0


@dataclass(kw_only=True, frozen=True)
class FileStamp:
    mtime_ns: int
    size: int
    inode: int


@dataclass(kw_only=True)
class ScanReport:
    """What one scan did: files registered, catalogs deleted, files that failed to register."""

    registered: dict[Path, RegisterOutcome] = field(default_factory=dict)
    deleted: dict[Path, str] = field(default_factory=dict)
    failed: dict[Path, str] = field(default_factory=dict)

    @property
    def embedded(self) -> int:
        return sum(outcome.embedded for outcome in self.registered.values())


class FolderWatcher:
    """Registers, updates and deletes catalogs as the files of one folder change."""

    def __init__(self, registry: Registry, folder: Path) -> None:
        self._registry = registry
        self._folder = folder
        self._seen: dict[Path, FileStamp] = {}
        # Which catalog each file registered: deleting a file must delete *its* catalog,
        # and a native file names its catalog inside, so the file name alone cannot tell.
        self._owners: dict[Path, str] = {}

    @property
    def catalogs(self) -> dict[Path, str]:
        return dict(self._owners)

    def scan_once(self, progress: SyncProgress | None = None) -> ScanReport:
        """One bounded pass over the folder: changed files, then vanished ones.

        Registering before deleting means a file renamed in one step keeps its catalog
        served throughout.
        """
        report = ScanReport()
        current = self._stamps()
        if current is None:
            return report
        changed = [path for path, stamp in current.items() if self._seen.get(path) != stamp]
        if progress is not None:
            progress.total = len(changed)
        # One snapshot for the whole pass, however many files changed.
        with self._registry.bulk():
            for path in changed:
                self._register(path, report)
                self._seen[path] = current[path]
                if progress is not None:
                    progress.done += 1
                    progress.failed = len(report.failed)
            for path in sorted(set(self._seen) - set(current)):
                del self._seen[path]
                name = self._owners.pop(path, None)
                if name is not None:
                    self._drop(name, path, report)
        return report

    async def run(self, stop: asyncio.Event, interval: float = DEFAULT_INTERVAL) -> None:
        """Scans every `interval` seconds until `stop` is set; a failed scan is retried."""
        while not stop.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), interval)
            if stop.is_set():
                return
            try:
                await asyncio.to_thread(self.scan_once)
            except Exception:  # one bad scan must not end watching; the next one retries
                logger.exception("scanning %s failed", self._folder)

    def _stamps(self) -> dict[Path, FileStamp] | None:
        try:
            files = catalog_files(self._folder)
        except OSError as exc:
            # A vanished or unmounted folder is not a reason to delete every catalog.
            logger.warning("cannot list %s (%s); keeping what is registered", self._folder, exc)
            return None
        stamps = {}
        for path in files:
            try:
                stat = path.stat()
            except FileNotFoundError:
                continue  # removed between listing and stat: the next scan sees it gone
            stamps[path] = FileStamp(
                mtime_ns=stat.st_mtime_ns, size=stat.st_size, inode=stat.st_ino
            )
        return stamps

    def _register(self, path: Path, report: ScanReport) -> None:
        try:
            content = read_catalog_file(path)
            outcome = self._registry.register(content, name=request_name(path, content))
        except CatalogError as exc:
            # The registry keeps the file's previous version; a fixed file is retried when
            # its stamp changes.
            report.failed[path] = str(exc)
            logger.error("not registered: %s: %s", path, exc)
            return
        previous = self._owners.get(path)
        self._owners[path] = outcome.catalog
        report.registered[path] = outcome
        logger.info(
            "%s -> catalog %s: +%d ~%d -%d =%d (%d embedded)",
            path.name,
            outcome.catalog,
            outcome.added,
            outcome.updated,
            outcome.removed,
            outcome.unchanged,
            outcome.embedded,
        )
        if previous is not None and previous != outcome.catalog:
            self._drop(previous, path, report)  # the file now names another catalog

    def _drop(self, name: str, path: Path, report: ScanReport) -> None:
        others = [p for p, owned in self._owners.items() if owned == name]
        if others:
            # Another file declares the same catalog: the next scan registers it again.
            for other in others:
                self._seen.pop(other, None)
            return
        with contextlib.suppress(CatalogNotFound):  # already deleted through the API
            self._registry.delete(name)
        report.deleted[path] = name
        logger.info("%s removed -> catalog %s deleted", path.name, name)
