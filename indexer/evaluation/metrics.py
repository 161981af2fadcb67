"""Retrieval-quality metrics for labeled queries: per-query scores, then their macro average."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import NamedTuple

#: Cut-offs reported by `evaluate`; nDCG is reported at the largest.
KS: tuple[int, ...] = (1, 3, 5, 10)
NDCG_K = 10


class JudgedQuery(NamedTuple):
    """One query's outcome: the full ranking, the gold ids, and what the service returned.

    `returned_ids` is separate from `ranked_ids` because a service may cut its answer by a score
    threshold; the "@returned" metrics judge that cut, the "@k" metrics judge the ranking.
    """

    ranked_ids: Sequence[str]
    gold: frozenset[str]
    returned_ids: Sequence[str]


#: What the scoring functions accept: a JudgedQuery or a plain tuple in the same order.
Judged = tuple[Sequence[str], frozenset[str], Sequence[str]]


def _hits(ids: Sequence[str], gold: frozenset[str]) -> int:
    return sum(1 for item in ids if item in gold)


def _f1(precision: float, recall: float) -> float:
    if precision + recall == 0.0:
        return 0.0
    return 2.0 * precision * recall / (precision + recall)


def precision_at_k(ranked_ids: Sequence[str], gold: frozenset[str], k: int) -> float:
    """Gold ids in the top k, over k: a ranking shorter than k counts its empty slots as misses."""
    _check_k(k)
    return _hits(ranked_ids[:k], gold) / k


def recall_at_k(ranked_ids: Sequence[str], gold: frozenset[str], k: int) -> float:
    """Gold ids in the top k, over all gold ids (not capped at k, so it can stay below 1)."""
    _check_k(k)
    _check_gold(gold)
    return _hits(ranked_ids[:k], gold) / len(gold)


def f1_at_k(ranked_ids: Sequence[str], gold: frozenset[str], k: int) -> float:
    """Harmonic mean of precision@k and recall@k (0 when both are 0)."""
    return _f1(precision_at_k(ranked_ids, gold, k), recall_at_k(ranked_ids, gold, k))


def ndcg_at_k(ranked_ids: Sequence[str], gold: frozenset[str], k: int) -> float:
    """nDCG with binary gains, a log2(rank + 1) discount and an ideal of min(k, |gold|) hits."""
    _check_k(k)
    _check_gold(gold)
    dcg = sum(
        1.0 / math.log2(rank + 1)
        for rank, item in enumerate(ranked_ids[:k], start=1)
        if item in gold
    )
    ideal = sum(1.0 / math.log2(rank + 1) for rank in range(1, min(k, len(gold)) + 1))
    return dcg / ideal


def reciprocal_rank(ranked_ids: Sequence[str], gold: frozenset[str]) -> float:
    """1 / rank of the first gold id in the whole ranking; 0 when none is ranked."""
    _check_gold(gold)
    for rank, item in enumerate(ranked_ids, start=1):
        if item in gold:
            return 1.0 / rank
    return 0.0


def set_precision_recall_f1(
    returned_ids: Sequence[str], gold: frozenset[str]
) -> tuple[float, float, float]:
    """P, R and F1 of a returned list taken as a set; an empty answer has precision 0."""
    _check_gold(gold)
    hits = _hits(returned_ids, gold)
    precision = hits / len(returned_ids) if returned_ids else 0.0
    recall = hits / len(gold)
    return precision, recall, _f1(precision, recall)


def score_query(judged: Judged, ks: Sequence[int] = KS) -> dict[str, float]:
    """All metrics for one query, keyed as in `evaluate`."""
    ranked_ids, gold, returned_ids = judged
    _check_gold(gold)
    _check_distinct(ranked_ids, "ranked_ids")
    _check_distinct(returned_ids, "returned_ids")
    scores: dict[str, float] = {}
    for k in ks:
        precision = precision_at_k(ranked_ids, gold, k)
        recall = recall_at_k(ranked_ids, gold, k)
        scores[f"precision@{k}"] = precision
        scores[f"recall@{k}"] = recall
        scores[f"f1@{k}"] = _f1(precision, recall)
    scores[f"ndcg@{NDCG_K}"] = ndcg_at_k(ranked_ids, gold, NDCG_K)
    scores["mrr"] = reciprocal_rank(ranked_ids, gold)
    precision, recall, f1 = set_precision_recall_f1(returned_ids, gold)
    scores["precision@returned"] = precision
    scores["recall@returned"] = recall
    scores["f1@returned"] = f1
    return scores


def evaluate(judged: Iterable[Judged], ks: Sequence[int] = KS) -> dict[str, float]:
    """Macro average over queries of every metric: each query weighs the same.

    Keys: precision@k, recall@k, f1@k for k in KS, ndcg@10, mrr, precision@returned,
    recall@returned, f1@returned; values are floats in [0, 1].

    Queries whose gold set is empty must be left out by the caller (no ranking can be judged
    against nothing, and silently scoring them 0 or 1 would skew the mean): they raise
    ValueError, as do duplicate ids within one ranking and an empty input.
    """
    per_query = [score_query(item, ks) for item in judged]
    if not per_query:
        raise ValueError("evaluate needs at least one judged query")
    # fsum keeps the mean of values in [0, 1] inside [0, 1] whatever the query count.
    return mean_scores(per_query)


def score_steps(
    step_rankings: Sequence[Sequence[str]],
    gold: frozenset[str],
    step_returned: Sequence[Sequence[str]],
    ks: Sequence[int] = KS,
) -> dict[str, float]:
    """One task searched one step at a time: at each cut k, the union of every step's top k
    is judged as a set against the task's gold (precision over the union's size, recall over
    the gold); "@returned" judges the union of what each step returned; "tools@k" is the
    union's size (what the agent holds after the steps)."""
    _check_gold(gold)
    scores: dict[str, float] = {}
    for k in ks:
        _check_k(k)
        union = list(dict.fromkeys(i for ranking in step_rankings for i in ranking[:k]))
        precision, recall, f1 = set_precision_recall_f1(union, gold)
        scores[f"precision@{k}"] = precision
        scores[f"recall@{k}"] = recall
        scores[f"f1@{k}"] = f1
        scores[f"tools@{k}"] = float(len(union))
    returned = list(dict.fromkeys(i for answer in step_returned for i in answer))
    precision, recall, f1 = set_precision_recall_f1(returned, gold)
    scores["precision@returned"] = precision
    scores["recall@returned"] = recall
    scores["f1@returned"] = f1
    scores["tools@returned"] = float(len(returned))
    return scores


def mean_scores(per_query: Sequence[dict[str, float]]) -> dict[str, float]:
    """The macro average of per-query score dictionaries with the same keys."""
    if not per_query:
        raise ValueError("mean_scores needs at least one scored query")
    return {key: math.fsum(s[key] for s in per_query) / len(per_query) for key in per_query[0]}


def _check_k(k: int) -> None:
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}")


def _check_gold(gold: frozenset[str]) -> None:
    if not gold:
        raise ValueError("a query with an empty gold set cannot be scored; exclude it first")


def _check_distinct(ids: Sequence[str], what: str) -> None:
    # A repeated id would be counted as two hits and push recall past 1.
    if len(set(ids)) != len(ids):
        raise ValueError(f"{what} contains a repeated id")
