"""Registers the catalog files of a folder (at start-up, and as they change)."""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from indexer.documents import DocumentError, load_document
from indexer.formats import CatalogError, detect_format
from indexer.formats.rules import MAX_CONTENT_BYTES

if TYPE_CHECKING:  # annotations only: reading a file needs no registry (capreg register)
    from registry.core import RegisterOutcome, Registry

logger = logging.getLogger(__name__)

CATALOG_SUFFIXES = (".yaml", ".yml", ".json")


def catalog_files(folder: Path) -> list[Path]:
    """The folder's catalog files, by name (one directory read: the entries' types come with
    it, and names sort as strings; a folder of 121,557 files took seconds as `Path`s)."""
    with os.scandir(folder) as entries:
        names = sorted(
            entry.name
            for entry in entries
            if os.path.splitext(entry.name)[1] in CATALOG_SUFFIXES and entry.is_file()
        )
    return [folder / name for name in names]


def request_name(path: Path, content: str, fmt: str = "auto") -> str:
    """The catalog name to send with a file: none for native files (they name themselves),
    the file's stem for every other format (MCP, OpenAI, Anthropic, OpenAPI), which carry
    no catalog name of their own."""
    if fmt not in ("", "auto"):
        return "" if fmt == "native" else path.stem
    try:
        document = load_document(content)
        return "" if detect_format(document) == "native" else path.stem
    except (DocumentError, CatalogError):
        # Let registration report the problem with its full context.
        return path.stem


def read_catalog_file(path: Path) -> str:
    """A catalog file's text; its size is checked before it is read, and text that is not
    UTF-8 is a CatalogError naming the file, like any other bad catalog."""
    try:
        size = path.stat().st_size
        if size > MAX_CONTENT_BYTES:
            raise CatalogError(path.stem, [f"{path.name}: larger than {MAX_CONTENT_BYTES} bytes"])
        return path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        raise CatalogError(
            path.stem, [f"{path.name}: not UTF-8 text (byte {exc.start}: {exc.reason})"]
        ) from exc
    except OSError as exc:
        raise CatalogError(path.stem, [f"{path.name}: cannot be read ({exc.strerror})"]) from exc


@dataclass(frozen=True)
class SyncReport:
    registered: list[RegisterOutcome]
    failed: dict[Path, str]


@dataclass
class SyncProgress:
    """How far a folder sync has got (the readiness message reads it while the sync runs)."""

    total: int = 0
    done: int = 0
    failed: int = 0

    def describe(self) -> str:
        failed = f", {self.failed} failed" if self.failed else ""
        return f"{self.done} of {self.total} catalog files registered{failed}"


def sync_folder(
    registry: Registry, folder: Path, progress: SyncProgress | None = None
) -> SyncReport:
    """Registers every catalog file in `folder`; unchanged files cost no embedding.

    A bad file is reported and skipped so one broken catalog cannot keep the rest down. Each
    file commits on its own, and the snapshot is rebuilt once, at the end.
    """
    progress = progress or SyncProgress()
    registered = []
    failed: dict[Path, str] = {}
    files = catalog_files(folder)
    progress.total = len(files)
    with registry.bulk():
        for path in files:
            try:
                content = read_catalog_file(path)
                # A native catalog registered from these bytes is found without parsing them:
                # only a native catalog registers without a name (every other format takes
                # the file's stem), so its request name is "" (a restart over 121,557
                # unchanged files parsed every one of them to learn that).
                outcome = registry.unchanged(content) or registry.register(
                    content, name=request_name(path, content)
                )
                registered.append(outcome)
            except CatalogError as exc:
                failed[path] = str(exc)
                progress.failed += 1
                logger.error("not registered: %s: %s", path, exc)
            progress.done += 1
    return SyncReport(registered, failed)
