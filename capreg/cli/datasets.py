"""`capreg datasets fetch|list`: the labeled sets, downloaded at their pinned commits."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from capreg.cli.errors import CommandError
from capreg.cli.serve import model_cache
from indexer.embedding.model_files import default_cache_dir
from indexer.evaluation.datasets import (
    DATASET_NAMES,
    dataset_folder,
    datasets_dir,
    fetched_datasets_dir,
)
from indexer.evaluation.fetch import DEFAULT_BASE_URL, DEFAULT_TIMEOUT, FetchFailed, fetch_dataset
from indexer.evaluation.upstream import UPSTREAM


def cache_root(option: str | None = None) -> Path:
    """--cache, else CAPREG_CACHE, else the model cache's own default: one cache folder holds
    the exported model and the fetched datasets, and one function decides its default."""
    if option:
        return Path(option)
    return model_cache() or default_cache_dir()


def folders_named(names: list[str]) -> list[str]:
    """The dataset folders `names` ask for, in order, each once; none: every folder. A name
    is a folder or a dataset name (`seal-tools:dev`, `metatool-multi`)."""
    if not names:
        return list(UPSTREAM)
    folders: list[str] = []
    for name in names:
        if name in UPSTREAM:
            folder = name
        elif name in DATASET_NAMES:
            folder = dataset_folder(name)
        else:
            valid = sorted(set(UPSTREAM) | set(DATASET_NAMES))
            raise CommandError(f"unknown dataset {name!r}; valid names: {', '.join(valid)}")
        if folder not in folders:
            folders.append(folder)
    return folders


def cmd_fetch(args: argparse.Namespace) -> int:
    folders = folders_named(args.names)
    root = fetched_datasets_dir(cache_root(args.cache))
    for folder in folders:
        dataset = UPSTREAM[folder]
        try:
            result = fetch_dataset(dataset, root, base_url=args.base_url, timeout=args.timeout)
        except FetchFailed as exc:
            raise CommandError(str(exc)) from exc
        pin = f"{dataset.repository}@{dataset.commit[:7]}"
        if result.downloaded:
            size = f"{len(dataset.files)} files, {result.downloaded:,} bytes"
            print(f"{folder}: {result.outcome} {size} from {pin} into {result.path}")
        else:
            print(f"{folder}: {result.outcome} in {result.path} ({pin})")
    configured = os.environ.get("CAPREG_DATASETS")
    if configured:
        print(
            f"note: CAPREG_DATASETS is set, so `capreg eval` reads {configured}, not {root}",
            file=sys.stderr,
        )
    return 0


def cmd_list(args: argparse.Namespace) -> int:
    base = datasets_dir(args.datasets, cache=cache_root(args.cache))
    width = max(map(len, UPSTREAM))
    for folder in UPSTREAM:
        path = base / folder
        found = "found  " if path.is_dir() else "missing"
        print(f"{folder:<{width}}  {found}  {path}")
    return 0


def add_parser(commands: Any) -> None:
    parser = commands.add_parser("datasets", help="fetch or list the labeled evaluation sets")
    actions = parser.add_subparsers(dest="action", required=True)
    cache_help = "cache folder; datasets go in its datasets/ (default: CAPREG_CACHE, else "
    cache_help += "~/.cache/capreg)"
    fetch = actions.add_parser(
        "fetch", help="download dataset folders at their pinned commits, verified by SHA-256"
    )
    fetch.add_argument(
        "names", nargs="*", metavar="NAME", help="folder or dataset name (default: all)"
    )
    fetch.add_argument(
        "--base-url", default=DEFAULT_BASE_URL, help="serves /OWNER/REPO/COMMIT/PATH"
    )
    fetch.add_argument("--cache", help=cache_help)
    fetch.add_argument(
        "--timeout", type=float, default=DEFAULT_TIMEOUT, help="seconds per connect or read"
    )
    fetch.set_defaults(handler=cmd_fetch)
    listing = actions.add_parser("list", help="where each dataset folder is found")
    listing.add_argument("--cache", help=cache_help)
    listing.add_argument(
        "--datasets", default=os.environ.get("CAPREG_DATASETS"), help="folder (overrides)"
    )
    listing.set_defaults(handler=cmd_list)
