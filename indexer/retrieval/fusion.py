"""Hybrid ranking: dense and lexical scores blended per intent, and the confident cut.

A request often asks for several things ("check the ticket, then email the customer"): each
clause is scored on its own and a tool keeps its best score over the whole request and its
clauses, so every intent gets its tools near the top. Scores from the two retrievers live on
different scales; each is put on a common one before blending: 0 at the corpus mean, 1 at the
best tool the caller may see ("mean-max"). The mean is the whole corpus' (exact from moments on
an IVF index) and the best is among the blended candidates, which hold every retriever's best
rows, so blending only candidates gives each of them the score it would get among all.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from indexer.retrieval.scaling import Scaling

# Weight of the dense score in the blend (the lexical score gets the rest), tuned on
# seal-tools dev only.
DENSE_WEIGHT = 0.5
# Weight of the tool's catalog as a whole (its centroid's similarity to the request, scaled
# over catalogs). Tasks often need several tools of one server; with one
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


@dataclass(kw_only=True, frozen=True)
class Levers:
    """Which parts of the hybrid ranking are on (all of them in service; the evaluation's
    ablation turns them off one by one to measure each one's contribution)."""

    lexical: bool = True
    intents: bool = True
    catalog: bool = True
    cut: bool = True
    # Clause vectors pooled from one pass over the whole request (off: each clause is
    # encoded on its own, one more model pass per clause).
    joint_clauses: bool = True
    # Tools and catalogs the request names literally go first (indexer.retrieval.literal).
    literal: bool = True
    # How each retriever's scores are put on one scale before blending.
    scaling: Scaling = Scaling.MEAN_MAX
    # The learned stage reorders the blend's shortlist (off: the fixed blend decides, as it
    # does when no learned model is installed).
    learned: bool = True

    def __post_init__(self) -> None:
        # An unknown scaling would otherwise scale every score to zero, silently.
        if self.scaling not in set(Scaling):
            expected = ", ".join(Scaling)
            raise ValueError(f"scaling {self.scaling!r}: expected one of {expected}")


ALL_LEVERS = Levers()


def split_intents(query: str) -> list[str]:
    """The request's clauses, when it has more than one (at most 8, each >= 3 words)."""
    parts = [p.strip(" ,.;:") for p in _SPLIT.split(query) if p]
    clauses = [p for p in parts if len(p.split()) >= MIN_CLAUSE_WORDS]
    return clauses[:MAX_CLAUSES] if len(clauses) > 1 else []


def clause_spans(query: str, clauses: list[str]) -> list[tuple[int, int]]:
    """Where each clause of `split_intents(query)` lies in `query` (character offsets)."""
    spans = []
    position = 0
    for clause in clauses:
        start = query.find(clause, position)
        if start < 0:  # pragma: no cover - clauses are substrings of the query by construction
            start = query.find(clause)
        spans.append((start, start + len(clause)))
        position = max(position, start + len(clause))
    return spans


@dataclass(kw_only=True, frozen=True)
class IntentScores:
    """One intent's scores over the candidate rows, each already on the common scale (so
    scoring a subset gives the same numbers as scoring everything)."""

    dense: NDArray[np.float32]
    lexical: NDArray[np.float32] | None
    catalog: NDArray[np.float32] | None

    def blended(self) -> NDArray[np.float32]:
        score = (
            self.dense
            if self.lexical is None
            else (DENSE_WEIGHT * self.dense + (1.0 - DENSE_WEIGHT) * self.lexical)
        )
        if self.catalog is not None:
            score = score + CATALOG_WEIGHT * self.catalog
        return np.asarray(score, dtype=np.float32)


@dataclass(frozen=True)
class Ranking:
    """Blended scores of every candidate row, and the candidates each intent ranks first."""

    scores: NDArray[np.float32]
    # The blend per clause over the candidates (one row, the whole request's, when it has no
    # clauses), and each row's best candidate (argmax: the first maximum, so ties go by id).
    clauses: NDArray[np.float32]
    clause_tops: NDArray[np.int64]

    @property
    def intent_tops(self) -> tuple[int, ...]:
        """Each intent's best candidate, once each, in clause order."""
        return tuple(dict.fromkeys(self.clause_tops.tolist()))


def rank_intents(intents: list[IntentScores]) -> Ranking:
    """A candidate's score is its best blend over all intents (`intents[0]` is the whole
    request, the rest its clauses)."""
    per_intent = np.vstack([intent.blended() for intent in intents]).astype(np.float32)
    best = per_intent.max(axis=0)
    clauses = per_intent[1:] if len(per_intent) > 1 else per_intent
    # Candidates are in row (id) order; argmax takes the first maximum.
    tops = np.argmax(clauses, axis=1) if per_intent.shape[1] else np.zeros(0, dtype=np.int64)
    return Ranking(best, clauses, tops.astype(np.int64))
