"""The hybrid pipeline's steps on the sample catalogs with the real model: first stage,
shortlist, rerank, cut; and the shortlist training reads is the one serving reranks."""

from __future__ import annotations

import numpy as np
import pytest

from indexer.retrieval.features import SHORTLIST
from indexer.retrieval.first_stage import Request, first_stage
from indexer.retrieval.fusion import split_intents
from indexer.retrieval.learned import MODEL_FILE, LearnedStage, WeakReason, load_learned_stage
from indexer.retrieval.pipeline import (
    cut,
    learned_inputs,
    rank,
    rerank_by_blend,
    rerank_learned,
    shortlist,
)
from indexer.retrieval.retrievers import STRATEGIES, Models, Retriever, Search
from indexer.retrieval.tool_index import Eligible, ToolIndex, everything
from registry.core import Registry

ASKS = [
    "find the customer account for Acme and open a support ticket",
    "who is the manager of employee E10442",
    "use crm__get_account to look up an account",
    "list open invoices",
]


def request_of(registry: Registry, text: str) -> Request:
    clauses = split_intents(text)
    return Request(texts=[text, *clauses], vectors=registry.queries.request_vectors(text, clauses))


@pytest.fixture
def learned() -> LearnedStage:
    stage = load_learned_stage(MODEL_FILE)
    assert stage is not None
    return stage


def test_the_shortlist_puts_named_tools_first(sample_registry: Registry) -> None:
    index = sample_registry.index
    request = request_of(sample_registry, "please call crm/search_contacts for Jane")
    listed = shortlist(index, first_stage(index, request, index.eligible()))
    assert listed.front >= 1
    assert listed.ids[0] == "crm/search_contacts"


def test_the_shortlist_holds_the_blends_best_and_each_intents_best_once(
    sample_registry: Registry,
) -> None:
    index = sample_registry.index
    request = request_of(sample_registry, ASKS[0])
    stage = first_stage(index, request, index.eligible())
    listed = shortlist(index, stage)
    positions = listed.positions.tolist()
    assert len(set(positions)) == len(positions)
    by_blend = np.lexsort((np.arange(len(stage.rows)), -stage.ranking.scores))
    assert set(by_blend[: min(SHORTLIST, len(by_blend))].tolist()) <= set(positions)
    assert set(stage.ranking.intent_tops) <= set(positions)


def test_without_a_learned_stage_hits_follow_the_blend_best_first_ties_by_id(
    sample_registry: Registry,
) -> None:
    index = sample_registry.index
    for text in (ASKS[0], ASKS[1], ASKS[3]):  # none names a tool: no front
        request = request_of(sample_registry, text)
        stage = first_stage(index, request, index.eligible())
        hits = rank(index, request, 10).hits
        order = np.lexsort((stage.rows, -stage.ranking.scores))[:10]
        assert [h.entry.id for h in hits] == [index.entries[int(stage.rows[i])].id for i in order]
        assert [h.score for h in hits] == [float(stage.ranking.scores[i]) for i in order]


def test_the_learned_rerank_orders_the_shortlist_by_its_scores_behind_the_named_front(
    sample_registry: Registry, learned: LearnedStage
) -> None:
    index = sample_registry.index
    request = request_of(sample_registry, ASKS[2])
    stage = first_stage(index, request, index.eligible())
    listed, features = learned_inputs(index, request, stage)
    reranked = rerank_learned(learned, stage, listed, features, clauses=False)
    assert reranked.order[: listed.front].tolist() == list(range(listed.front))
    rest = reranked.scores[reranked.order[listed.front :]]
    assert (np.diff(rest) <= 0).all()
    assert reranked.weak is not None


def test_the_confident_cut_keeps_the_front_and_each_intents_best_only(
    sample_registry: Registry,
) -> None:
    index = sample_registry.index
    request = request_of(sample_registry, ASKS[0])
    stage = first_stage(index, request, index.eligible())
    listed = shortlist(index, stage, depth=5)
    reranked = rerank_by_blend(stage, listed)
    final = cut(listed, reranked, 5, confident_only=True)
    everything = cut(listed, reranked, 5, confident_only=False)
    tops = {listed.positions.tolist().index(t) for t in stage.ranking.intent_tops}
    assert set(final.tolist()) == set(range(listed.front)) | tops
    assert len(final) <= len(everything) == 5


