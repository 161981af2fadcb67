"""The evaluation plots over HTTP: PNGs of the results folder only, newest first, each served
to a valid key, and nothing outside the folder, however the name is spelled."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from capreg.cli.errors import CommandError
from capreg.cli.serve import results_dir
from registry.auth.keys import add_key
from registry.core import Registry
from registry.http.results import list_plots, plot_path
from tests.registry.http.conftest import Served, serve_both
from tests.registry.http.test_errors import refusal

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 16


def write_plot(folder: Path, name: str, modified: int, content: bytes = PNG) -> Path:
    path = folder / name
    path.write_bytes(content)
    os.utime(path, (modified, modified))
    return path


@pytest.fixture
def results(tmp_path: Path) -> Path:
    """Three plots (b newest, then a and c written at the same time), and what must never be
    served: a non-PNG, a hidden file, a nested plot and a link to a PNG outside."""
    folder = tmp_path / "results"
    (folder / "nested").mkdir(parents=True)
    write_plot(folder, "a.png", 1_700_000_000)
    write_plot(folder, "c.png", 1_700_000_000)
    write_plot(folder, "b.png", 1_800_000_000)
    write_plot(folder, "report.md", 1_900_000_000)
    write_plot(folder, ".hidden.png", 1_900_000_000)
    write_plot(folder / "nested", "deep.png", 1_900_000_000)
    outside = write_plot(tmp_path, "secret.png", 1_900_000_000, b"secret")
    (folder / "link.png").symlink_to(outside)
    return folder


def test_plots_are_listed_newest_first_and_ties_by_name(results: Path) -> None:
    assert list_plots(results) == ["b.png", "a.png", "c.png"]


def test_no_folder_or_a_missing_one_lists_no_plot(tmp_path: Path) -> None:
    assert list_plots(None) == []
    assert list_plots(tmp_path / "absent") == []


@pytest.mark.parametrize(
    "name",
    ["link.png", ".hidden.png", "report.md", "nested/deep.png", "../secret.png", "absent.png"],
)
def test_a_name_outside_the_listing_has_no_file(results: Path, name: str) -> None:
    assert plot_path(results, name) is None


@pytest.fixture
async def plots_api(
    sample_registry: Registry, tmp_path: Path, results: Path
) -> AsyncIterator[Served]:
    keys_file = tmp_path / "keys.yaml"
    reader = add_key(keys_file, "reader", ["hr:read"])
    async with serve_both(sample_registry, keys_file, results=results) as served:
        served.keys["reader"] = reader
        yield served


async def test_any_valid_key_lists_and_reads_the_plots(plots_api: Served) -> None:
    reader = plots_api.auth("reader")
    listed = await plots_api.http.get("/v1/results", headers=reader)
    plot = await plots_api.http.get("/v1/results/b.png", headers=reader)
    assert listed.json() == ["b.png", "a.png", "c.png"]
    assert plot.status_code == 200
    assert plot.headers["content-type"] == "image/png"
    assert plot.content == PNG
    assert "no-store" in plot.headers["cache-control"]


async def test_plots_need_a_valid_key(plots_api: Served) -> None:
    forged = {"authorization": "Bearer capreg_00000000_forged"}
    assert refusal(await plots_api.http.get("/v1/results"), 401)["code"] == "UNAUTHENTICATED"
    refused = await plots_api.http.get("/v1/results/b.png", headers=forged)
    assert refusal(refused, 401)["code"] == "UNAUTHENTICATED"


@pytest.mark.parametrize(
    "path",
    [
        "/v1/results/link.png",
        "/v1/results/.hidden.png",
        "/v1/results/nested%2Fdeep.png",
        "/v1/results/..%2Fsecret.png",
        "/v1/results/%2E%2E%2Fsecret.png",
        "/v1/results/absent.png",
    ],
)
async def test_nothing_outside_the_listing_is_served(plots_api: Served, path: str) -> None:
    response = await plots_api.http.get(path, headers=plots_api.auth("reader"))
    assert response.status_code == 404
    assert b"secret" not in response.content


async def test_a_server_without_a_results_folder_lists_no_plot(
    sample_registry: Registry, tmp_path: Path
) -> None:
    keys_file = tmp_path / "keys.yaml"
    reader = {"authorization": f"Bearer {add_key(keys_file, 'reader', ['hr:read'])}"}
    async with serve_both(sample_registry, keys_file) as served:
        listed = await served.http.get("/v1/results", headers=reader)
        missing = await served.http.get("/v1/results/b.png", headers=reader)
    assert listed.json() == []
    assert refusal(missing, 404)["code"] == "NOT_FOUND"


def test_serve_shows_docs_results_by_default_and_refuses_a_missing_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert results_dir(None) is None
    (tmp_path / "docs" / "results").mkdir(parents=True)
    assert results_dir(None) == tmp_path.resolve() / "docs" / "results"
    assert results_dir(str(tmp_path)) == tmp_path.resolve()
    with pytest.raises(CommandError, match="--results-dir"):
        results_dir(str(tmp_path / "absent"))
