"""Hybrid ranking: dense and lexical scores blended per intent, and the confident cut.

A request often asks for several things ("check the ticket, then email the customer"): each
clause is scored on its own and a tool keeps its best score over the whole request and its
clauses, so every intent gets its tools near the top. Scores from the two retrievers live on
different scales; each is standardised over the corpus (z-score) before blending.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

# Weight of the dense score in the blend (the lexical score gets the rest), tuned on
# seal-tools dev only.
DENSE_WEIGHT = 0.5
# Weight of the tool's catalog as a whole (its centroid's similarity to the request,
# standardised over catalogs). Tasks often need several tools of one server; with one
# catalog this term is zero. Set a priori (seal-tools has one catalog, so it cannot tune it).
CATALOG_WEIGHT = 0.5
MAX_CLAUSES = 8
MIN_CLAUSE_WORDS = 3

# Sentence ends and the connectives people use to chain requests.
_SPLIT = re.compile(
    r"(?<=[.!?;])\s+"
    r"|\s*\b(?:then|after that|afterwards|additionally|also|finally|lastly|furthermore"
    r"|moreover|next|and then)\b[,:]?\s*",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Levers:
    """Which parts of the hybrid ranking are on (all of them in service; the evaluation's
    ablation turns them off one by one to measure each one's contribution)."""

    lexical: bool = True
    intents: bool = True
    catalog: bool = True
    cut: bool = True


ALL_LEVERS = Levers()


def split_intents(query: str) -> list[str]:
    """The request's clauses, when it has more than one (at most 8, each >= 3 words)."""
    parts = [p.strip(" ,.;:") for p in _SPLIT.split(query) if p]
    clauses = [p for p in parts if len(p.split()) >= MIN_CLAUSE_WORDS]
    return clauses[:MAX_CLAUSES] if len(clauses) > 1 else []


def standardise(scores: NDArray[np.float32]) -> NDArray[np.float32]:
    spread = float(scores.std())
    if spread == 0.0:
        return np.zeros_like(scores)
    return ((scores - float(scores.mean())) / spread).astype(np.float32)


def blend(dense: NDArray[np.float32], lexical: NDArray[np.float32] | None) -> NDArray[np.float32]:
    if lexical is None:
        return standardise(dense)
    return DENSE_WEIGHT * standardise(dense) + (1.0 - DENSE_WEIGHT) * standardise(lexical)


@dataclass(frozen=True)
class Ranking:
    """Blended scores of every row, and the rows each intent ranks first."""

    scores: NDArray[np.float32]
    # Per intent (the whole request, or each clause when it has several): its best row.
    intent_tops: tuple[int, ...]


def rank_intents(
    dense: list[NDArray[np.float32]],
    lexical: list[NDArray[np.float32] | None],
    catalog: list[NDArray[np.float32] | None],
    eligible: NDArray[np.bool_],
) -> Ranking:
    """Blends each intent's scores; a row's score is its best over all intents.

    `dense[0]`/`lexical[0]` score the whole request, the rest its clauses; `catalog[i]` is,
    per row, the similarity of intent i to the row's catalog centroid.
    """
    per_intent = [
        blend(d, x) + (CATALOG_WEIGHT * c if c is not None else 0.0)
        for d, x, c in zip(dense, lexical, catalog, strict=True)
    ]
    best = np.max(np.vstack(per_intent), axis=0)
    best = np.where(eligible, best, -np.inf).astype(np.float32)
    clauses = per_intent[1:] or per_intent
    tops = []
    for scores in clauses:
        masked = np.where(eligible, scores, -np.inf)
        if np.isfinite(masked).any():
            tops.append(int(np.argmax(masked)))
    return Ranking(best, tuple(dict.fromkeys(tops)))