def test_serving_scores_exactly_the_shortlist_and_features_training_reads(
    sample_registry: Registry, learned: LearnedStage
) -> None:
    index = sample_registry.index
    for text in ASKS:
        request = request_of(sample_registry, text)
        stage = first_stage(index, request, Eligible.whole(index.view()))
        listed, features = learned_inputs(index, request, stage)
        reranked = rerank_learned(learned, stage, listed, features, clauses=len(request.texts) > 1)
        served = rank(index, request, 10, learned=learned)
        assert [h.entry.id for h in served.hits] == [
            listed.ids[i] for i in reranked.order[:10].tolist()
        ]
        assert [h.score for h in served.hits] == [
            float(reranked.scores[i]) for i in reranked.order[:10].tolist()
        ]
        assert served.weak == reranked.weak


def test_a_view_leaving_rows_out_never_shortlists_them(sample_registry: Registry) -> None:
    index: ToolIndex = sample_registry.index
    absent = np.asarray([e.tool.catalog == "crm" for e in index.entries])
    request = request_of(sample_registry, ASKS[0])
    stage = first_stage(index, request, Eligible.whole(index.view_without(absent)))
    listed, features = learned_inputs(index, request, stage)
    assert listed.ids
    assert not any(i.startswith("crm/") for i in listed.ids)
    assert len(features) == len(listed.ids)


def test_a_search_with_nothing_eligible_answers_nothing(sample_registry: Registry) -> None:
    index = sample_registry.index
    request = request_of(sample_registry, ASKS[1])
    nowhere = index.eligible(tools=())
    assert rank(index, request, 5, eligible=nowhere).hits == []
    assert rank(index, request, 0).hits == []


def test_every_retriever_has_a_ranking_strategy() -> None:
    assert set(STRATEGIES) == set(Retriever)


def test_a_lone_destructive_answer_comes_with_a_close_tool_that_changes_nothing(
    sample_registry: Registry,
) -> None:
    # The read-only metrics answer the question; a rollback scores just above them.
    asked = "why did checkout latency spike after yesterday's deploy"
    answer = sample_registry.search(asked, 0).hits
    assert [h.entry.id for h in answer] == ["devops/rollback_deployment", "devops/query_metrics"]


def test_a_destructive_answer_far_ahead_of_the_rest_stands_alone(
    sample_registry: Registry,
) -> None:
    asked = "the deploy broke checkout, put back the previous version"
    answer = sample_registry.search(asked, 0).hits
    assert [h.entry.id for h in answer] == ["devops/rollback_deployment"]


@pytest.mark.parametrize(
    ("asked", "reason"),
    [
        # Nothing in the sample catalogs is about cooking.
        ("bake a sourdough loaf with a crisp crust", WeakReason.NO_CLOSE_TOOL),
    ],
)
def test_a_weak_answer_says_why(sample_registry: Registry, asked: str, reason: str) -> None:
    outcome = sample_registry.search(asked, 0)
    assert outcome.weak_match
    assert outcome.weak_reason == reason


def test_a_confident_answer_has_no_weak_reason(sample_registry: Registry) -> None:
    outcome = sample_registry.search("who is the manager of employee E10442", 0)
    assert not outcome.weak_match
    assert outcome.weak_reason is None


@pytest.mark.parametrize("retriever", [Retriever.DEFAULT, Retriever.DENSE, Retriever.BM25])
def test_nothing_eligible_is_its_own_reason(
    sample_registry: Registry, retriever: Retriever
) -> None:
    # A workflow state that offers the caller none of the matching tools.
    models = Models(encoder=sample_registry.queries, weak_score=0.3)
    search = Search(
        text="list open invoices",
        limit=5,
        confident_only=True,
        visible=everything,
        tools=["workspace/book_room"],
        catalogs=["finance"],
    )
    answer = STRATEGIES[retriever](sample_registry.index, search, models)
    assert (answer.hits, answer.weak, answer.reason) == ([], True, WeakReason.NOTHING_ELIGIBLE)
