"""Intent splitting and blended ranking."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from indexer.fusion import rank_intents, split_intents, standardise


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


def test_standardise_centres_and_scales() -> None:
    scores = standardise(np.asarray([1.0, 2.0, 3.0], dtype=np.float32))
    assert abs(float(scores.mean())) < 1e-6
    assert abs(float(scores.std()) - 1.0) < 1e-5
    assert not standardise(np.ones(3, dtype=np.float32)).any()


def test_each_intent_contributes_its_best_row_and_ineligible_rows_never_rank() -> None:
    whole = np.asarray([0.5, 0.4, 0.1, 0.9], dtype=np.float32)
    first = np.asarray([0.9, 0.1, 0.1, 0.95], dtype=np.float32)
    second = np.asarray([0.1, 0.1, 0.9, 0.2], dtype=np.float32)
    eligible = np.asarray([True, True, True, False])
    ranking = rank_intents([whole, first, second], [None, None, None], [None, None, None], eligible)
    assert ranking.intent_tops == (0, 2)
    assert ranking.scores[3] == -np.inf
