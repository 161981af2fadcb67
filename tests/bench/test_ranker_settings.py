"""The settings bench.ranker_settings tries: each one fits, and each one changes the fit."""

from __future__ import annotations

import numpy as np

from bench.ranker_settings import SETTINGS
from indexer.evaluation.learning import fit_ranker
from indexer.retrieval.learned import LearnedStage
from registry.training import ALL_COLUMNS
from tests.synthetic import synthetic_shortlists


def test_the_first_setting_is_make_trains_and_every_other_changes_the_ranker() -> None:
    items, probe = synthetic_shortlists(1, queries=200), synthetic_shortlists(2, queries=20)
    features = np.vstack([item.features for item in probe])
    default = LearnedStage(fit_ranker(items, ALL_COLUMNS), ALL_COLUMNS, None).score(features)
    scores = [setting.fit()(items)(features) for setting in SETTINGS]
    np.testing.assert_array_equal(scores[0], default)
    for setting, score in zip(SETTINGS[1:], scores[1:], strict=True):
        assert not np.array_equal(score, default), setting.label
    assert len({s.label for s in SETTINGS}) == len(SETTINGS)
