"""Retrieval metrics: hand-checked values and invariants over generated rankings."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from indexer.evaluation.metrics import (
    KS,
    JudgedQuery,
    evaluate,
    f1_at_k,
    ndcg_at_k,
    precision_at_k,
    recall_at_k,
    reciprocal_rank,
    score_query,
    score_steps,
    set_precision_recall_f1,
)

EXPECTED_KEYS = [
    "precision@1",
    "recall@1",
    "f1@1",
    "precision@3",
    "recall@3",
    "f1@3",
    "precision@5",
    "recall@5",
    "f1@5",
    "precision@10",
    "recall@10",
    "f1@10",
    "ndcg@10",
    "mrr",
    "precision@returned",
    "recall@returned",
    "f1@returned",
]

IDS = [f"cat/t{i}" for i in range(12)]
ranked_lists = st.lists(st.sampled_from(IDS), unique=True, max_size=len(IDS))
gold_sets = st.frozensets(st.sampled_from(IDS), min_size=1)


def test_evaluate_reports_exactly_the_documented_keys_in_order() -> None:
    scores = evaluate([(["a/x"], frozenset({"a/x"}), ["a/x"])])
    assert list(scores) == EXPECTED_KEYS
    assert all(type(value) is float for value in scores.values())


def test_precision_at_k_counts_missing_slots_as_misses() -> None:
    assert precision_at_k(["a/x"], frozenset({"a/x"}), 3) == pytest.approx(1 / 3)


def test_recall_at_k_is_not_capped_at_k() -> None:
    gold = frozenset({"a/1", "a/2", "a/3", "a/4"})
    assert recall_at_k(["a/1", "z/9"], gold, 1) == 0.25


def test_f1_at_k_is_the_harmonic_mean_and_zero_without_hits() -> None:
    gold = frozenset({"a/1", "a/2"})
    assert f1_at_k(["a/1", "z/9", "z/8"], gold, 3) == pytest.approx(
        2 * (1 / 3) * 0.5 / (1 / 3 + 0.5)
    )
    assert f1_at_k(["z/9"], gold, 1) == 0.0


def test_ndcg_matches_a_hand_computed_value() -> None:
    gold = frozenset({"a/1", "a/2", "a/3"})
    ranked = ["z/0", "a/1", "z/2", "a/2"]
    dcg = 1 / math.log2(3) + 1 / math.log2(5)
    ideal = 1 + 1 / math.log2(3) + 1 / math.log2(4)
    assert ndcg_at_k(ranked, gold, 10) == pytest.approx(dcg / ideal)


def test_ndcg_ideal_uses_at_most_k_gold_items() -> None:
    gold = frozenset({f"a/{i}" for i in range(5)})
    assert ndcg_at_k(["a/0", "a/1"], gold, 2) == 1.0


def test_reciprocal_rank_is_one_over_first_gold_rank_or_zero() -> None:
    gold = frozenset({"a/1"})
    assert reciprocal_rank(["z/0", "z/1", "a/1"], gold) == pytest.approx(1 / 3)
    assert reciprocal_rank(["z/0"], gold) == 0.0


def test_an_empty_answer_has_zero_precision_recall_and_f1() -> None:
    assert set_precision_recall_f1([], frozenset({"a/1"})) == (0.0, 0.0, 0.0)


def test_returned_metrics_judge_the_returned_list_not_the_ranking() -> None:
    judged = JudgedQuery(["a/1", "a/2", "z/3"], frozenset({"a/1", "a/2"}), ["a/1"])
    scores = score_query(judged)
    assert scores["precision@returned"] == 1.0
    assert scores["recall@returned"] == 0.5
    assert scores["recall@3"] == 1.0


def test_every_query_weighs_the_same_in_the_average() -> None:
    many_gold = frozenset({f"a/{i}" for i in range(10)})
    judged = [
        (["a/0"], frozenset({"a/0"}), ["a/0"]),
        (["z/0"], many_gold, ["z/0"]),
    ]
    assert evaluate(judged)["recall@1"] == 0.5


def test_a_query_with_empty_gold_is_rejected() -> None:
    with pytest.raises(ValueError, match="empty gold"):
        evaluate([(["a/1"], frozenset(), ["a/1"])])


def test_repeated_ids_in_a_ranking_are_rejected() -> None:
    with pytest.raises(ValueError, match="repeated"):
        score_query((["a/1", "a/1"], frozenset({"a/1"}), []))


def test_evaluating_no_queries_is_rejected() -> None:
    with pytest.raises(ValueError, match="at least one"):
        evaluate([])


def test_k_below_one_is_rejected() -> None:
    with pytest.raises(ValueError, match="k must be"):
        precision_at_k(["a/1"], frozenset({"a/1"}), 0)


@given(returned=ranked_lists, gold=gold_sets)
def test_f1_at_returned_is_one_iff_the_returned_set_equals_the_gold_set(
    returned: list[str], gold: frozenset[str]
) -> None:
    _, _, f1 = set_precision_recall_f1(returned, gold)
    assert (f1 == 1.0) == (frozenset(returned) == gold)


@given(ranked=ranked_lists, gold=gold_sets)
def test_recall_never_drops_as_k_grows(ranked: list[str], gold: frozenset[str]) -> None:
    recalls = [recall_at_k(ranked, gold, k) for k in range(1, len(IDS) + 2)]
    assert recalls == sorted(recalls)


@given(ranked=ranked_lists, gold=gold_sets, returned=ranked_lists)
def test_every_metric_lies_between_zero_and_one(
    ranked: list[str], gold: frozenset[str], returned: list[str]
) -> None:
    for value in evaluate([(ranked, gold, returned)]).values():
        assert 0.0 <= value <= 1.0


@given(ranked=ranked_lists, gold=gold_sets, k=st.sampled_from(KS))
def test_precision_and_recall_count_the_same_hits(
    ranked: list[str], gold: frozenset[str], k: int
) -> None:
    hits = len(set(ranked[:k]) & gold)
    assert precision_at_k(ranked, gold, k) * k == pytest.approx(hits)
    assert recall_at_k(ranked, gold, k) * len(gold) == pytest.approx(hits)


@given(ranked=ranked_lists, gold=gold_sets)
def test_ndcg_is_one_iff_the_top_is_filled_with_gold(
    ranked: list[str], gold: frozenset[str]
) -> None:
    top = min(10, len(gold))
    filled = len(ranked) >= top and all(item in gold for item in ranked[:top])
    assert (ndcg_at_k(ranked, gold, 10) == pytest.approx(1.0)) == filled


@given(judged=st.lists(st.tuples(ranked_lists, gold_sets, ranked_lists), min_size=1, max_size=5))
def test_the_average_is_the_mean_of_per_query_scores(
    judged: list[tuple[list[str], frozenset[str], list[str]]],
) -> None:
    per_query = [score_query(item) for item in judged]
    averaged = evaluate(judged)
    for key in EXPECTED_KEYS:
        assert averaged[key] == pytest.approx(sum(s[key] for s in per_query) / len(judged))


def test_steps_are_judged_by_the_union_of_each_steps_top_k() -> None:
    gold = frozenset({"a/x", "b/y", "c/z"})
    steps = [["a/x", "q/1", "q/2"], ["q/3", "b/y", "a/x"], ["q/4", "q/5", "q/6"]]
    returned = [["a/x"], ["q/3"], []]
    scores = score_steps(steps, gold, returned, ks=(1, 2))
    # k=1: {a/x, q/3, q/4}: one of three gold, one of three held.
    assert scores["recall@1"] == pytest.approx(1 / 3)
    assert scores["precision@1"] == pytest.approx(1 / 3)
    assert scores["tools@1"] == 3
    # k=2: {a/x, q/1, q/3, b/y, q/4, q/5}: two of three gold, a/x counted once.
    assert scores["recall@2"] == pytest.approx(2 / 3)
    assert scores["precision@2"] == pytest.approx(2 / 6)
    assert scores["recall@returned"] == pytest.approx(1 / 3)
    assert scores["precision@returned"] == pytest.approx(1 / 2)
