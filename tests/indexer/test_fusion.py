"""Intent splitting and blended ranking."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from indexer.fusion import (
    IntentScores,
    Spread,
    rank_intents,
    split_intents,
    spread_from_moments,
)


def test_a_chained_request_splits_into_its_clauses() -> None:
    query = (
        "Please retrieve the attendance record of employee number 36. Then, retrieve the "
        "rehabilitation plan for patient Ej4bR6LkH. Finally, track the progress of the sessions."
    )
    clauses = split_intents(query)
    assert len(clauses) == 3
    assert clauses[0].startswith("Please retrieve the attendance record")
    assert clauses[2].startswith("track the progress")


def test_a_single_request_has_no_clauses() -> None:
    assert split_intents("open a support ticket for a customer") == []
    assert split_intents("") == []


@given(st.text(max_size=500))
def test_clauses_are_few_and_never_trivial(query: str) -> None:
    clauses = split_intents(query)
    assert len(clauses) <= 8
    assert all(len(c.split()) >= 3 for c in clauses)


def _standardised(scores: np.ndarray) -> np.ndarray:
    return Spread.of(scores).z(scores)


def test_standardise_centres_and_scales() -> None:
    scores = _standardised(np.asarray([1.0, 2.0, 3.0], dtype=np.float32))
    assert abs(float(scores.mean())) < 1e-6
    assert abs(float(scores.std()) - 1.0) < 1e-5
    assert not _standardised(np.ones(3, dtype=np.float32)).any()


def test_each_intent_contributes_its_best_candidate() -> None:
    def intent(*values: float) -> IntentScores:
        return IntentScores(np.asarray(values, dtype=np.float32), None, None)

    whole, first, second = intent(0.5, 0.4, 0.1), intent(0.9, 0.1, 0.1), intent(0.1, 0.1, 0.9)
    ranking = rank_intents([whole, first, second])
    assert ranking.intent_tops == (0, 2)
    np.testing.assert_allclose(ranking.scores, [0.9, 0.4, 0.9])


def test_ties_between_intents_tops_go_to_the_first_candidate() -> None:
    scores = IntentScores(np.asarray([0.3, 0.3], dtype=np.float32), None, None)
    assert rank_intents([scores]).intent_tops == (0,)


@given(st.lists(st.floats(-5, 5, width=32), min_size=2, max_size=50), st.data())
def test_a_subset_standardised_against_the_corpus_matches_the_corpus_scores(
    values: list[float], data: st.DataObject
) -> None:
    corpus = np.asarray(values, dtype=np.float32)
    rows = np.asarray(
        sorted(data.draw(st.sets(st.integers(0, len(values) - 1), min_size=1))), dtype=np.int64
    )
    # The scaled corpus, computed directly (mean and standard deviation of every score).
    expected = (
        (corpus[rows] - corpus.mean()) / corpus.std() if corpus.std() > 0 else corpus[rows] * 0
    )
    np.testing.assert_allclose(Spread.of(corpus).z(corpus[rows]), expected, atol=1e-4)


def test_a_spread_from_moments_equals_the_scored_one_and_is_zero_for_equal_rows() -> None:
    rng = np.random.default_rng(4)
    rows = rng.standard_normal((300, 16))
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    query = rows[0]
    spread = spread_from_moments(query, rows.mean(axis=0), rows.T @ rows / len(rows))
    scores = rows @ query
    assert spread.mean == pytest.approx(scores.mean(), abs=1e-9)
    assert spread.std == pytest.approx(scores.std(), rel=1e-6)
    # One row (one catalog): rounding must not leave a tiny spread that turns equal scores
    # into noise.
    for row in rows[:50]:
        single = row[None, :].astype(np.float32).astype(np.float64)
        flat = spread_from_moments(rows[7], single[0], single.T @ single)
        assert flat.std == 0.0
        assert not flat.z(np.asarray([float(single[0] @ rows[7])], dtype=np.float32)).any()
