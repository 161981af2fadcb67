"""Intent splitting and blended ranking."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from indexer.retrieval.fusion import (
    IntentScores,
    Levers,
    rank_intents,
    split_intents,
)
from indexer.retrieval.scaling import RRF_K, Scaling, Spread, scale_exact, spread_from_moments


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
    return Spread.of(scores, Scaling.Z).scaled(scores, Scaling.Z)


def test_standardise_centres_and_scales() -> None:
    scores = _standardised(np.asarray([1.0, 2.0, 3.0], dtype=np.float32))
    assert abs(float(scores.mean())) < 1e-6
    assert abs(float(scores.std()) - 1.0) < 1e-5
    assert not _standardised(np.ones(3, dtype=np.float32)).any()


def test_each_intent_contributes_its_best_candidate() -> None:
    def intent(*values: float) -> IntentScores:
        return IntentScores(dense=np.asarray(values, dtype=np.float32), lexical=None, catalog=None)

    whole, first, second = intent(0.5, 0.4, 0.1), intent(0.9, 0.1, 0.1), intent(0.1, 0.1, 0.9)
    ranking = rank_intents([whole, first, second])
    assert ranking.intent_tops == (0, 2)
    np.testing.assert_allclose(ranking.scores, [0.9, 0.4, 0.9])


def test_ties_between_intents_tops_go_to_the_first_candidate() -> None:
    scores = IntentScores(
        dense=np.asarray([0.3, 0.3], dtype=np.float32), lexical=None, catalog=None
    )
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
    np.testing.assert_allclose(
        Spread.of(corpus, Scaling.Z).scaled(corpus[rows], Scaling.Z), expected, atol=1e-4
    )


def test_mean_max_puts_the_corpus_mean_at_zero_and_the_best_candidate_at_one() -> None:
    corpus = np.asarray([0.1, 0.2, 0.3, 0.6, 0.8], dtype=np.float32)
    spread = Spread.of(corpus, Scaling.MEAN_MAX)
    # The candidates hold the best eligible row (0.6 here: 0.8 is not eligible).
    scaled = spread.scaled(corpus[[1, 3]], Scaling.MEAN_MAX)
    np.testing.assert_allclose(scaled, [(0.2 - 0.4) / 0.2, 1.0], atol=1e-6)
    # min-max: the corpus' lowest at 0.
    low = Spread.of(corpus, Scaling.MIN_MAX).scaled(corpus[[1, 3]], Scaling.MIN_MAX)
    np.testing.assert_allclose(low, [0.2, 1.0], atol=1e-6)


def test_no_spread_no_evidence() -> None:
    """Equal scores, or a best no higher than the mean, scale to zeros, never to noise."""
    flat = np.full(4, 0.3, dtype=np.float32)
    assert not Spread.of(flat, Scaling.MEAN_MAX).scaled(flat, Scaling.MEAN_MAX).any()
    corpus = np.asarray([0.0, 0.0, 5.0], dtype=np.float32)
    assert not Spread.of(corpus, Scaling.MEAN_MAX).scaled(corpus[:2], Scaling.MEAN_MAX).any()
    # One catalog: its score and the mean of one score, computed two ways, differ by rounding.
    one = Spread(mean=0.123456789, std=0.0)
    assert not one.scaled(np.asarray([0.1234568], dtype=np.float32), Scaling.MEAN_MAX).any()


def test_a_spread_from_moments_equals_the_scored_one_and_is_zero_for_equal_rows() -> None:
    rng = np.random.default_rng(4)
    rows = rng.standard_normal((300, 16))
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    query = rows[0]
    spread = spread_from_moments(query, rows.mean(axis=0), rows.T @ rows / len(rows), Scaling.Z)
    scores = rows @ query
    assert spread.mean == pytest.approx(scores.mean(), abs=1e-9)
    assert spread.std == pytest.approx(scores.std(), rel=1e-6)
    # One row (one catalog): rounding must not leave a tiny spread that turns equal scores
    # into noise.
    for row in rows[:50]:
        single = row[None, :].astype(np.float32).astype(np.float64)
        flat = spread_from_moments(rows[7], single[0], single.T @ single, Scaling.Z)
        assert flat.std == 0.0
        score = np.asarray([float(single[0] @ rows[7])], dtype=np.float32)
        assert not flat.scaled(score, Scaling.Z).any()
        assert not flat.scaled(score, Scaling.MEAN_MAX).any()


def test_reciprocal_rank_fusion_scores_by_rank_among_every_row() -> None:
    everything = np.asarray([0.2, 0.9, 0.0, 0.5], dtype=np.float32)
    at = np.asarray([0, 1, 2], dtype=np.int64)
    fused = scale_exact(everything, at, Scaling.RRF)
    # Ranks 3 and 1 among all four rows; a zero score (no shared word) gives nothing.
    np.testing.assert_allclose(fused, [1 / (RRF_K + 3), 1 / (RRF_K + 1), 0.0], rtol=1e-6)


def test_exact_scaling_matches_the_spread_for_the_other_scalings() -> None:
    everything = np.asarray([0.1, 0.4, 0.3, 0.8], dtype=np.float32)
    at = np.asarray([1, 2], dtype=np.int64)
    for scaling in [Scaling.MEAN_MAX, Scaling.Z, Scaling.MIN_MAX]:
        np.testing.assert_allclose(
            scale_exact(everything, at, scaling),
            Spread.of(everything, scaling).scaled(everything[at], scaling),
        )


def test_a_spread_from_moments_skips_the_deviation_when_the_scaling_needs_none() -> None:
    rng = np.random.default_rng(5)
    rows = rng.standard_normal((50, 8))
    query = rows[0]
    spread = spread_from_moments(
        query, rows.mean(axis=0), rows.T @ rows / len(rows), Scaling.MEAN_MAX
    )
    assert spread.mean == pytest.approx((rows @ query).mean(), abs=1e-9)
    assert np.isnan(spread.std)


def test_an_unknown_scaling_is_refused() -> None:
    with pytest.raises(ValueError, match="'minmax'"):
        Levers(scaling="minmax")  # type: ignore[arg-type]  # the refusal under test
