"""An immutable snapshot of every registered tool and its vectors, searched by meaning.

A new snapshot is made for every catalog change (spliced from the previous one and the changed
catalogs' segments, see `assembly`) and swapped in whole, so a search always sees one
consistent generation.
"""

from __future__ import annotations

import difflib
import threading
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import NDArray

from indexer.retrieval.assembly import Assembly, assemble
from indexer.retrieval.features import SHORTLIST, ShortlistFacts, StageScores, candidate_features
from indexer.retrieval.fusion import (
    ALL_LEVERS,
    IntentScores,
    Levers,
    Ranking,
    rank_intents,
)
from indexer.retrieval.learned import LearnedStage
from indexer.retrieval.lexical import ArrayBM25, LexicalIndex, protocol_tool_text
from indexer.retrieval.literal import NOTHING, Named
from indexer.retrieval.scaling import EXACT_ONLY, Scaling, scale_exact, spread_from_moments
from indexer.retrieval.segment import IndexedTool, Segment, SegmentSpace
from indexer.retrieval.vector_index import Partition, VectorIndex
from indexer.retrieval.view import View, build_view

# Which text of each tool BM25 reads (see ToolIndex.lexical).
LexicalText = Literal["protocol", "document"]
# Decides whether a caller may see a tool, given the tool's required scopes.
Visibility = Callable[[frozenset[str]], bool]
MAX_SUGGESTIONS = 3
_SUGGESTION_POOL = 5_000
# On an approximate (IVF) index the blend scores candidates only: per intent, the best rows
# by meaning and by words, and every tool of the best-matching catalogs.
DENSE_CANDIDATES = 100
LEXICAL_CANDIDATES = 100
CATALOG_CANDIDATES = 3
# The catalogs considered for CATALOG_CANDIDATES: those of an intent's best dense rows.
CATALOG_SEEDS = 20
# Views cached per snapshot (one per distinct visibility seen); past it the cache restarts.
MAX_VIEWS = 256


__all__ = ["Hit", "HybridAnswer", "IndexedTool", "ToolIndex", "Visibility", "everything"]


def everything(_required: frozenset[str]) -> bool:
    return True


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


@dataclass(kw_only=True, frozen=True)
class Hit:
    entry: IndexedTool
    # What the ranking ordered by (cosine for dense, BM25 for lexical, the blend for hybrid).
    score: float
    # Cosine similarity of the request and the tool's document (NaN when not computed).
    similarity: float = float("nan")


@dataclass(kw_only=True, frozen=True)
class HybridAnswer:
    """A hybrid search's hits, whether the learned stage judged them weak (None without
    it), and, when asked for, the shortlist (ids, first-stage order) with its features."""

    hits: list[Hit]
    weak: bool | None
    shortlist: tuple[str, ...] = ()
    features: NDArray[np.float32] | None = None
    # How many shortlist entries the request names (they stay first).
    front: int = 0


