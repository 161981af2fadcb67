"""Putting one retriever's scores on the blend's common scale: a leaf both the vector index
and the fusion read, so neither imports the other."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any

import numpy as np
from numpy.typing import NDArray

# Each scaling maps a score s to (s - origin) / width:
# - mean-max: origin the corpus mean, width up to the best eligible score (the best maps to 1);
# - z: origin the corpus mean, width the corpus standard deviation;
# - min-max: origin the corpus' lowest score, width up to the best eligible score;
# - rrf: reciprocal rank fusion's 1 / (RRF_K + rank), the rank among every scored row (a
#   BM25 score of 0, no shared word, gives 0).
# min-max and rrf are evaluation variants: no index knows the lowest score or a rank without
# scoring every row, so they always take the exact path. (The lowest score is one outlier's;
# the mean is everyone's.)


class Scaling(StrEnum):
    MEAN_MAX = "mean-max"
    Z = "z"
    MIN_MAX = "min-max"
    RRF = "rrf"


EXACT_ONLY = frozenset({Scaling.MIN_MAX, Scaling.RRF})
RRF_K = 60


@dataclass(kw_only=True, frozen=True)
class Spread:
    """One retriever's scores for one intent over the whole corpus: their mean, standard
    deviation and lowest value (NaN where not known: the IVF path has no exact minimum)."""

    mean: float
    std: float
    low: float = float("nan")

    @classmethod
    def of(cls, scores: NDArray[np.float32], scaling: Scaling) -> Spread:
        """The statistics `scaling` needs, from every score (the others stay NaN)."""
        if not len(scores):
            return cls(mean=0.0, std=0.0, low=0.0)
        nan = float("nan")
        return cls(
            mean=float(scores.mean()),
            std=float(scores.std()) if scaling == Scaling.Z else nan,
            low=float(scores.min()) if scaling == Scaling.MIN_MAX else nan,
        )

    def scaled(self, scores: NDArray[np.float32], scaling: Scaling) -> NDArray[np.float32]:
        """`scores` on the blend's common scale (see Scaling).

        `scores` are the blended candidates' (every eligible row on the exact path; on the
        IVF path a set holding each retriever's best rows), so their maximum is the best
        eligible score. A retriever whose scores do not spread (all equal, or none above the
        origin) gives no evidence: zeros.
        """
        if scaling == Scaling.Z:
            origin, width = self.mean, self.std
        else:
            origin = self.mean if scaling == Scaling.MEAN_MAX else self.low
            width = float(scores.max()) - origin if len(scores) else 0.0
            # Rounding leaves a tiny width where there is none (one catalog: its score and
            # the mean of one score, computed two ways): equal scores scale to zero.
            if width <= 1e-6 * max(1.0, abs(origin)):
                width = 0.0
        if not width > 0.0:  # also NaN
            return np.zeros_like(scores, dtype=np.float32)
        return ((scores - origin) / width).astype(np.float32)


def scale_exact(
    everything: NDArray[np.float32],
    at: NDArray[np.signedinteger[Any]],
    scaling: Scaling,
    over: NDArray[np.signedinteger[Any]] | None = None,
) -> NDArray[np.float32]:
    """`everything[at]` on the blend's scale, from the scores of the rows `over` (default:
    every row; a caller's visible rows, so rows it may not see never move its scores).
    `at` (the candidates) must lie within `over`."""
    if over is not None:
        return scale_exact(everything[over], np.searchsorted(over, at), scaling)
    if scaling == Scaling.RRF:
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
    scaling: Scaling,
) -> Spread:
    """The mean and standard deviation of `query`'s inner products with a set of rows, from
    the rows' mean vector and second-moment matrix (exact, without scoring the rows). Only
    "z" needs the standard deviation; other scalings skip the d x d product (NaN)."""
    q = np.asarray(query, dtype=np.float64).ravel()
    mean = float(q @ mean_vector)
    if scaling != Scaling.Z:
        return Spread(mean=mean, std=float("nan"))
    second = float(q @ gram @ q)
    variance = second - mean * mean
    # Rounding leaves a tiny variance where there is none (one row, or identical rows): the
    # scores are equal and must standardise to zero, not to amplified noise.
    if variance <= 1e-9 * max(second, 1e-12):
        variance = 0.0
    return Spread(mean=mean, std=float(np.sqrt(variance)))
