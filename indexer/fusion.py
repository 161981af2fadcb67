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
from typing import Any

import numpy as np
from numpy.typing import NDArray

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


@dataclass(frozen=True)
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
    # Tools and catalogs the request names literally go first (indexer.literal).
    literal: bool = True
    # How each retriever's scores are put on one scale before blending (see SCALINGS).
    scaling: str = "mean-max"

    def __post_init__(self) -> None:
        # An unknown scaling would otherwise scale every score to zero, silently.
        if self.scaling not in SCALINGS:
            raise ValueError(f"scaling {self.scaling!r}: expected one of {', '.join(SCALINGS)}")


# Scalings, each mapping a score s to (s - origin) / width:
# - mean-max: origin the corpus mean, width up to the best eligible score (the best maps to 1);
# - z: origin the corpus mean, width the corpus standard deviation;
# - min-max: origin the corpus' lowest score, width up to the best eligible score;
# - rrf: reciprocal rank fusion's 1 / (RRF_K + rank), the rank among every scored row (a
#   BM25 score of 0, no shared word, gives 0).
# min-max and rrf are evaluation variants: no index knows the lowest score or a rank without
# scoring every row, so they always take the exact path. (The lowest score is one outlier's;
# the mean is everyone's.)
SCALINGS = ("mean-max", "z", "min-max", "rrf")
EXACT_ONLY = frozenset({"min-max", "rrf"})
RRF_K = 60


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


@dataclass(frozen=True)
class Spread:
    """One retriever's scores for one intent over the whole corpus: their mean, standard
    deviation and lowest value (NaN where not known: the IVF path has no exact minimum)."""

    mean: float
    std: float
    low: float = float("nan")

    @classmethod
    def of(cls, scores: NDArray[np.float32], scaling: str = "mean-max") -> Spread:
        """The statistics `scaling` needs, from every score (the others stay NaN)."""
        if not len(scores):
            return cls(0.0, 0.0, 0.0)
        nan = float("nan")
        return cls(
            float(scores.mean()),
            float(scores.std()) if scaling == "z" else nan,
            float(scores.min()) if scaling == "min-max" else nan,
        )

    def scaled(self, scores: NDArray[np.float32], scaling: str = "mean-max") -> NDArray[np.float32]:
        """`scores` on the blend's common scale (see SCALINGS).

        `scores` are the blended candidates' (every eligible row on the exact path; on the
        IVF path a set holding each retriever's best rows), so their maximum is the best
        eligible score. A retriever whose scores do not spread (all equal, or none above the
        origin) gives no evidence: zeros.
        """
        if scaling == "z":
            origin, width = self.mean, self.std
        else:
            origin = self.mean if scaling == "mean-max" else self.low
            width = float(scores.max()) - origin if len(scores) else 0.0
            # Rounding leaves a tiny width where there is none (one catalog: its score and
            # the mean of one score, computed two ways): equal scores scale to zero.
            if width <= 1e-6 * max(1.0, abs(origin)):
                width = 0.0
        if not width > 0.0:  # also NaN
            return np.zeros_like(scores, dtype=np.float32)
        return ((scores - origin) / width).astype(np.float32)


def scale_exact(
    everything: NDArray[np.float32], at: NDArray[np.signedinteger[Any]], scaling: str
) -> NDArray[np.float32]:
    """`everything[at]` on the blend's scale, from every score (`at`: the candidates)."""
    if scaling == "rrf":
        order = np.argsort(-everything, kind="stable")
        ranks = np.empty(len(everything), dtype=np.float64)
        ranks[order] = np.arange(1, len(everything) + 1)
        fused = np.where(everything[at] != 0.0, 1.0 / (RRF_K + ranks[at]), 0.0)
        return fused.astype(np.float32)
    return Spread.of(everything, scaling).scaled(everything[at], scaling)


def spread_from_moments(
    query: NDArray[np.floating],
    mean_vector: NDArray[np.float64],
    gram: NDArray[np.float64],
    scaling: str = "z",
) -> Spread:
    """The mean and standard deviation of `query`'s inner products with a set of rows, from
    the rows' mean vector and second-moment matrix (exact, without scoring the rows). Only
    "z" needs the standard deviation; other scalings skip the d x d product (NaN)."""
    q = np.asarray(query, dtype=np.float64).ravel()
    mean = float(q @ mean_vector)
    if scaling != "z":
        return Spread(mean, float("nan"))
    second = float(q @ gram @ q)
    variance = second - mean * mean
    # Rounding leaves a tiny variance where there is none (one row, or identical rows): the
    # scores are equal and must standardise to zero, not to amplified noise.
    if variance <= 1e-9 * max(second, 1e-12):
        variance = 0.0
    return Spread(mean, float(np.sqrt(variance)))


@dataclass(frozen=True)
class IntentScores:
    """One intent's scores over the candidate rows, each already on the common scale (so
    scoring a subset gives the same numbers as scoring everything)."""

    dense: NDArray[np.float32]
    lexical: NDArray[np.float32] | None
    catalog: NDArray[np.float32] | None

    def blended(self) -> NDArray[np.float32]:
        score = self.dense if self.lexical is None else (
            DENSE_WEIGHT * self.dense + (1.0 - DENSE_WEIGHT) * self.lexical
        )  # fmt: skip
        if self.catalog is not None:
            score = score + CATALOG_WEIGHT * self.catalog
        return np.asarray(score, dtype=np.float32)


@dataclass(frozen=True)
class Ranking:
    """Blended scores of every candidate row, and the candidates each intent ranks first."""

    scores: NDArray[np.float32]
    # Per intent (the whole request, or each clause when it has several): index of its best
    # candidate.
    intent_tops: tuple[int, ...]


def rank_intents(intents: list[IntentScores]) -> Ranking:
    """A candidate's score is its best blend over all intents (`intents[0]` is the whole
    request, the rest its clauses)."""
    per_intent = np.vstack([intent.blended() for intent in intents])
    best = per_intent.max(axis=0)
    clauses = per_intent[1:] if len(per_intent) > 1 else per_intent
    # argmax takes the first maximum: candidates are in row (id) order, so ties go by id.
    tops = [int(np.argmax(scores)) for scores in clauses] if per_intent.shape[1] else []
    return Ranking(best.astype(np.float32), tuple(dict.fromkeys(tops)))
