"""A catalogs folder: a bad file is reported and skipped, whatever is wrong with it."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from indexer.documents import load_document
from indexer.formats import CatalogError
from indexer.formats.rules import MAX_CONTENT_BYTES
from registry.core import Registry
from registry.ingest import catalog_dir
from registry.ingest.catalog_dir import read_catalog_file, sync_folder
from registry.ingest.watch import FolderWatcher
from tests.conftest import DATA, ROOT


def test_a_non_utf8_file_is_skipped_and_the_rest_registered(
    empty_registry: Registry, tmp_path: Path
) -> None:
    shutil.copy(DATA / "mini.yaml", tmp_path / "mini.yaml")
    (tmp_path / "latin1.yaml").write_bytes("capreg: 1\nname: caf\xe9\n".encode("latin-1"))
    report = sync_folder(empty_registry, tmp_path)
    assert [r.catalog for r in report.registered] == ["mini"]
    assert "UTF-8" in report.failed[tmp_path / "latin1.yaml"]


def test_an_oversized_file_is_refused_before_it_is_read(tmp_path: Path) -> None:
    big = tmp_path / "big.yaml"
    with big.open("wb") as handle:  # sparse: no 32 MiB written to disk
        handle.truncate(MAX_CONTENT_BYTES + 1)
    with pytest.raises(CatalogError, match="larger than"):
        read_catalog_file(big)


def test_a_watched_non_utf8_file_is_reported_not_raised(
    empty_registry: Registry, tmp_path: Path
) -> None:
    (tmp_path / "bad.yaml").write_bytes(b"\xff\xfe\x00name: x")
    scan = FolderWatcher(empty_registry, tmp_path).scan_once()
    assert list(scan.failed) == [tmp_path / "bad.yaml"]


def test_a_second_sync_parses_no_unchanged_native_file_and_answers_as_the_first(
    empty_registry: Registry, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shutil.copy(DATA / "mini.yaml", tmp_path / "mini.yaml")  # native: names itself
    shutil.copy(ROOT / "catalogs" / "devops.json", tmp_path / "devops.json")  # MCP: the stem
    (tmp_path / ".json").write_text("{}")  # no stem: not a catalog file
    (tmp_path / "notes.txt").write_text("not a catalog")
    first = sync_folder(empty_registry, tmp_path)
    assert [r.catalog for r in first.registered] == ["devops", "mini"]
    parsed: list[str] = []

    def counted(text: str) -> object:
        parsed.append(text[:20])
        return load_document(text)

    monkeypatch.setattr(catalog_dir, "load_document", counted)
    again = sync_folder(empty_registry, tmp_path)
    assert len(parsed) == 1  # the MCP file's name is its stem: read to tell its format
    assert [(r.catalog, r.revision, r.unchanged, r.added) for r in again.registered] == [
        (r.catalog, r.revision, r.unchanged + r.added, 0) for r in first.registered
    ]
