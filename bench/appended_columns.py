"""Candidate features a bench appends to the training shortlists, judged across the tuning splits.

A feature is tried before it is served: the bench computes its columns for every shortlist
`make train` makes, appends them to the served features, and fits the ranker on two tuning
sets with and without them, scored on the third (as `bench.cross_set_ablation` judges the
served groups). A candidate would be adopted if it raised P@1 and R@5 on every left-out set
under the machine's BLAS kernels and under `OPENBLAS_CORETYPE=Prescott` (decision 0060).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace

import numpy as np
from numpy.typing import NDArray

from bench.tables import left_out_cells, left_out_table, ranker_fit
from indexer.evaluation.datasets import Dataset
from indexer.evaluation.learning import Shortlisted
from indexer.formats import parse_catalog
from indexer.model import Tool
from indexer.retrieval.features import FEATURE_DECIMALS, FEATURE_NAMES
from registry.training import ALL_COLUMNS

AS_TRAINED = "as `make train`"


def catalog_tools(dataset: Dataset) -> list[tuple[Tool, str]]:
    """Every tool of the dataset's catalogs, with its catalog's title (as the registry
    indexes it)."""
    found = []
    for source in dataset.catalogs:
        catalog = parse_catalog(source.content, name=source.name, fmt=source.format)
        found += [(tool, catalog.title) for tool in catalog.tools]
    return found


def appended(
    items: Sequence[Shortlisted], columns: Callable[[Shortlisted], NDArray[np.float32]]
) -> list[Shortlisted]:
    """`items` with `columns(item)` (one row per shortlisted id) after the served features,
    rounded as the stage rounds its own."""
    return [
        replace(
            item,
            features=np.hstack([item.features, np.round(columns(item), FEATURE_DECIMALS)]),
        )
        for item in items
    ]


def judged(
    extended: Mapping[str, Sequence[Shortlisted]], names: Sequence[str], label: str
) -> dict[str, list[str]]:
    """P@1 / R@5 per left-out tuning set, of the ranker fitted as `make train` fits it and
    of the one that also reads the appended columns `names` (rows `AS_TRAINED` and `label`)."""
    feature_names = (*FEATURE_NAMES, *names)
    extra = [len(FEATURE_NAMES) + i for i in range(len(names))]
    variants = {AS_TRAINED: list(ALL_COLUMNS), label: [*ALL_COLUMNS, *extra]}
    return left_out_cells(
        extended,
        {variant: ranker_fit(columns, feature_names) for variant, columns in variants.items()},
    )


def judged_table(cells: Mapping[str, list[str]]) -> list[str]:
    """The report's table of `judged` cells, with what each column holds."""
    return [
        "Each column: the ranker fitted on the other two tuning sets (answerable requests, all "
        "settings as `make train`), scored on this one's shortlists; P@1 / R@5 in percent.",
        "",
        *left_out_table("variant", dict(cells)),
    ]
