"""What the learned ranking stage reads about each shortlisted candidate of a request.

The first stage (the fixed blend, `fusion`) orders every eligible tool; the best few go to the
learned stage with one row of features each. Every feature is computed from what the caller
may see (scores scaled over visible rows, BM25 statistics over visible documents, ranks among
eligible candidates), so the learned order keeps the blend's isolation: a catalog a caller
cannot see never moves what it gets. Features are grouped so the evaluation can drop one
group at a time (the ablation) and retrain without it.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

import numpy as np
from numpy.typing import NDArray

from indexer.model import JsonObject
from indexer.retrieval.literal import tokens as identifier_tokens

# Shortlist for the learned stage: every hit a request may ask for (MAX_LIMIT) is reranked.
SHORTLIST = 50
# Features are rounded to this many decimals (see candidate_features).
FEATURE_DECIMALS = 4
# The top candidates whose catalog and parameters the catalog and link features compare to.
NEIGHBOURS = 10
LINK_NEIGHBOURS = 5

_WORD = re.compile(r"[a-z0-9]+")
_CAMEL_BREAK = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


class FeatureGroup(StrEnum):
    BLEND = "blend"
    DENSE = "dense"
    LEXICAL = "lexical"
    REQUEST = "request"
    IDENTIFIERS = "identifiers"
    CATALOG = "catalog"
    LINKS = "links"
    INTENTS = "intents"


@dataclass(frozen=True)
class Feature:
    name: str
    group: FeatureGroup


FEATURES: tuple[Feature, ...] = (
    Feature("blend_score", FeatureGroup.BLEND),
    Feature("blend_gap_to_best", FeatureGroup.BLEND),
    Feature("dense_cosine", FeatureGroup.DENSE),
    Feature("dense_cosine_best_intent", FeatureGroup.DENSE),
    Feature("dense_scaled", FeatureGroup.DENSE),
    Feature("dense_gap_to_best", FeatureGroup.DENSE),
    Feature("bm25_scaled", FeatureGroup.LEXICAL),
    Feature("bm25_scaled_best_intent", FeatureGroup.LEXICAL),
    Feature("bm25_gap_to_best", FeatureGroup.LEXICAL),
    Feature("bm25_idf_matched", FeatureGroup.LEXICAL),
    Feature("request_idf_unknown", FeatureGroup.LEXICAL),
    Feature("request_words", FeatureGroup.REQUEST),
    Feature("request_clauses", FeatureGroup.REQUEST),
    Feature("request_identifiers", FeatureGroup.REQUEST),
    Feature("named_tool", FeatureGroup.IDENTIFIERS),
    Feature("named_catalog", FeatureGroup.IDENTIFIERS),
    Feature("name_words_in_request", FeatureGroup.IDENTIFIERS),
    Feature("catalog_scaled", FeatureGroup.CATALOG),
    Feature("catalog_scaled_best_intent", FeatureGroup.CATALOG),
    Feature("catalog_share_of_top", FeatureGroup.CATALOG),
    Feature("takes_top_output", FeatureGroup.LINKS),
    Feature("shares_top_inputs", FeatureGroup.LINKS),
    Feature("intent_gap_to_best", FeatureGroup.INTENTS),
    Feature("intent_top_share", FeatureGroup.INTENTS),
)
FEATURE_NAMES: tuple[str, ...] = tuple(f.name for f in FEATURES)


def columns_of(groups: Sequence[FeatureGroup]) -> list[int]:
    """Column indexes of the features in `groups`."""
    return [i for i, f in enumerate(FEATURES) if f.group in groups]


@dataclass(kw_only=True, frozen=True)
class StageScores:
    """The first stage's scores over its candidate rows (columns), per intent (rows of the 2-D
    arrays; intent 0 is the whole request). Scaled arrays are on the blend's common scale;
    None where that retriever is off."""

    blend: NDArray[np.float32]
    # The blend per clause (the whole request's alone when it has none), and each clause's
    # best candidate: `fusion.Ranking`.
    clause_blend: NDArray[np.float32]
    clause_tops: NDArray[np.int64]
    dense: NDArray[np.float32]
    dense_scaled: NDArray[np.float32]
    lexical_scaled: NDArray[np.float32] | None
    catalog_scaled: NDArray[np.float32] | None
    catalog_codes: NDArray[np.int32]


@dataclass(kw_only=True, frozen=True)
class ShortlistFacts:
    """What is known about each shortlisted candidate beyond scores (aligned with it)."""

    idf_matched: NDArray[np.float32]
    # The share of the request's IDF mass in words no visible tool has.
    idf_unknown: float
    named_tool: NDArray[np.bool_]
    named_catalog: NDArray[np.bool_]
    # Per candidate: its name's words, and its input and output property names (each tool
    # computes them once: `IndexedTool`).
    name_words: Sequence[frozenset[str]]
    inputs: Sequence[frozenset[str]]
    outputs: Sequence[frozenset[str]]


def words_of(text: str) -> frozenset[str]:
    """Lower-case words, camelCase and snake_case split (`getUserById` -> get, user, by, id)."""
    return frozenset(_WORD.findall(_CAMEL_BREAK.sub(" ", text).lower()))


def property_names(schema: JsonObject | None) -> frozenset[str]:
    """The top-level property names of a JSON Schema object (none for anything else)."""
    properties = schema.get("properties") if isinstance(schema, dict) else None
    return frozenset(properties) if isinstance(properties, dict) else frozenset()


def candidate_features(
    request: str,
    clauses: int,
    scores: StageScores,
    shortlist: NDArray[np.int64],
    facts: ShortlistFacts,
) -> NDArray[np.float32]:
    """One row per shortlisted candidate (positions into the stage's candidates, best first
    by the blend), one column per FEATURES entry."""
    n = len(shortlist)
    out = np.zeros((n, len(FEATURES)), dtype=np.float32)
    if not n:
        return out
    column = {name: i for i, name in enumerate(FEATURE_NAMES)}
    dense = scores.dense
    out[:, column["blend_score"]] = scores.blend[shortlist]
    # Gaps to the best, not ranks: the IVF path scores candidates only, so a rank among
    # them depends on which rows the approximate search found; the best is always found.
    out[:, column["blend_gap_to_best"]] = scores.blend[shortlist] - scores.blend.max()
    out[:, column["dense_cosine"]] = dense[0, shortlist]
    out[:, column["dense_cosine_best_intent"]] = dense[:, shortlist].max(axis=0)
    out[:, column["dense_scaled"]] = scores.dense_scaled[0, shortlist]
    out[:, column["dense_gap_to_best"]] = dense[0, shortlist] - dense[0].max()
    if scores.lexical_scaled is not None:
        out[:, column["bm25_scaled"]] = scores.lexical_scaled[0, shortlist]
        out[:, column["bm25_scaled_best_intent"]] = scores.lexical_scaled[:, shortlist].max(axis=0)
        best = scores.lexical_scaled[0].max()
        out[:, column["bm25_gap_to_best"]] = scores.lexical_scaled[0, shortlist] - best
        out[:, column["bm25_idf_matched"]] = facts.idf_matched
        out[:, column["request_idf_unknown"]] = facts.idf_unknown
    request_words = words_of(request)
    out[:, column["request_words"]] = math.log1p(len(request.split()))
    out[:, column["request_clauses"]] = clauses
    out[:, column["request_identifiers"]] = len(identifier_tokens(request))
    out[:, column["named_tool"]] = facts.named_tool
    out[:, column["named_catalog"]] = facts.named_catalog
    out[:, column["name_words_in_request"]] = [
        len(words & request_words) / len(words) if words else 0.0 for words in facts.name_words
    ]
    codes = scores.catalog_codes[shortlist]
    if scores.catalog_scaled is not None:
        out[:, column["catalog_scaled"]] = scores.catalog_scaled[0, shortlist]
        out[:, column["catalog_scaled_best_intent"]] = scores.catalog_scaled[:, shortlist].max(
            axis=0
        )
    top = codes[:NEIGHBOURS]
    out[:, column["catalog_share_of_top"]] = (codes[:, None] == top[None, :]).sum(axis=1) / len(top)
    _link_features(out, column, codes, facts)
    _intent_features(out, column, scores, shortlist)
    # Trees split at thresholds between the training values: rounded to a fixed grid, a
    # feature never lands on a threshold, so float noise between the exact and the IVF path
    # (means from moments, last bits) cannot send a candidate down another branch.
    return np.round(out, FEATURE_DECIMALS)


def _link_features(
    out: NDArray[np.float32],
    column: dict[str, int],
    codes: NDArray[np.int32],
    facts: ShortlistFacts,
) -> None:
    """Whether a candidate takes what a top candidate of its catalog returns, or shares its
    parameters (one resource's family: the same `ticket_id` in and out)."""
    inputs, outputs = facts.inputs, facts.outputs
    neighbours = range(min(LINK_NEIGHBOURS, len(codes)))
    for i, own in enumerate(inputs):
        if not own:
            continue
        taken = shared = 0.0
        for j in neighbours:
            if j == i or codes[j] != codes[i]:
                continue
            if own & outputs[j]:
                taken = 1.0
            shared = max(shared, len(own & inputs[j]) / len(own))
        out[i, column["takes_top_output"]] = taken
        out[i, column["shares_top_inputs"]] = shared


def _intent_features(
    out: NDArray[np.float32],
    column: dict[str, int],
    scores: StageScores,
    shortlist: NDArray[np.int64],
) -> None:
    """How close a candidate comes to the best of some clause, and for how many clauses it
    is the best: a request that asks for several things needs each clause's tool, however
    the whole request scores it. A request of one clause is its own only intent."""
    clauses, tops = scores.clause_blend, scores.clause_tops
    best = clauses[np.arange(len(tops)), tops]
    gaps = clauses[:, shortlist] - best[:, None]
    out[:, column["intent_gap_to_best"]] = gaps.max(axis=0)
    wins = (shortlist[:, None] == tops[None, :]).sum(axis=1)
    out[:, column["intent_top_share"]] = wins / len(tops)