class ToolIndex:
    """Tools ordered by id, their normalised vectors, and the generation they belong to."""

    def __init__(
        self,
        segments: Sequence[Segment],
        generation: int,
        *,
        space: SegmentSpace,
        partition: Partition | None = None,
        previous: ToolIndex | None = None,
    ) -> None:
        """The snapshot of `segments` (one per catalog, all made by `space`). `partition`
        makes the vector index approximate (IVF). With `previous`, the arrays are spliced
        from its own where only a few catalogs changed (see `assembly`)."""
        self._assembly: Assembly = assemble(
            segments,
            space=space,
            partition=partition,
            previous=previous._assembly if previous is not None else None,
        )
        self._space = space
        parts = self._assembly
        self._entries = parts.entries
        self._vectors = parts.vectors
        self._bm25 = parts.bm25
        self._lexical: dict[str, LexicalIndex] = {}
        self._lexical_lock = threading.Lock()
        self.generation = generation
        # Visibility is decided per distinct scope set, not per tool: catalogs share a few
        # scope sets, so a caller's mask costs a handful of checks plus one vector op.
        self._scope_sets = parts.scope_sets
        self._scope_codes = parts.scope_codes
        self._catalogs = parts.catalogs
        self._catalog_codes = parts.catalog_codes
        # Rows are in id order, so each catalog's rows are one contiguous range.
        self._catalog_starts = parts.catalog_starts
        self._catalog_ends = parts.catalog_ends
        # Each catalog's centroid: the direction of "what this server is about".
        self._centroids = parts.centroids
        # Catalog centroids' mean (and, for "z" only, second moment): the IVF path scales
        # catalog scores over every catalog without scoring them all.
        self._centroid_mean = self._centroids.astype(np.float64).sum(axis=0) / max(
            len(self._centroids), 1
        )
        self._centroid_gram: NDArray[np.float64] | None = None
        self._views: dict[bytes, View] = {}
        self._masks: dict[Visibility, NDArray[np.bool_]] = {}
        self._views_lock = threading.Lock()
        self._all_rows = np.ones(len(self._entries), dtype=bool)
        self._all_rows.setflags(write=False)

    @property
    def segments(self) -> tuple[Segment, ...]:
        return self._assembly.segments

    @property
    def space(self) -> SegmentSpace:
        return self._space

    @property
    def spliced(self) -> bool:
        """Whether this snapshot was spliced from the previous one (not built whole)."""
        return self._assembly.spliced

    def _centroid_moments(
        self, scaling: Scaling
    ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        if scaling != Scaling.Z:
            return self._centroid_mean, self._centroid_mean[None, :]
        with self._views_lock:
            if self._centroid_gram is None:
                wide = self._centroids.astype(np.float64)
                self._centroid_gram = wide.T @ wide / max(len(wide), 1)
            return self._centroid_mean, self._centroid_gram

    def _named(self, text: str) -> Named:
        """The tools and catalogs `text` names literally."""
        parts = self._assembly
        return parts.literals.named(text, parts.row_of, parts.catalogs.get)

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def entries(self) -> tuple[IndexedTool, ...]:
        return self._entries

    @property
    def dimension(self) -> int:
        return self._vectors.dimension

    @property
    def vectors(self) -> VectorIndex:
        return self._vectors

    def get(self, tool_id: str, visible: Visibility = everything) -> IndexedTool | None:
        """The tool with this id, or None when it does not exist or the caller may not see it."""
        row = self._assembly.row_of(tool_id)
        if row is None:
            return None
        entry = self._entries[row]
        return entry if visible(entry.required_scopes) else None

    def visible_mask(self, visible: Visibility) -> NDArray[np.bool_]:
        """Which rows `visible` allows (read-only; copy before changing it). Memoised per
        caller for this snapshot: with a scope per catalog there are as many scope sets as
        catalogs, too many to judge again on every request."""
        if visible is everything:
            return self._all_rows
        with self._views_lock:
            found = self._masks.get(visible)
        if found is not None:
            return found
        allowed_sets = [code for code, s in enumerate(self._scope_sets) if visible(s)]
        mask = np.isin(self._scope_codes, np.asarray(allowed_sets, dtype=np.int32))
        mask.setflags(write=False)
        with self._views_lock:
            if len(self._masks) >= MAX_VIEWS:
                self._masks.clear()
            self._masks[visible] = mask
        return mask

    def view(self, visible: Visibility = everything) -> View:
        """The caller's view: its visible rows and statistics over them, built once per
        distinct mask per snapshot."""
        mask = self.visible_mask(visible)
        key = np.packbits(mask).tobytes()
        with self._views_lock:
            found = self._views.get(key)
        if found is not None:
            return found
        built = build_view(
            mask,
            self._vectors.rows,
            self._catalog_codes,
            self._catalog_starts,
            self._catalog_ends,
            self._centroids,
        )
        with self._views_lock:
            if len(self._views) >= MAX_VIEWS:
                self._views.clear()
            return self._views.setdefault(key, built)

    def _view_without(self, visible: Visibility, absent: NDArray[np.bool_]) -> View:
        """The caller's view as if the `absent` rows were not registered (not cached: the
        training's unanswerable requests each leave out other rows)."""
        mask = self.visible_mask(visible) & ~absent
        return build_view(
            mask,
            self._vectors.rows,
            self._catalog_codes,
            self._catalog_starts,
            self._catalog_ends,
            self._centroids,
        )

    def _eligible(
        self,
        catalogs: Iterable[str],
        visible: Visibility,
        view: View | None = None,
        tools: Collection[str] | None = None,
    ) -> NDArray[np.bool_]:
        """Rows the caller may see, in `catalogs` when given, and among `tools` (ids) when
        given (a workflow state's legal tools)."""
        mask = (self.visible_mask(visible) if view is None else view.mask).copy()
        wanted = list(catalogs)
        if wanted:
            codes = [self._catalogs[name] for name in wanted if name in self._catalogs]
            mask &= np.isin(self._catalog_codes, np.asarray(codes, dtype=np.int32))
        if tools is not None:
            rows = [row for row in map(self._assembly.row_of, tools) if row is not None]
            only = np.zeros_like(mask)
            only[np.asarray(rows, dtype=np.int64)] = True
            mask &= only
        return mask

    def lexical(self, text: LexicalText = "protocol") -> LexicalIndex | ArrayBM25:
        """BM25 over one text of each tool, built on first use.

        "protocol": each tool as JSON (catalog title, name, description, input schema), the
        text of the published LiveMCPBench BM25 baseline, scored by bm25s as published.
        "document": the same document text the dense model embeds (name in words,
        description, parameters, examples), scored by the equivalent `ArrayBM25` (always
        built: the blend reads it).
        """
        if text == "document":
            return self._bm25
        with self._lexical_lock:
            index = self._lexical.get(text)
            if index is None:
                texts = [
                    protocol_tool_text(
                        e.catalog_title or e.tool.catalog,
                        e.tool.name,
                        e.tool.description,
                        e.tool.input_schema,
                    )
                    for e in self._entries
                ]
                index = self._lexical[text] = LexicalIndex(texts)
            return index

    def _candidates(
        self,
        queries: NDArray[np.float32],
        lexical: list[NDArray[np.float32]],
        catalogs: bool,
        eligible: NDArray[np.bool_],
        named: Named,
        view: View,
    ) -> NDArray[np.int64]:
        """Eligible rows worth blending on an IVF index, in row order: per intent, the best
        rows by meaning and by words, and every tool of the catalogs nearest the intent among
        those its best rows belong to; and the tools and catalogs the request names."""
        _, dense_rows = self._vectors.search(queries, DENSE_CANDIDATES, eligible)
        found = [dense_rows[dense_rows >= 0], named.rows[eligible[named.rows]]]
        for code in named.catalogs:
            start, end = self._catalog_starts[code], self._catalog_ends[code]
            found.append(np.arange(start, end, dtype=np.int64)[eligible[start:end]])
        for scores in lexical:
            positive = np.flatnonzero(eligible & (scores > 0.0))
            if len(positive) > LEXICAL_CANDIDATES:
                best = np.argpartition(-scores[positive], LEXICAL_CANDIDATES - 1)
                positive = positive[best[:LEXICAL_CANDIDATES]]
            found.append(positive)
        if catalogs:
            for query, ranked in zip(queries, dense_rows, strict=True):
                seeds = ranked[ranked >= 0][:CATALOG_SEEDS]
                codes = np.unique(self._catalog_codes[seeds])
                similarity = view.centroids[codes] @ query
                for code in codes[np.argsort(-similarity, kind="stable")[:CATALOG_CANDIDATES]]:
                    start, end = self._catalog_starts[code], self._catalog_ends[code]
                    rows = np.arange(start, end, dtype=np.int64)
                    found.append(rows[eligible[start:end]])
        return np.unique(np.concatenate(found)).astype(np.int64)

    def _catalog_scores(
        self, queries: NDArray[np.float32], rows: NDArray[np.int64], scaling: Scaling, view: View
    ) -> NDArray[np.float32]:
        """Per intent and row: the similarity of the row's catalog centroid, scaled over every
        catalog the caller sees (the best being that of the rows' catalogs). On an IVF
        snapshot a caller who sees everything gets the mean and standard deviation from the
        centroids' moments, without scoring every catalog."""
        codes, inverse = np.unique(self._catalog_codes[rows], return_inverse=True)
        if not view.full:
            everything = queries @ view.centroids[view.catalog_codes].T
            positions = np.searchsorted(view.catalog_codes, codes)
            scaled = [scale_exact(row, positions, scaling) for row in everything]
        elif self._vectors.approximate and scaling not in EXACT_ONLY:
            similarity = queries @ self._centroids[codes].T
            moments = self._centroid_moments(scaling)
            spreads = [spread_from_moments(q, *moments, scaling) for q in queries]
            scaled = [spread.scaled(similarity[i], scaling) for i, spread in enumerate(spreads)]
        else:
            everything = queries @ self._centroids.T
            scaled = [scale_exact(row, codes, scaling) for row in everything]
        return np.vstack(scaled)[:, inverse]

    def rank_hybrid(
        self,
        texts: Sequence[str],
        vectors: Sequence[NDArray[np.float32]],
        limit: int,
        *,
        confident_only: bool = False,
        levers: Levers = ALL_LEVERS,
        catalogs: Iterable[str] = (),
        visible: Visibility = everything,
        learned: LearnedStage | None = None,
        with_features: bool = False,
        absent: NDArray[np.bool_] | None = None,
        tools: Collection[str] | None = None,
    ) -> HybridAnswer:
        """Dense and BM25 blended per intent; `texts[0]` is the request, the rest its clauses.

        Every score is scaled against the whole corpus and the best eligible row (see
        `scaling`), so the exact index (which blends every eligible row) and the IVF
        index (which blends candidates holding each retriever's best rows) give a tool the same
        score. With `learned`, the blend's best SHORTLIST candidates are reordered by the
        learned stage and scored by it. With `confident_only`, only the request's best tool and
        each clause's best are kept (at most `limit`): the registry's own cut, for callers who
        did not ask for a number of hits. `with_features` returns the shortlist's features (for
        training); `absent` marks rows treated as not registered (the training's unanswerable
        requests). `tools` limits the answer to those ids (scores are still scaled against
        the caller's whole view).
        """
        view = self.view(visible) if absent is None else self._view_without(visible, absent)
        eligible = self._eligible(catalogs, visible, view, tools)
        if limit <= 0 or not eligible.any():
            return HybridAnswer(hits=[], weak=None)
        stage = self._first_stage(texts, vectors, levers, eligible, view)
        rows, ranking = stage.rows, stage.ranking
        # A tool the request names can also be the best of a catalog it names: once.
        front = list(dict.fromkeys(self._named_first(stage.named, rows, ranking.scores)))
        positions = np.arange(len(rows), dtype=np.int64)
        # Candidates are in id order: lexsort by (-score, position) breaks ties by id.
        by_blend = positions[np.lexsort((positions, -ranking.scores))]
        if learned is None and not with_features:
            picked = np.asarray(ranking.intent_tops, dtype=np.int64) if confident_only else by_blend
            ranked = picked[np.lexsort((picked, -ranking.scores[picked]))][: limit + len(front)]
            order = list(dict.fromkeys([*front, *ranked.tolist()]))[:limit]  # front: once each
            return HybridAnswer(hits=self._hits(rows, order, ranking.scores, stage), weak=None)
        shortlist = np.asarray(
            list(dict.fromkeys([*front, *by_blend[:SHORTLIST].tolist(), *ranking.intent_tops])),
            dtype=np.int64,
        )
        features = self._shortlist_features(texts, stage, shortlist)
        if learned is None:
            scores = ranking.scores[shortlist].astype(np.float64)
        else:
            scores = learned.score(features)
        # Named tools keep their place in front; the rest go by the learned score, ties by id
        # (candidates are in id order), so an answer's order is its scores' order.
        rest = np.arange(len(front), len(shortlist), dtype=np.int64)
        rest = rest[np.lexsort((shortlist[rest], -scores[rest]))]
        final = ordered = np.concatenate((np.arange(len(front), dtype=np.int64), rest))
        if confident_only:
            tops = [int(rest[0])] if len(rest) else []
            if len(texts) > 1:  # each clause's best by the blend
                where = {int(p): i for i, p in enumerate(shortlist.tolist())}
                tops += [where[int(t)] for t in ranking.intent_tops]
            tops = sorted(set(tops), key=lambda i: (-scores[i], int(shortlist[i])))
            final = np.asarray(list(dict.fromkeys([*range(len(front)), *tops])), dtype=np.int64)
        # The answer's confidence reads the whole shortlist in its final order.
        weak = learned.is_weak(scores[ordered], features[ordered]) if learned is not None else None
        final = final[:limit]
        learned_scores = scores[final]
        hits = self._hits(rows, shortlist[final].tolist(), ranking.scores, stage)
        hits = [
            Hit(entry=h.entry, score=float(s), similarity=h.similarity)
            for h, s in zip(hits, learned_scores, strict=True)
        ]
        return HybridAnswer(
            hits=hits,
            weak=weak,
            shortlist=tuple(self._entries[int(rows[p])].id for p in shortlist)
            if with_features
            else (),
            features=features if with_features else None,
            front=len(front),
        )

    def _hits(
        self,
        rows: NDArray[np.int64],
        order: Sequence[int],
        scores: NDArray[np.float32],
        stage: FirstStage,
    ) -> list[Hit]:
        similarity = stage.dense.max(axis=0)
        return [
            Hit(
                entry=self._entries[int(rows[c])],
                score=float(scores[c]),
                similarity=float(similarity[c]),
            )
            for c in order
        ]

    def _first_stage(
        self,
        texts: Sequence[str],
        vectors: Sequence[NDArray[np.float32]],
        levers: Levers,
        eligible: NDArray[np.bool_],
        view: View,
    ) -> FirstStage:
        """Every candidate's scores, scaled, and the blend over the intents."""
        queries = np.vstack(vectors).astype(np.float32)
        named = self._named(texts[0]) if levers.literal else NOTHING
        # Statistics over the visible rows only (None: every row is visible).
        over = None if view.full else view.rows
        bm25 = self._bm25
        mask = None if view.full else view.mask
        lexical = [bm25.scores(t, mask) for t in texts] if levers.lexical else []
        scaling = levers.scaling
        if self._vectors.approximate and scaling not in EXACT_ONLY:
            rows = self._candidates(queries, lexical, levers.catalog, eligible, named, view)
            dense = self._vectors.scores_at(queries, rows)
            gather = self._vectors.rows
            spreads = [
                self._vectors.score_spread(q, scaling)
                if view.full
                else view.dense_spread(q, gather, scaling)
                for q in queries
            ]
            dense_scaled = [s.scaled(dense[i], scaling) for i, s in enumerate(spreads)]
        else:
            rows = np.flatnonzero(eligible)
            everything_scored = self._vectors.scores(queries)
            dense = everything_scored[:, rows]
            dense_scaled = [scale_exact(row, rows, scaling, over) for row in everything_scored]
        catalog = self._catalog_scores(queries, rows, scaling, view) if levers.catalog else None
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
                catalog_codes=self._catalog_codes[rows],
            ),
            mask=mask,
        )

    def _shortlist_features(
        self, texts: Sequence[str], stage: FirstStage, shortlist: NDArray[np.int64]
    ) -> NDArray[np.float32]:
        rows = stage.rows[shortlist]
        entries = [self._entries[int(r)] for r in rows]
        if stage.scores.lexical_scaled is not None:
            matched, unknown = self._bm25.idf_coverage(texts[0], rows, stage.mask)
        else:
            matched, unknown = np.zeros(len(rows), dtype=np.float32), 0.0
        facts = ShortlistFacts(
            idf_matched=matched,
            idf_unknown=unknown,
            named_tool=np.isin(rows, stage.named.rows),
            named_catalog=np.isin(self._catalog_codes[rows], stage.named.catalogs),
            name_words=[e.name_words for e in entries],
            inputs=[e.input_names for e in entries],
            outputs=[e.output_names for e in entries],
        )
        return candidate_features(texts[0], len(texts) - 1, stage.scores, shortlist, facts)

    def _named_first(
        self, named: Named, rows: NDArray[np.int64], scores: NDArray[np.float32]
    ) -> list[int]:
        """Positions in `rows` that go first because the request names them: the tools it
        names, then the best tool of each catalog it names, each group best first."""
        if not len(named.rows) and not len(named.catalogs):
            return []
        tools = np.flatnonzero(np.isin(rows, named.rows))
        front: list[int] = tools[np.lexsort((tools, -scores[tools]))].tolist()
        best: list[int] = []
        for code in named.catalogs:
            members = np.flatnonzero(self._catalog_codes[rows] == code)
            if len(members):
                best.append(int(members[np.lexsort((members, -scores[members]))[0]]))
        return front + sorted(best, key=lambda c: (-float(scores[c]), c))

    def search_lexical(
        self,
        query: str,
        limit: int,
        *,
        catalogs: Iterable[str] = (),
        visible: Visibility = everything,
        tools: Collection[str] | None = None,
    ) -> list[Hit]:
        """The best `limit` eligible tools by BM25; tools sharing no token are not hits."""
        scores = self.lexical("protocol").scores(query)
        eligible = self._eligible(catalogs, visible, tools=tools)
        candidates = np.flatnonzero(eligible & (scores > 0.0))
        # Rows are in id order: lexsort by (-score, row) breaks ties by id.
        order = candidates[np.lexsort((candidates, -scores[candidates]))][:limit]
        return [Hit(entry=self._entries[int(row)], score=float(scores[row])) for row in order]

    def search(
        self,
        query: NDArray[np.float32],
        limit: int,
        *,
        catalogs: Iterable[str] = (),
        visible: Visibility = everything,
        tools: Collection[str] | None = None,
    ) -> list[Hit]:
        """The best `limit` tools among those visible (and in `catalogs`, among `tools`, when
        given).

        Ordered by score, ties by id. Filtering happens inside the vector search, so the page
        is full whenever enough eligible tools exist.
        """
        mask = self._eligible(catalogs, visible, tools=tools)
        eligible = int(mask.sum())
        if limit <= 0 or eligible == 0:
            return []
        filtered = None if eligible == len(self._entries) else mask
        # Fetch past the cut so that ties at the boundary are broken by id, not by the heap.
        fetch = min(eligible, limit * 2 + 8)
        while True:
            found, rows = self._vectors.search(query, fetch, filtered)
            keep = rows[0] >= 0
            scores, rows = found[0][keep], rows[0][keep]
            boundary_tied = len(scores) > limit and scores[limit - 1] == scores[-1]
            if not boundary_tied or fetch >= eligible:
                break
            fetch = min(eligible, fetch * 4)
        # Rows are in id order: lexsort by (-score, row) orders ties by id.
        order = np.lexsort((rows, -scores))[:limit]
        return [
            Hit(
                entry=self._entries[int(rows[i])],
                score=float(scores[i]),
                similarity=float(scores[i]),
            )
            for i in order
        ]

    def suggestions(self, tool_id: str, visible: Visibility = everything) -> list[str]:
        """Up to three visible ids that look like `tool_id` (for "did you mean")."""
        catalog, _, name = tool_id.partition("/")
        mask = self.visible_mask(visible)
        pool = [e.id for e, ok in zip(self._entries, mask.tolist(), strict=True) if ok]
        if len(pool) > _SUGGESTION_POOL:
            # difflib is quadratic-ish; narrow to the same catalog or a similar tool name.
            narrowed = [i for i in pool if i.startswith(catalog + "/") or name in i]
            pool = narrowed[:_SUGGESTION_POOL]
        close = difflib.get_close_matches(tool_id, pool, n=MAX_SUGGESTIONS, cutoff=0.5)
        if len(close) < MAX_SUGGESTIONS and name:
            by_name = {i.partition("/")[2]: i for i in pool}
            for match in difflib.get_close_matches(name, list(by_name), n=MAX_SUGGESTIONS):
                if by_name[match] not in close and len(close) < MAX_SUGGESTIONS:
                    close.append(by_name[match])
        return close
