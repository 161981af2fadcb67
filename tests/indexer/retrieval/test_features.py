"""The learned stage's per-candidate features, on hand-made first-stage scores."""

from __future__ import annotations

import numpy as np

from indexer.retrieval.features import (
    FEATURE_NAMES,
    ShortlistFacts,
    StageScores,
    candidate_features,
)
from indexer.retrieval.fusion import IntentScores, rank_intents


def _features(per_intent: list[list[float]], shortlist: list[int]) -> dict[str, list[float]]:
    blend = np.asarray(per_intent, dtype=np.float32)
    n = blend.shape[1]
    ranking = rank_intents([IntentScores(dense=row, lexical=None, catalog=None) for row in blend])
    scores = StageScores(
        blend=ranking.scores,
        clause_blend=ranking.clauses,
        clause_tops=ranking.clause_tops,
        dense=blend,
        dense_scaled=blend,
        lexical_scaled=None,
        catalog_scaled=None,
        catalog_codes=np.zeros(n, dtype=np.int32),
    )
    rows = np.asarray(shortlist, dtype=np.int64)
    facts = ShortlistFacts(
        idf_matched=np.zeros(len(rows), dtype=np.float32),
        idf_unknown=0.0,
        named_tool=np.zeros(len(rows), dtype=np.bool_),
        named_catalog=np.zeros(len(rows), dtype=np.bool_),
        name_words=[frozenset()] * len(rows),
        inputs=[frozenset()] * len(rows),
        outputs=[frozenset()] * len(rows),
    )
    table = candidate_features(
        "check the ticket then email the customer", len(blend) - 1, scores, rows, facts
    )
    return {name: table[:, i].tolist() for i, name in enumerate(FEATURE_NAMES)}


def test_each_clause_best_gets_its_share_and_no_gap_whatever_the_whole_request_says() -> None:
    # Rows: the whole request, then two clauses; candidate 2 wins the second clause only,
    # and the whole request ranks it last.
    features = _features(
        [[0.9, 0.5, 0.2], [0.8, 0.6, 0.1], [0.1, 0.3, 0.7]],
        shortlist=[0, 1, 2],
    )
    assert features["intent_top_share"] == [0.5, 0.0, 0.5]
    np.testing.assert_allclose(features["intent_gap_to_best"], [0.0, -0.2, 0.0], atol=1e-4)
    # The blend's own gap still reads the best over every intent.
    np.testing.assert_allclose(features["blend_gap_to_best"], [0.0, -0.3, -0.2], atol=1e-4)


def test_a_request_of_one_clause_is_its_own_intent() -> None:
    features = _features([[0.4, 0.9, 0.6]], shortlist=[1, 2, 0])
    assert features["intent_top_share"] == [1.0, 0.0, 0.0]
    np.testing.assert_allclose(features["intent_gap_to_best"], [0.0, -0.3, -0.5], atol=1e-4)


def test_a_clause_the_candidate_loses_does_not_pull_it_down() -> None:
    # Candidate 1 loses the first clause to candidate 0 (not shortlisted) and wins the second.
    features = _features([[0.2, 0.5], [0.9, 0.4], [0.1, 0.6]], shortlist=[1])
    assert features["intent_top_share"] == [0.5]
    np.testing.assert_allclose(features["intent_gap_to_best"], [0.0], atol=1e-4)
