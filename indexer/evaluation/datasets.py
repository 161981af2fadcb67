"""The labeled public datasets by name: where they are read from and which loader reads each."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from indexer.evaluation.labeled_sets import CatalogSource, Dataset, LabeledQuery
from indexer.evaluation.loaders import (
    load_goal_requests,
    load_livemcpbench,
    load_mcp_agentstyle,
    load_metatool,
    load_metatool_multi,
    load_seal_tools,
    load_stabletoolbench,
)

# The records a loaded dataset is made of, importable with it.
__all__ = [
    "DATASET_NAMES",
    "TUNING_SETS",
    "CatalogSource",
    "Dataset",
    "LabeledQuery",
    "dataset_folder",
    "datasets_dir",
    "fetched_datasets_dir",
    "load_dataset",
]


def datasets_dir(configured: Path | str | None = None, *, cache: Path | None = None) -> Path:
    """Where the labeled sets are read from: `configured` (the CLI passes CAPREG_DATASETS or
    --datasets), else `<cache>/datasets` when `capreg datasets fetch` has made it (the CLI
    passes the cache folder), else ../shared/datasets seen from the working directory (the
    layout CI clones into)."""
    if configured:
        return Path(configured)
    if cache is not None and (fetched := fetched_datasets_dir(cache)).is_dir():
        return fetched
    return Path.cwd() / ".." / "shared" / "datasets"


def fetched_datasets_dir(cache: Path) -> Path:
    """The folder under the cache that `capreg datasets fetch` fills."""
    return cache / "datasets"


_LOADERS: dict[str, tuple[str, Callable[[Path], Dataset]]] = {
    "livemcpbench": ("livemcpbench", load_livemcpbench),
    "livemcpbench:steps": ("livemcpbench", lambda folder: load_livemcpbench(folder, steps=True)),
    "seal-tools:dev": ("seal-tools", lambda folder: load_seal_tools(folder, "dev")),
    "seal-tools:test_in_domain": (
        "seal-tools",
        lambda folder: load_seal_tools(folder, "test_in_domain"),
    ),
    "seal-tools:test_out_domain": (
        "seal-tools",
        lambda folder: load_seal_tools(folder, "test_out_domain"),
    ),
    # The held-out part is what every report and the quality gate use; "tuning" is what
    # `make train` fits on; "all" is the whole set, as published figures count it.
    "stabletoolbench": (
        "stabletoolbench",
        lambda folder: load_stabletoolbench(folder, "held-out"),
    ),
    "stabletoolbench:tuning": (
        "stabletoolbench",
        lambda folder: load_stabletoolbench(folder, "tuning"),
    ),
    "stabletoolbench:all": ("stabletoolbench", load_stabletoolbench),
    "metatool": ("metatool", lambda folder: load_metatool(folder, "held-out")),
    "metatool:tuning": ("metatool", lambda folder: load_metatool(folder, "tuning")),
    "metatool:all": ("metatool", load_metatool),
    "metatool-multi": ("metatool", load_metatool_multi),
    # Part B, held out; part A is the tuning split.
    "mcp-agentstyle": (
        "mcp-agentstyle",
        lambda folder: load_mcp_agentstyle(folder, "held-out"),
    ),
    "mcp-agentstyle:tuning": (
        "mcp-agentstyle",
        lambda folder: load_mcp_agentstyle(folder, "tuning"),
    ),
    # Written for this project over the bundled catalogs and part A's servers; tuning only.
    "goal-requests": ("mcp-agentstyle", load_goal_requests),
}

DATASET_NAMES: tuple[str, ...] = tuple(_LOADERS)
# What `make train` fits the learned ranking stage and the weak-match threshold on: three
# splits of generated sets, and real MCP servers with requests that state a goal (part A).
TUNING_SETS: tuple[str, ...] = (
    "seal-tools:dev",
    "metatool:tuning",
    "stabletoolbench:tuning",
    "mcp-agentstyle:tuning",
)


def dataset_folder(name: str) -> str:
    """The folder a dataset name (see DATASET_NAMES) is loaded from."""
    if name not in _LOADERS:
        raise ValueError(f"unknown dataset {name!r}; valid names: {', '.join(DATASET_NAMES)}")
    return _LOADERS[name][0]


def load_dataset(name: str, root: Path | str | None = None) -> Dataset:
    """Load one dataset by name (see DATASET_NAMES) from `root` (default: datasets_dir())."""
    if name not in _LOADERS:
        raise ValueError(f"unknown dataset {name!r}; valid names: {', '.join(DATASET_NAMES)}")
    subfolder, loader = _LOADERS[name]
    base = datasets_dir(root)
    fix = f"run `capreg datasets fetch {name}` or set CAPREG_DATASETS"
    if not base.is_dir():
        raise FileNotFoundError(f"datasets folder not found: {base} ({fix})")
    folder = base / subfolder
    if not folder.is_dir():
        raise FileNotFoundError(f"dataset {name!r} not found: no folder {folder} ({fix})")
    return loader(folder)
