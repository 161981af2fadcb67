"""The retrievers a search can be asked for (the served default, two baselines, and the
default with one lever changed at a time: the ablation that measures each lever), and the
table of what ranks each one."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Protocol

import numpy as np
from numpy.typing import NDArray

from indexer.retrieval.adapter import QueryAdapter
from indexer.retrieval.first_stage import Request
from indexer.retrieval.fusion import ALL_LEVERS, Levers, split_intents
from indexer.retrieval.learned import LearnedStage, WeakReason
from indexer.retrieval.pipeline import rank
from indexer.retrieval.scaling import Scaling
from indexer.retrieval.tool_index import Hit, ToolIndex, Visibility


class Retriever(StrEnum):
    DEFAULT = "default"
    DENSE = "dense"
    BM25 = "bm25"
    NO_INTENTS = "hybrid-no-intents"
    NO_CATALOG = "hybrid-no-catalog"
    NO_LEXICAL = "hybrid-no-lexical"
    NO_CUT = "hybrid-no-cut"
    NO_LITERAL = "hybrid-no-literal"
    CLAUSES_APART = "hybrid-clauses-apart"
    Z = "hybrid-z"
    MIN_MAX = "hybrid-minmax"
    RRF = "hybrid-rrf"
    # The fixed blend alone: the fallback path when no learned model is installed.
    BLEND = "hybrid-blend"


ABLATIONS: dict[Retriever, Levers] = {
    Retriever.NO_INTENTS: Levers(intents=False),
    Retriever.NO_CATALOG: Levers(catalog=False),
    Retriever.NO_LEXICAL: Levers(lexical=False),
    Retriever.NO_CUT: Levers(cut=False),
    Retriever.NO_LITERAL: Levers(literal=False),
    Retriever.CLAUSES_APART: Levers(joint_clauses=False),
    Retriever.Z: Levers(scaling=Scaling.Z),
    Retriever.MIN_MAX: Levers(scaling=Scaling.MIN_MAX),
    Retriever.RRF: Levers(scaling=Scaling.RRF),
    Retriever.BLEND: Levers(learned=False),
}
RETRIEVERS: tuple[str, ...] = tuple(Retriever)


class RequestEncoder(Protocol):
    """Request vectors, as the registry's query cache gives them."""

    def embed(self, query: str) -> NDArray[np.float32]: ...

    def request_vectors(
        self, text: str, clauses: Sequence[str], *, joint: bool = True
    ) -> list[NDArray[np.float32]]: ...


@dataclass(kw_only=True, frozen=True)
class Models:
    """What the retrievers rank with: the request encoder, the learned stage and its query
    adapter (None when absent, or fitted for another embedder), and the best cosine under
    which an answer no learned stage judged is weak."""

    encoder: RequestEncoder
    weak_score: float
    learned: LearnedStage | None = None
    adapter: QueryAdapter | None = None


@dataclass(kw_only=True, frozen=True)
class Search:
    """One checked search: its text, how many hits, whether the caller named no limit (it
    gets the registry's confident set), and the rows it may return."""

    text: str
    limit: int
    confident_only: bool
    visible: Visibility
    catalogs: Sequence[str] = ()
    # A workflow state's legal tools, when the search is limited to them; None: no limit.
    tools: Collection[str] | None = None


@dataclass(kw_only=True, frozen=True)
class Answer:
    hits: list[Hit]
    weak: bool
    # Why, when weak (None when not).
    reason: WeakReason | None = None

    @classmethod
    def judged(cls, hits: list[Hit], close: bool) -> Answer:
        """An answer the cosine rule judges: weak when nothing was eligible, or when the best
        similarity is not `close`."""
        if not hits:
            return cls(hits=hits, weak=True, reason=WeakReason.NOTHING_ELIGIBLE)
        if not close:
            return cls(hits=hits, weak=True, reason=WeakReason.NO_CLOSE_TOOL)
        return cls(hits=hits, weak=False)


class Strategy(Protocol):
    """Ranks one search on one snapshot."""

    def __call__(self, index: ToolIndex, search: Search, models: Models, /) -> Answer: ...


def rank_lexical(index: ToolIndex, search: Search, _models: Models) -> Answer:
    """BM25 over each tool's protocol text, as LiveMCPBench publishes it (no model)."""
    hits = index.search_lexical(
        search.text,
        search.limit,
        catalogs=search.catalogs,
        visible=search.visible,
        tools=search.tools,
    )
    # BM25 judges no closeness: a hit shares a word with the request.
    return Answer.judged(hits, close=True)


def rank_dense(index: ToolIndex, search: Search, models: Models) -> Answer:
    """The request's own vector against every tool's (no adapter, no blend)."""
    vector = models.encoder.embed(search.text)
    hits = index.search(
        vector, search.limit, catalogs=search.catalogs, visible=search.visible, tools=search.tools
    )
    return Answer.judged(hits, close=bool(hits) and hits[0].score >= models.weak_score)


@dataclass(frozen=True)
class Hybrid:
    """The hybrid pipeline (`pipeline.rank`) with these levers."""

    levers: Levers

    def __call__(self, index: ToolIndex, search: Search, models: Models) -> Answer:
        levers, text = self.levers, search.text
        clauses = split_intents(text) if levers.intents else []
        vectors = models.encoder.request_vectors(text, clauses, joint=levers.joint_clauses)
        learned = models.learned if levers.learned else None
        if learned is not None and models.adapter is not None:
            vectors = models.adapter.apply(vectors)
        answer = rank(
            index,
            Request(texts=[text, *clauses], vectors=vectors, levers=levers),
            search.limit,
            eligible=index.eligible(search.visible, catalogs=search.catalogs, tools=search.tools),
            confident_only=search.confident_only and levers.cut,
            learned=learned,
        )
        hits = answer.hits
        if not hits:
            return Answer.judged(hits, close=False)
        if answer.weak is not None:
            return Answer(hits=hits, weak=answer.weak, reason=answer.reason)
        return Answer.judged(hits, close=max(h.similarity for h in hits) >= models.weak_score)


STRATEGIES: dict[Retriever, Strategy] = {
    Retriever.BM25: rank_lexical,
    Retriever.DENSE: rank_dense,
    Retriever.DEFAULT: Hybrid(ALL_LEVERS),
    **{retriever: Hybrid(levers) for retriever, levers in ABLATIONS.items()},
}
