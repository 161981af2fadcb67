"""The BM25 index's behaviour, and the published livemcpbench BM25 anchor reproduced through
the dataset loader, the protocol tool text, the lexical index and the metrics."""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import cache

import pytest

from indexer.evaluation.datasets import LabeledQuery, load_dataset
from indexer.evaluation.metrics import evaluate
from indexer.retrieval.lexical import LexicalIndex, protocol_tool_text
from tests.conftest import DATASETS

ANCHOR_KEYS = ("precision@1", "recall@5", "ndcg@10", "recall@10")
# Datasets README: BM25 on livemcpbench, as percentages with two decimals.
PUBLISHED = {"precision@1": 28.72, "recall@5": 31.68, "ndcg@10": 31.50, "recall@10": 38.51}


def test_search_returns_best_first_with_ties_in_row_order() -> None:
    index = LexicalIndex(["dog", "cat sat", "cat", "cat cat cat", "cat sat"])
    hits = index.search("cat", 10)
    rows = [row for row, _ in hits]
    scores = [score for _, score in hits]
    assert scores == sorted(scores, reverse=True)
    assert rows[-2:] == [1, 4]  # equal documents, equal scores: row order
    assert 0 not in rows


def test_search_with_k_above_the_corpus_returns_every_match() -> None:
    index = LexicalIndex(["alpha beta", "beta gamma", "delta"])
    assert [row for row, _ in index.search("beta", 50)] == [0, 1]


def test_search_cuts_the_answer_at_k() -> None:
    index = LexicalIndex(["alpha beta", "beta gamma", "beta delta"])
    assert len(index.search("beta", 2)) == 2


def test_a_query_without_an_indexed_token_finds_nothing() -> None:
    index = LexicalIndex(["alpha beta", "beta gamma"])
    assert index.search("zebra", 5) == []
    assert index.search("the and of", 5) == []  # stopwords only
    assert index.search("", 5) == []


def test_an_index_without_tokens_finds_nothing() -> None:
    assert LexicalIndex([]).search("alpha", 3) == []
    assert LexicalIndex(["", "the a"]).search("alpha", 3) == []


def test_search_rejects_k_below_one() -> None:
    with pytest.raises(ValueError, match="k must be"):
        LexicalIndex(["alpha"]).search("alpha", 0)


def test_lowercase_matching_without_stemming() -> None:
    index = LexicalIndex(["Running shoes", "run fast"])
    assert [row for row, _ in index.search("RUNNING", 5)] == [0]


def test_protocol_tool_text_orders_keys_and_omits_only_none() -> None:
    text = protocol_tool_text("Srv", "t", "", {"type": "object"})
    assert (
        text
        == '{"server": "Srv", "name": "t", "description": "", "inputSchema": {"type": "object"}}'
    )
    assert protocol_tool_text(None, "t", None, None) == '{"name": "t"}'


def test_protocol_tool_text_keeps_non_ascii_text() -> None:
    assert protocol_tool_text("鸣潮", "t", None, None) == '{"server": "鸣潮", "name": "t"}'


@cache
def _livemcpbench_rankings() -> tuple[tuple[LabeledQuery, list[tuple[str, float]]], ...]:
    """Every query with the whole corpus ranked as (tool id, score), from the catalogs as a
    user would register them (parsed with json.loads, not the registry's parser)."""
    dataset = load_dataset("livemcpbench", DATASETS)
    ids: list[str] = []
    texts: list[str] = []
    for catalog in dataset.catalogs:
        document = json.loads(catalog.content)
        server = document["_meta"]["capreg/title"]
        for tool in document["tools"]:
            ids.append(f"{catalog.name}/{tool['name']}")
            texts.append(
                protocol_tool_text(
                    server, tool["name"], tool.get("description"), tool.get("inputSchema")
                )
            )
    index = LexicalIndex(texts)
    rankings = []
    for query in dataset.queries:
        hits = index.search(query.query, len(ids))
        matched = {row for row, _ in hits}
        # The protocol ranks the whole corpus: documents sharing no token score 0 and follow.
        ranked = [(ids[row], score) for row, score in hits]
        ranked += [(ids[row], 0.0) for row in range(len(ids)) if row not in matched]
        rankings.append((query, ranked))
    return tuple(rankings)


def _percentages(
    reorder: Callable[[list[tuple[str, float]], frozenset[str]], list[str]],
) -> dict[str, float]:
    judged = []
    for query, ranked in _livemcpbench_rankings():
        ids = reorder(ranked, query.relevant)
        judged.append((ids, query.relevant, ids[:5]))
    scores = evaluate(judged)
    return {key: round(100 * scores[key], 2) for key in ANCHOR_KEYS}


def _as_ranked(ranked: list[tuple[str, float]], gold: frozenset[str]) -> list[str]:
    return [tool_id for tool_id, _ in ranked]


def _ties_to(gold_first: bool) -> Callable[[list[tuple[str, float]], frozenset[str]], list[str]]:
    def reorder(ranked: list[tuple[str, float]], gold: frozenset[str]) -> list[str]:
        # Python's sort is stable: only tools with exactly equal scores change places.
        return [
            tool_id
            for tool_id, _ in sorted(
                ranked, key=lambda hit: (-hit[1], (hit[0] in gold) != gold_first)
            )
        ]

    return reorder


@pytest.mark.datasets
def test_bm25_on_livemcpbench_reproduces_the_published_p1_ndcg10_and_recall10() -> None:
    assert _percentages(_as_ranked) == {
        "precision@1": PUBLISHED["precision@1"],
        "recall@5": 31.41,  # see the next test: one exact tie at rank 5/6
        "ndcg@10": PUBLISHED["ndcg@10"],
        "recall@10": PUBLISHED["recall@10"],
    }


@pytest.mark.datasets
def test_bm25_on_livemcpbench_published_figures_lie_within_the_tie_orders() -> None:
    """The published Recall@5 differs from the row-order run only by how one exact tie is
    broken: in the task about Nvidia's stock, yahoo-finance's get_dividends (not gold) and
    get_news (gold) score the same at ranks 5 and 6. The published run put get_news first,
    which no rule that orders ties by file position gives together with its other three
    figures, so it came from another tie order (callbus ranks with bm25s' top-k over a later,
    re-serialised tools.json). Every published figure sits between the tie-pessimistic and
    the tie-optimistic value, and the optimistic Recall@5 is the published one."""
    pessimistic = _percentages(_ties_to(gold_first=False))
    optimistic = _percentages(_ties_to(gold_first=True))
    assert optimistic["recall@5"] == PUBLISHED["recall@5"]
    assert pessimistic["recall@5"] == 31.41
    for key in ANCHOR_KEYS:
        assert pessimistic[key] <= PUBLISHED[key] <= optimistic[key], key
