"""`capreg datasets fetch` against a real HTTP server on loopback that serves the shared copies
in raw.githubusercontent.com's layout, with the failures a real download can have."""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, cast

import pytest

from capreg.cli import main
from capreg.cli.datasets import folders_named
from indexer.evaluation.datasets import datasets_dir, fetched_datasets_dir, load_dataset
from indexer.evaluation.fetch import (
    FetchFailed,
    FetchOutcome,
    fetch_dataset,
    file_url,
    folder_verifies,
)
from indexer.evaluation.upstream import NOTICE, UPSTREAM
from tests.conftest import DATASETS

# The fake upstream serves the shared copies of the labeled sets.
pytestmark = pytest.mark.datasets

LIVE = UPSTREAM["livemcpbench"]


class UpstreamServer(ThreadingHTTPServer):
    """Serves every manifest file from DATASETS at `/{owner}/{repo}/{commit}/{path}`; a test
    marks paths to serve altered, short, or too long, or drops a path to get a 404."""

    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _UpstreamHandler)
        self.files = {
            self.path_of(dataset.folder, file.name): DATASETS / dataset.folder / file.name
            for dataset in UPSTREAM.values()
            for file in dataset.files
        }
        self.altered: set[str] = set()
        self.truncated: set[str] = set()
        self.padded: set[str] = set()
        self.requests: list[str] = []

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server_port}"

    def url_of(self, folder: str, name: str) -> str:
        dataset = UPSTREAM[folder]
        file = next(f for f in dataset.files if f.name == name)
        return file_url(self.base_url, dataset, file)

    def path_of(self, folder: str, name: str) -> str:
        return self.url_of(folder, name).removeprefix(self.base_url)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Quiet: a client that stops reading a body on purpose breaks the pipe."""


class _UpstreamHandler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        server = cast(UpstreamServer, self.server)
        server.requests.append(self.path)
        local = server.files.get(self.path)
        if local is None:
            self.send_error(404)
            return
        body = local.read_bytes()
        if self.path in server.altered:
            body = bytes([body[0] ^ 1]) + body[1:]
        if self.path in server.padded:
            body += b"\n"
        announced = len(body)
        if self.path in server.truncated:
            # Content-Length still announces the whole file; the connection then closes.
            body = body[: len(body) // 2]
        self.send_response(200)
        self.send_header("Content-Length", str(announced))
        self.end_headers()
        self.wfile.write(body)
        self.close_connection = True

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the tests assert on `requests` instead."""


@pytest.fixture
def upstream() -> Iterator[UpstreamServer]:
    server = UpstreamServer()
    # A short poll keeps shutdown() (which waits for the next poll) from costing half a second.
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True
    )
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """Where `capreg datasets fetch --cache tmp_path/cache` puts folders."""
    return fetched_datasets_dir(tmp_path / "cache")


@pytest.mark.parametrize("folder", sorted(UPSTREAM))
def test_the_manifest_pins_exactly_the_files_of_the_shared_copies(folder: str) -> None:
    dataset = UPSTREAM[folder]
    local = DATASETS / folder
    assert folder_verifies(local, dataset)
    assert {p.name for p in local.iterdir()} == {f.name for f in dataset.files} | {NOTICE}
    notice = (local / NOTICE).read_text(encoding="utf-8")
    assert f"https://github.com/{dataset.repository}\n" in notice
    assert f"Commit copied: {dataset.commit} " in notice
    for file in dataset.files:
        if file.path != "LICENSE":
            assert f"| {file.name} | {file.path} |" in notice


