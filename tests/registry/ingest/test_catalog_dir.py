"""A catalogs folder: a bad file is reported and skipped, whatever is wrong with it."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from indexer.formats import CatalogError
from indexer.formats.rules import MAX_CONTENT_BYTES
from registry.core import Registry
from registry.ingest.catalog_dir import read_catalog_file, sync_folder
from registry.ingest.watch import FolderWatcher
from tests.conftest import DATA


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
