"""A hybrid search as four steps over one snapshot: the first stage blends every candidate,
the shortlist takes the tools the request names and the blend's best, the rerank orders the
shortlist (by the learned stage, or by the blend's own scores), and the cut keeps the
confident set or as many as were asked for.

Training reads the shortlist through the same step (`learned_inputs`), so the learned stage
is fitted on exactly what serving gives it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from indexer.retrieval.features import SHORTLIST, ShortlistFacts, candidate_features
from indexer.retrieval.first_stage import FirstStage, Request, first_stage
from indexer.retrieval.learned import LearnedStage, WeakReason
from indexer.retrieval.lexical_terms import idf_coverage
from indexer.retrieval.segment import IndexedTool
from indexer.retrieval.tool_index import Eligible, Hit, ToolIndex

# A destructive lone answer gains a close tool that destroys nothing (see `safer_alternative`).
CLOSE_RANK = 4
CLOSE_SHARE = 0.25


@dataclass(kw_only=True, frozen=True)
class HybridAnswer:
    """A hybrid search's hits, and whether the learned stage judged them weak (None
    without it)."""

    hits: list[Hit]
    weak: bool | None
    # Why, when weak.
    reason: WeakReason | None = None


@dataclass(kw_only=True, frozen=True)
class Shortlist:
    """The candidates the rerank orders, as positions into the first stage's rows: the
    tools the request names first (`front` of them), then the blend's best, then each
    intent's best not among those."""

    positions: NDArray[np.int64]
    front: int
    entries: tuple[IndexedTool, ...]

    @property
    def ids(self) -> tuple[str, ...]:
        return tuple(e.id for e in self.entries)


@dataclass(kw_only=True, frozen=True)
class Reranked:
    """A shortlist's scores (aligned with it), its order (the front in place, the rest by
    score, ties by id), the entries its confident set takes beyond the front, and whether
    the answer is weak (None when nothing judged it)."""

    scores: NDArray[np.float64]
    order: NDArray[np.int64]
    confident: list[int]
    weak: bool | None = None
    reason: WeakReason | None = None


def rank(
    index: ToolIndex,
    request: Request,
    limit: int,
    *,
    eligible: Eligible | None = None,
    confident_only: bool = False,
    learned: LearnedStage | None = None,
) -> HybridAnswer:
    """The best `limit` eligible tools for `request` (every row when `eligible` is None).
    With `learned`, the blend's best SHORTLIST candidates are reordered and scored by the
    learned stage. With `confident_only`, only the confident set is kept (at most `limit`):
    the registry's own cut, for callers who did not ask for a number of hits."""
    eligible = index.eligible() if eligible is None else eligible
    if limit <= 0 or not eligible.rows.any():
        return HybridAnswer(hits=[], weak=None)
    stage = first_stage(index, request, eligible)
    if learned is None:
        # Past `limit`, the blend's order is already known: a shortlist that deep is enough.
        listed = shortlist(index, stage, depth=limit)
        reranked = rerank_by_blend(stage, listed)
    else:
        listed, features = learned_inputs(index, request, stage)
        reranked = rerank_learned(learned, stage, listed, features, clauses=len(request.texts) > 1)
    final = cut(listed, reranked, limit, confident_only=confident_only)
    return HybridAnswer(
        hits=hits(stage, listed, reranked.scores, final),
        weak=reranked.weak,
        reason=reranked.reason,
    )


def shortlist(index: ToolIndex, stage: FirstStage, *, depth: int = SHORTLIST) -> Shortlist:
    """The named tools first, then the blend's best `depth`, then each intent's best (each
    candidate once)."""
    rows, scores = stage.rows, stage.ranking.scores
    # A tool the request names can also be the best of a catalog it names: once.
    front = list(dict.fromkeys(named_first(index, stage)))
    positions = np.arange(len(rows), dtype=np.int64)
    # Candidates are in id order: lexsort by (-score, position) breaks ties by id.
    by_blend = positions[np.lexsort((positions, -scores))]
    listed = np.asarray(
        list(dict.fromkeys([*front, *by_blend[:depth].tolist(), *stage.ranking.intent_tops])),
        dtype=np.int64,
    )
    entries = index.entries_at(rows[listed])
    return Shortlist(positions=listed, front=len(front), entries=entries)


def named_first(index: ToolIndex, stage: FirstStage) -> list[int]:
    """Candidate positions that go first because the request names them: the tools it
    names, then the best tool of each catalog it names, each group best first."""
    named, rows, scores = stage.named, stage.rows, stage.ranking.scores
    if not len(named.rows) and not len(named.catalogs):
        return []
    tools = np.flatnonzero(np.isin(rows, named.rows))
    front: list[int] = tools[np.lexsort((tools, -scores[tools]))].tolist()
    best: list[int] = []
    codes = index.catalog_codes[rows]
    for code in named.catalogs:
        members = np.flatnonzero(codes == code)
        if len(members):
            best.append(int(members[np.lexsort((members, -scores[members]))[0]]))
    return front + sorted(best, key=lambda c: (-float(scores[c]), c))


