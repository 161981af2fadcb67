"""Downloads dataset folders at their pinned commits, verified before they are put in place."""

from __future__ import annotations

import hashlib
import http.client
import shutil
import tempfile
import urllib.error
import urllib.request
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from urllib.parse import quote, urlsplit

from indexer.errors import CapregError
from indexer.evaluation.upstream import NOTICE, UpstreamDataset, UpstreamFile, notice_text

DEFAULT_BASE_URL = "https://raw.githubusercontent.com"
# Seconds one connect or read may wait; a stalled server fails the fetch instead of hanging.
DEFAULT_TIMEOUT = 60.0
_CHUNK = 1 << 16


class FetchFailed(CapregError):
    """A dataset folder could not be fetched; the message names the dataset, the file, and
    what was expected against what came."""


class FetchOutcome(StrEnum):
    FETCHED = "fetched"
    PRESENT = "already present"


@dataclass(frozen=True, kw_only=True)
class FetchResult:
    """What fetching one folder did, and where the folder is."""

    folder: str
    path: Path
    outcome: FetchOutcome
    downloaded: int  # bytes


def file_url(base_url: str, dataset: UpstreamDataset, file: UpstreamFile) -> str:
    """`{base_url}/{owner}/{repo}/{commit}/{path}`: raw.githubusercontent.com's layout."""
    return f"{base_url.rstrip('/')}/{dataset.repository}/{dataset.commit}/{quote(file.path)}"


def _digest(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def folder_verifies(folder: Path, dataset: UpstreamDataset) -> bool:
    """Whether `folder` holds every file of `dataset` with the pinned size and SHA-256."""
    for file in dataset.files:
        path = folder / file.name
        # The size check first: a wrong file is usually told apart without hashing it.
        if not path.is_file() or path.stat().st_size != file.size or _digest(path) != file.sha256:
            return False
    return True


def fetch_dataset(
    dataset: UpstreamDataset,
    root: Path,
    *,
    base_url: str = DEFAULT_BASE_URL,
    timeout: float = DEFAULT_TIMEOUT,
) -> FetchResult:
    """Puts `dataset` in `root/<folder>`, unless a copy there already verifies.

    Files stream into a temporary folder beside the destination and the folder is renamed
    into place only once every file verified, so a reader sees the old copy or the complete
    new one, and a failure leaves nothing behind.
    """
    if urlsplit(base_url).scheme not in ("http", "https"):
        raise FetchFailed(f"base URL {base_url!r}: only http and https are fetched")
    destination = root / dataset.folder
    if destination.is_dir() and folder_verifies(destination, dataset):
        return FetchResult(
            folder=dataset.folder, path=destination, outcome=FetchOutcome.PRESENT, downloaded=0
        )
    root.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{dataset.folder}.partial-", dir=root))
    try:
        for file in dataset.files:
            _download(dataset, file, file_url(base_url, dataset, file), staging, timeout)
        (staging / NOTICE).write_text(notice_text(dataset), encoding="utf-8")
        _replace(staging, destination)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return FetchResult(
        folder=dataset.folder,
        path=destination,
        outcome=FetchOutcome.FETCHED,
        downloaded=dataset.size,
    )


def _download(
    dataset: UpstreamDataset, file: UpstreamFile, url: str, folder: Path, timeout: float
) -> None:
    def failed(problem: str) -> FetchFailed:
        return FetchFailed(f"dataset {dataset.folder!r}: {file.name} ({url}): {problem}")

    digest = hashlib.sha256()
    received = 0
    # The scheme was checked in fetch_dataset: only http and https reach here.
    request = urllib.request.Request(url, headers={"User-Agent": "capreg"})  # noqa: S310
    try:
        with (
            urllib.request.urlopen(request, timeout=timeout) as response,  # noqa: S310
            (folder / file.name).open("wb") as out,
        ):
            while chunk := response.read(_CHUNK):
                received += len(chunk)
                # Stop as soon as the body outgrows the pin: a wrong or hostile server
                # cannot fill the disk.
                if received > file.size:
                    raise failed(f"expected {file.size} bytes, got more")
                digest.update(chunk)
                out.write(chunk)
    except urllib.error.HTTPError as exc:
        raise failed(f"HTTP {exc.code} {exc.reason}") from exc
    except http.client.IncompleteRead as exc:
        # A chunked body that ended early (a plain body that does just reads as ending).
        raise failed(f"truncated: expected {file.size} bytes, got {received}") from exc
    except urllib.error.URLError as exc:
        raise failed(f"cannot download: {exc.reason}") from exc
    except (http.client.HTTPException, OSError) as exc:
        raise failed(f"download broke off after {received} bytes: {exc}") from exc
    if received < file.size:
        raise failed(f"truncated: expected {file.size} bytes, got {received}")
    if (got := digest.hexdigest()) != file.sha256:
        raise failed(f"sha256 expected {file.sha256}, got {got}")


def _replace(staging: Path, destination: Path) -> None:
    """Renames `staging` to `destination`, moving an old copy aside first (a directory
    cannot be renamed over a non-empty one)."""
    retired = None
    try:
        if destination.exists():
            retired = Path(
                tempfile.mkdtemp(prefix=f".{destination.name}.old-", dir=destination.parent)
            )
            destination.rename(retired / destination.name)
        try:
            staging.rename(destination)
        except OSError:
            if retired is not None:  # put the old copy back rather than lose it
                (retired / destination.name).rename(destination)
            raise
    except OSError as exc:
        raise FetchFailed(f"cannot move the fetched files into {destination}: {exc}") from exc
    finally:
        if retired is not None:
            shutil.rmtree(retired, ignore_errors=True)