def test_a_fetched_folder_is_verified_noticed_and_loaded_from_the_cache(
    upstream: UpstreamServer, root: Path
) -> None:
    result = fetch_dataset(LIVE, root, base_url=upstream.base_url)
    assert (result.outcome, result.path) == (FetchOutcome.FETCHED, root / "livemcpbench")
    assert result.downloaded == LIVE.size
    assert folder_verifies(result.path, LIVE)
    assert [p.name for p in root.iterdir()] == ["livemcpbench"]  # no staging folder left
    notice = (result.path / NOTICE).read_text(encoding="utf-8")
    assert LIVE.commit in notice
    assert "Apache License 2.0" in notice
    for file in LIVE.files:
        assert f"| {file.name} | {file.path} | {file.sha256} |" in notice
    assert (result.path / "LICENSE.apache-2.0.txt").read_bytes() == (
        DATASETS / "livemcpbench" / "LICENSE.apache-2.0.txt"
    ).read_bytes()
    cache = root.parent
    assert datasets_dir(None, cache=cache) == root
    assert load_dataset("livemcpbench", datasets_dir(None, cache=cache)) == load_dataset(
        "livemcpbench", DATASETS
    )


def test_the_explicit_folder_comes_before_the_cache_and_the_cache_before_shared(
    tmp_path: Path,
) -> None:
    cache = tmp_path / "cache"
    shared = datasets_dir(None)
    assert datasets_dir(None, cache=cache) == shared  # nothing fetched yet
    fetched_datasets_dir(cache).mkdir(parents=True)
    assert datasets_dir(None, cache=cache) == cache / "datasets"
    assert datasets_dir(tmp_path / "mine", cache=cache) == tmp_path / "mine"


def test_a_wrong_checksum_names_the_file_and_leaves_no_folder(
    upstream: UpstreamServer, root: Path
) -> None:
    upstream.altered.add(upstream.path_of("livemcpbench", "all_annotations.json"))
    expected = "0e8db4c5abf4eb0b666f4cc4c1b1bd5cd6b8741ade7abb0fbc51526ae8b058b8"
    with pytest.raises(FetchFailed) as failure:
        fetch_dataset(LIVE, root, base_url=upstream.base_url)
    message = str(failure.value)
    assert message.startswith("dataset 'livemcpbench': all_annotations.json (")
    assert f"sha256 expected {expected}, got " in message
    assert list(root.iterdir()) == []


def test_a_truncated_download_fails_and_leaves_no_folder(
    upstream: UpstreamServer, root: Path
) -> None:
    upstream.truncated.add(upstream.path_of("livemcpbench", "tools.json"))
    with pytest.raises(FetchFailed, match=r"tools\.json .*truncated: expected 1133936 bytes, got"):
        fetch_dataset(LIVE, root, base_url=upstream.base_url)
    assert list(root.iterdir()) == []


def test_a_body_longer_than_the_pin_is_refused(upstream: UpstreamServer, root: Path) -> None:
    upstream.padded.add(upstream.path_of("livemcpbench", "all_annotations.json"))
    with pytest.raises(
        FetchFailed, match=r"all_annotations\.json .*expected 82022 bytes, got more"
    ):
        fetch_dataset(LIVE, root, base_url=upstream.base_url)
    assert list(root.iterdir()) == []


def test_a_missing_upstream_file_fails_naming_its_url(upstream: UpstreamServer, root: Path) -> None:
    del upstream.files[upstream.path_of("livemcpbench", "LICENSE.apache-2.0.txt")]
    url = upstream.url_of("livemcpbench", "LICENSE.apache-2.0.txt")
    assert url.endswith(f"/icip-cas/LiveMCPBench/{LIVE.commit}/LICENSE")
    with pytest.raises(FetchFailed, match=re.escape(f"({url}): HTTP 404")):
        fetch_dataset(LIVE, root, base_url=upstream.base_url)
    assert list(root.iterdir()) == []


def test_a_folder_already_present_is_not_downloaded_again(
    upstream: UpstreamServer, root: Path
) -> None:
    fetch_dataset(LIVE, root, base_url=upstream.base_url)
    upstream.requests.clear()
    again = fetch_dataset(LIVE, root, base_url=upstream.base_url)
    assert (again.outcome, again.downloaded) == (FetchOutcome.PRESENT, 0)
    assert upstream.requests == []


