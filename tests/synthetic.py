"""Shortlists made up for fitting rankers in tests: the gold candidate of each request is the
one with the highest value in two feature columns together, a rule a ranker can learn."""

from __future__ import annotations

import numpy as np

from capreg.training.learning import Shortlisted
from indexer.retrieval.features import FEATURES


def synthetic_shortlists(seed: int, queries: int = 60, per_query: int = 12) -> list[Shortlisted]:
    rng = np.random.default_rng(seed)
    items = []
    for q in range(queries):
        features = rng.normal(size=(per_query, len(FEATURES))).astype(np.float32)
        gold = int(np.argmax(features[:, 2] + 0.5 * features[:, 7]))
        ids = tuple(f"c/t{q}_{i}" for i in range(per_query))
        items.append(
            Shortlisted(
                dataset="synthetic",
                query_id=str(q),
                ids=ids,
                features=features,
                front=0,
                relevant=frozenset({ids[gold]}),
            )
        )
    return items
