"""The first stage of a hybrid search: which rows are candidates, and the fixed blend of their
dense, BM25 and catalog scores per intent.

Every score is scaled against the caller's whole view and its best eligible row (see
`scaling`), so the exact index (which blends every eligible row) and the IVF index (which
blends candidates holding each retriever's best rows) give a tool the same score.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from indexer.retrieval.features import StageScores
from indexer.retrieval.fusion import ALL_LEVERS, IntentScores, Levers, Ranking, rank_intents
from indexer.retrieval.lexical_terms import best_rows
from indexer.retrieval.literal import NOTHING, Named
from indexer.retrieval.scaling import EXACT_ONLY, Scaling, scale_exact, spread_from_moments
from indexer.retrieval.tool_index import Eligible, ToolIndex
from indexer.retrieval.view import View

# On an approximate (IVF) index the blend scores candidates only: per intent, the best rows
# by meaning and by words, and every tool of the best-matching catalogs.
DENSE_CANDIDATES = 100
LEXICAL_CANDIDATES = 100
CATALOG_CANDIDATES = 3
# The catalogs considered for CATALOG_CANDIDATES: those of an intent's best dense rows.
CATALOG_SEEDS = 20
# A best-matching catalog is added whole only up to this many tools. A larger one (an API
# federated as one catalog) brings its rows by meaning and by words like any other, so the
# candidates a request scores are bounded by these constants, not by the largest catalog.
CATALOG_EXPANSION_ROWS = 256


@dataclass(kw_only=True, frozen=True)
class Request:
    """A hybrid search's request: `texts[0]` is the request, the rest its clauses (each
    blended on its own), one vector each, and which levers of the blend are on."""

    texts: Sequence[str]
    vectors: Sequence[NDArray[np.float32]]
    levers: Levers = ALL_LEVERS


@dataclass(kw_only=True, frozen=True)
class FirstStage:
    """The fixed blend's work on one request: candidate rows (id order), their blended
    ranking, raw dense scores per intent, the names the request spells, and every scaled
    score the learned stage reads."""

    rows: NDArray[np.int64]
    ranking: Ranking
    dense: NDArray[np.float32]
    named: Named
    scores: StageScores
    # The caller's visible rows (None: all), for statistics the learned stage reads.
    mask: NDArray[np.bool_] | None


def first_stage(index: ToolIndex, request: Request, eligible: Eligible) -> FirstStage:
    """Every candidate's scores, scaled, and the blend over the intents."""
    texts, levers, view = request.texts, request.levers, eligible.view
    queries = np.vstack(request.vectors).astype(np.float32)
    named = index.named(texts[0]) if levers.literal else NOTHING
    # Statistics over the visible rows only (None: every row is visible).
    over = None if view.full else view.rows
    mask = None if view.full else view.mask
    lexical = [index.bm25.scores(t, mask) for t in texts] if levers.lexical else []
    scaling = levers.scaling
    vectors = index.vectors
    if vectors.approximate and scaling not in EXACT_ONLY:
        rows = _candidates(index, queries, lexical, levers.catalog, eligible, named)
        dense = vectors.scores_at(queries, rows)
        spreads = [
            vectors.score_spread(q, scaling)
            if view.full
            else view.dense_spread(q, vectors.rows, scaling)
            for q in queries
        ]
        dense_scaled = [s.scaled(dense[i], scaling) for i, s in enumerate(spreads)]
    else:
        rows = np.flatnonzero(eligible.rows)
        everything_scored = vectors.scores(queries)
        dense = everything_scored[:, rows]
        dense_scaled = [scale_exact(row, rows, scaling, over) for row in everything_scored]
    catalog = _catalog_scores(index, queries, rows, scaling, view) if levers.catalog else None
    lexical_scaled = [scale_exact(scores, rows, scaling, over) for scores in lexical]
    intents = [
        IntentScores(
            dense=dense_scaled[i],
            lexical=lexical_scaled[i] if lexical else None,
            catalog=catalog[i] if catalog is not None else None,
        )
        for i in range(len(queries))
    ]
    ranking = rank_intents(intents)
    return FirstStage(
        rows=rows,
        ranking=ranking,
        dense=dense,
        named=named,
        scores=StageScores(
            blend=ranking.scores,
            clause_blend=ranking.clauses,
            clause_tops=ranking.clause_tops,
            dense=dense,
            dense_scaled=np.vstack(dense_scaled),
            lexical_scaled=np.vstack(lexical_scaled) if lexical else None,
            catalog_scaled=catalog,
            catalog_codes=index.catalog_codes[rows],
        ),
        mask=mask,
    )


def _candidates(
    index: ToolIndex,
    queries: NDArray[np.float32],
    lexical: list[NDArray[np.float32]],
    catalogs: bool,
    eligible: Eligible,
    named: Named,
) -> NDArray[np.int64]:
    """Eligible rows worth blending on an IVF index, in row order: per intent, the best rows
    by meaning (a clause's from fewer lists than the request's: CLAUSE_PROBES) and by words,
    and every tool of the catalogs nearest the intent among those its best rows belong to;
    and the tools and catalogs the request names."""
    allowed = eligible.rows
    _, dense_rows = index.vectors.search_intents(queries, DENSE_CANDIDATES, allowed)
    found = [dense_rows[dense_rows >= 0], named.rows[allowed[named.rows]]]
    for code in named.catalogs:
        start, end = index.catalog_rows(int(code))
        found.append(np.arange(start, end, dtype=np.int64)[allowed[start:end]])
    found += [best_rows(scores, LEXICAL_CANDIDATES, allowed) for scores in lexical]
    if catalogs:
        for query, ranked in zip(queries, dense_rows, strict=True):
            seeds = ranked[ranked >= 0][:CATALOG_SEEDS]
            codes = np.unique(index.catalog_codes[seeds])
            similarity = eligible.view.centroids[codes] @ query
            for code in codes[np.argsort(-similarity, kind="stable")[:CATALOG_CANDIDATES]]:
                start, end = index.catalog_rows(int(code))
                if end - start > CATALOG_EXPANSION_ROWS:
                    continue
                rows = np.arange(start, end, dtype=np.int64)
                found.append(rows[allowed[start:end]])
    return np.unique(np.concatenate(found)).astype(np.int64)


def _catalog_scores(
    index: ToolIndex,
    queries: NDArray[np.float32],
    rows: NDArray[np.int64],
    scaling: Scaling,
    view: View,
) -> NDArray[np.float32]:
    """Per intent and row: the similarity of the row's catalog centroid, scaled over every
    catalog the caller sees (the best being that of the rows' catalogs). On an IVF snapshot
    a caller who sees everything gets the mean and standard deviation from the centroids'
    moments, without scoring every catalog."""
    codes, inverse = np.unique(index.catalog_codes[rows], return_inverse=True)
    if not view.full:
        everything = queries @ view.centroids[view.catalog_codes].T
        positions = np.searchsorted(view.catalog_codes, codes)
        scaled = [scale_exact(row, positions, scaling) for row in everything]
    elif index.vectors.approximate and scaling not in EXACT_ONLY:
        similarity = queries @ index.centroids[codes].T
        moments = index.centroid_moments(scaling)
        spreads = [spread_from_moments(q, *moments, scaling) for q in queries]
        scaled = [spread.scaled(similarity[i], scaling) for i, spread in enumerate(spreads)]
    else:
        everything = queries @ index.centroids.all.T
        scaled = [scale_exact(row, codes, scaling) for row in everything]
    return np.vstack(scaled)[:, inverse]