def test_a_present_copy_that_no_longer_verifies_is_replaced_whole(
    upstream: UpstreamServer, root: Path
) -> None:
    fetch_dataset(LIVE, root, base_url=upstream.base_url)
    with (root / "livemcpbench" / "tools.json").open("ab") as handle:
        handle.write(b" ")
    (root / "livemcpbench" / "stray.txt").write_text("left by hand")
    again = fetch_dataset(LIVE, root, base_url=upstream.base_url)
    assert again.outcome == FetchOutcome.FETCHED
    assert folder_verifies(again.path, LIVE)
    assert not (again.path / "stray.txt").exists()
    assert [p.name for p in root.iterdir()] == ["livemcpbench"]


def test_a_failed_refetch_keeps_the_copy_that_was_there(
    upstream: UpstreamServer, root: Path
) -> None:
    fetch_dataset(LIVE, root, base_url=upstream.base_url)
    (root / "livemcpbench" / NOTICE).write_text("edited")
    (root / "livemcpbench" / "all_annotations.json").write_bytes(b"[]")
    upstream.truncated.add(upstream.path_of("livemcpbench", "tools.json"))
    with pytest.raises(FetchFailed):
        fetch_dataset(LIVE, root, base_url=upstream.base_url)
    assert (root / "livemcpbench" / NOTICE).read_text() == "edited"
    assert [p.name for p in root.iterdir()] == ["livemcpbench"]


def test_only_http_and_https_base_urls_are_fetched(root: Path) -> None:
    with pytest.raises(FetchFailed, match="only http and https"):
        fetch_dataset(LIVE, root, base_url=f"file://{DATASETS}")


def test_dataset_names_map_to_their_folders_once_each() -> None:
    assert folders_named(["seal-tools:dev", "seal-tools", "metatool-multi", "metatool"]) == [
        "seal-tools",
        "metatool",
    ]
    assert folders_named([]) == list(UPSTREAM)


def test_capreg_datasets_fetch_and_list_end_to_end(
    upstream: UpstreamServer,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    cache = tmp_path / "cache"
    fetch = ["datasets", "fetch", "--base-url", upstream.base_url, "--cache", str(cache)]
    assert main([*fetch, "livemcpbench"]) == 0
    first = capsys.readouterr().out
    assert first.startswith(
        f"livemcpbench: fetched 3 files, {LIVE.size:,} bytes from "
        f"icip-cas/LiveMCPBench@a928e57 into {cache / 'datasets' / 'livemcpbench'}"
    )
    assert main([*fetch, "livemcpbench"]) == 0
    assert capsys.readouterr().out.startswith("livemcpbench: already present in ")
    # `list` resolves as `capreg eval` does; the explicit folder would win, so it is unset.
    monkeypatch.delenv("CAPREG_DATASETS", raising=False)
    assert main(["datasets", "list", "--cache", str(cache)]) == 0
    listed = capsys.readouterr().out.splitlines()
    fetched = re.escape(str(cache / "datasets" / "livemcpbench"))
    assert re.fullmatch(rf"livemcpbench\s+found\s+{fetched}", listed[0])
    assert re.fullmatch(r"seal-tools\s+missing\s+.*seal-tools", listed[1])


def test_capreg_datasets_fetch_failures_are_one_line(
    upstream: UpstreamServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fetch = ["datasets", "fetch", "--base-url", upstream.base_url, "--cache", str(tmp_path)]
    assert main([*fetch, "toolbench"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "unknown dataset 'toolbench'; valid names: " in err
    assert "seal-tools:dev" in err
    upstream.altered.add(upstream.path_of("livemcpbench", "tools.json"))
    assert main([*fetch, "livemcpbench"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert err.startswith("capreg: dataset 'livemcpbench': tools.json (")
    assert not (tmp_path / "datasets" / "livemcpbench").exists()
