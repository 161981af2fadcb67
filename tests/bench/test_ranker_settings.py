"""The settings bench.ranker_settings tries: each one fits, and each one changes the fit."""

from __future__ import annotations

import numpy as np

from bench.ranker_settings import SETTINGS
from indexer.evaluation.learning import Shortlisted, fit_ranker
from indexer.retrieval.features import FEATURES
from indexer.retrieval.learned import LearnedStage
from registry.training import ALL_COLUMNS


def _items(seed: int, queries: int = 200, per_query: int = 12) -> list[Shortlisted]:
    rng = np.random.default_rng(seed)
    items = []
    for q in range(queries):
        features = rng.normal(size=(per_query, len(FEATURES))).astype(np.float32)
        gold = int(np.argmax(features[:, 2] + 0.5 * features[:, 7] + rng.normal(size=per_query)))
        ids = tuple(f"c/t{q}_{i}" for i in range(per_query))
        items.append(
            Shortlisted(
                dataset=f"set{q % 2}",
                query_id=str(q),
                ids=ids,
                features=features,
                front=0,
                relevant=frozenset({ids[gold]}),
            )
        )
    return items


def test_the_first_setting_is_make_trains_and_every_other_changes_the_ranker() -> None:
    items, probe = _items(1), _items(2, queries=20)
    features = np.vstack([item.features for item in probe])
    default = LearnedStage(fit_ranker(items, ALL_COLUMNS), ALL_COLUMNS, None).score(features)
    scores = [setting.fit()(items)(features) for setting in SETTINGS]
    np.testing.assert_array_equal(scores[0], default)
    for setting, score in zip(SETTINGS[1:], scores[1:], strict=True):
        assert not np.array_equal(score, default), setting.label
    assert len({s.label for s in SETTINGS}) == len(SETTINGS)