def learned_inputs(
    index: ToolIndex, request: Request, stage: FirstStage
) -> tuple[Shortlist, NDArray[np.float32]]:
    """The shortlist the learned stage reorders, with one row of features per entry:
    serving scores these, and training fits on them (over a view that may leave rows out)."""
    listed = shortlist(index, stage)
    return listed, shortlist_features(index, request, stage, listed)


def shortlist_features(
    index: ToolIndex, request: Request, stage: FirstStage, listed: Shortlist
) -> NDArray[np.float32]:
    """`features.candidate_features` of each shortlisted candidate."""
    texts = request.texts
    rows = stage.rows[listed.positions]
    if stage.scores.lexical_scaled is not None:
        matched, unknown = idf_coverage(index.bm25, texts[0], rows, stage.mask)
    else:
        matched, unknown = np.zeros(len(rows), dtype=np.float32), 0.0
    facts = ShortlistFacts(
        idf_matched=matched,
        idf_unknown=unknown,
        named_tool=np.isin(rows, stage.named.rows),
        named_catalog=np.isin(index.catalog_codes[rows], stage.named.catalogs),
        name_words=[e.name_words for e in listed.entries],
        inputs=[e.input_names for e in listed.entries],
        outputs=[e.output_names for e in listed.entries],
    )
    return candidate_features(texts[0], len(texts) - 1, stage.scores, listed.positions, facts)


def rerank_by_blend(stage: FirstStage, listed: Shortlist) -> Reranked:
    """The shortlist in the blend's own order. Its confident set is each intent's best (the
    request's best, when it has no clauses)."""
    scores = stage.ranking.scores[listed.positions].astype(np.float64)
    where = {int(p): i for i, p in enumerate(listed.positions.tolist())}
    tops = [where[int(t)] for t in stage.ranking.intent_tops]
    return Reranked(scores=scores, order=_order(listed, scores), confident=tops)


def rerank_learned(
    learned: LearnedStage,
    stage: FirstStage,
    listed: Shortlist,
    features: NDArray[np.float32],
    *,
    clauses: bool,
) -> Reranked:
    """The shortlist in the learned stage's order, scored by it. Its confident set is its
    own best and, for a request of several clauses, each clause's best by the blend (a
    clause's tool the learned order puts lower is still asked for)."""
    scores = learned.score(features)
    order = _order(listed, scores)
    rest = order[listed.front :]
    tops = [int(rest[0])] if len(rest) else []
    if clauses:
        where = {int(p): i for i, p in enumerate(listed.positions.tolist())}
        tops += [where[int(t)] for t in stage.ranking.intent_tops]
    # The answer's confidence reads the whole shortlist in its final order.
    weak = learned.is_weak(scores[order], features[order])
    reason = learned.weak_reason(scores[order], features[order]) if weak else None
    return Reranked(scores=scores, order=order, confident=tops, weak=weak, reason=reason)


def _order(listed: Shortlist, scores: NDArray[np.float64]) -> NDArray[np.int64]:
    """Named tools keep their place in front; the rest go by score, ties by id (candidates
    are in id order), so an answer's order is its scores' order."""
    rest = np.arange(listed.front, len(listed.positions), dtype=np.int64)
    rest = rest[np.lexsort((listed.positions[rest], -scores[rest]))]
    return np.concatenate((np.arange(listed.front, dtype=np.int64), rest))


def cut(
    listed: Shortlist, reranked: Reranked, limit: int, *, confident_only: bool
) -> NDArray[np.int64]:
    """The shortlist entries answered, in order: the first `limit` of the rerank's order,
    or with `confident_only` the front and the confident set, best first (at most `limit`)."""
    if not confident_only:
        return reranked.order[:limit]
    scores, positions = reranked.scores, listed.positions
    tops = sorted(set(reranked.confident), key=lambda i: (-scores[i], int(positions[i])))
    final = list(dict.fromkeys([*range(listed.front), *tops]))
    if len(final) == 1 and (safer := safer_alternative(listed, reranked, final[0])) is not None:
        final.append(safer)
    return np.asarray(final, dtype=np.int64)[:limit]


def safer_alternative(listed: Shortlist, reranked: Reranked, answer: int) -> int | None:
    """When the confident set is one destructive tool (a delete, a rollback), the best tool
    that destroys nothing and scores close to it, if any: which of the two the request wants
    is not the registry's to decide. Close means within a quarter of the drop in score from the
    answer to the CLOSE_RANK-th tool of the order, among the tools ranked before that."""
    if not listed.entries[answer].destructive:
        return None
    order, scores = reranked.order.tolist(), reranked.scores
    if not order or order[0] != answer:
        return None
    reach = order[1:CLOSE_RANK]
    spread = scores[answer] - scores[order[min(CLOSE_RANK, len(order) - 1)]]
    for other in reach:
        if scores[answer] - scores[other] > spread * CLOSE_SHARE:
            return None
        if not listed.entries[other].destructive:
            return int(other)
    return None


def hits(
    stage: FirstStage, listed: Shortlist, scores: NDArray[np.float64], final: NDArray[np.int64]
) -> list[Hit]:
    """The answered entries, each with its rerank score and its best cosine over intents."""
    similarity = stage.dense.max(axis=0)
    return [
        Hit(
            entry=listed.entries[i],
            score=float(scores[i]),
            similarity=float(similarity[listed.positions[i]]),
        )
        for i in final.tolist()
    ]
