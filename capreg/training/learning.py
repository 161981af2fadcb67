"""Fitting the learned stage from collected shortlists: the LightGBM lambdarank ranker, the
weak-match classifier and its operating point, and offline scoring of any ranker variant on
the same shortlists (the ablation).

Everything here is deterministic: LightGBM runs single-threaded with `deterministic`, the
logistic model is fitted by Newton's method from zeros, and inputs come in a fixed order.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from indexer.evaluation.metrics import evaluate
from indexer.retrieval.features import FEATURE_NAMES
from indexer.retrieval.learned import (
    CONFIDENCE_FEATURES,
    LearnedStage,
    TreeEnsemble,
    WeakMatch,
    best_cosine,
    confidence_features,
)

# The ranker's settings, chosen a priori for a small, smooth model; none of the
# single changes tried in the ranker-settings experiment (docs/experiments.md) raises every
# left-out tuning set's P@1 and R@5.
# Depth bounds the serving cost: every candidate walks every tree `max_depth` steps (depth 12
# cost 0.6 ms per request at 10k tools, depth 5 about half that).
RANKER_PARAMS: dict[str, object] = {
    "objective": "lambdarank",
    "learning_rate": 0.05,
    "num_leaves": 15,
    "max_depth": 5,
    "min_data_in_leaf": 40,
    "feature_fraction": 1.0,
    "bagging_fraction": 1.0,
    "lambda_l2": 1.0,
    "lambdarank_truncation_level": 20,
    "deterministic": True,
    "force_row_wise": True,
    "num_threads": 1,
    "seed": 7,
    "verbosity": -1,
}
ROUNDS = 200
# The weak-match operating point: the largest share of answerable tuning requests that may
# be flagged weak.
MAX_FALSE_WEAK = 0.05
# The cosine floor flags at most this share of any tuning set's answerable requests.
FLOOR_QUANTILE = 0.01
# Folds of the cross-fitting that gives weak_match out-of-sample ranker scores.
CROSS_FOLDS = 5


@dataclass(kw_only=True, frozen=True)
class Shortlisted:
    """One request's shortlist as the first stage made it, and its judgement."""

    dataset: str
    query_id: str
    ids: tuple[str, ...]
    features: NDArray[np.float32]
    # How many entries the request names (they stay first whatever the ranker says).
    front: int
    relevant: frozenset[str]
    # False for the unanswerable copy of a request (its gold tools left out of the corpus).
    answerable: bool = True

    def labels(self) -> NDArray[np.float32]:
        return np.asarray([i in self.relevant for i in self.ids], dtype=np.float32)


Scorer = Callable[[NDArray[np.float32]], NDArray[np.float64]]


def ordered(
    item: Shortlisted, scores: NDArray[np.float64] | None
) -> tuple[list[int], NDArray[np.float64]]:
    """The shortlist's final order (positions) and scores: named entries first, then by
    `scores` (None: the first stage's own order), ties by id (as served: docs/api.md)."""
    n = len(item.ids)
    if scores is None:
        scores = -np.arange(n, dtype=np.float64)
    by_id = np.empty(n, dtype=np.int64)
    by_id[sorted(range(n), key=item.ids.__getitem__)] = np.arange(n)
    rest = np.arange(item.front, n)
    rest = rest[np.lexsort((by_id[rest], -scores[rest]))]
    return [*range(item.front), *rest.tolist()], scores


def offline_metrics(
    items: Sequence[Shortlisted], score: Scorer | None, ks: Sequence[int] = (1, 3, 5, 10)
) -> dict[str, float]:
    """P/R/F1@k, nDCG and MRR of the reordered shortlists (answerable requests only)."""
    judged = []
    for item in items:
        if not item.answerable or not item.relevant:
            continue
        positions, _ = ordered(item, score(item.features) if score is not None else None)
        ranked = [item.ids[p] for p in positions]
        judged.append((ranked, item.relevant, ranked[:1]))
    return evaluate(judged, ks)


def fit_ranker(
    items: Sequence[Shortlisted],
    columns: Sequence[int],
    rounds: int = ROUNDS,
    *,
    params: Mapping[str, object] | None = None,
    feature_names: Sequence[str] = FEATURE_NAMES,
) -> TreeEnsemble:
    """A lambdarank ensemble over `columns` of the features. Requests whose shortlist holds
    no gold tool teach nothing and are left out; each tuning set weighs in proportion to the
    square root of its size, so the largest cannot drown the others. `params` override
    RANKER_PARAMS, and `feature_names` name the columns of features a bench appends to
    FEATURES' (benches try other settings and candidate features with them)."""
    import lightgbm

    useful = [i for i in items if i.answerable and i.labels().any()]
    if not useful:
        raise ValueError("no tuning request has a gold tool in its shortlist")
    sizes: dict[str, int] = {}
    for item in useful:
        sizes[item.dataset] = sizes.get(item.dataset, 0) + 1
    x = np.vstack([i.features[:, list(columns)] for i in useful]).astype(np.float64)
    y = np.concatenate([i.labels() for i in useful])
    group = [len(i.ids) for i in useful]
    weight = np.concatenate(
        [np.full(len(i.ids), 1.0 / math.sqrt(sizes[i.dataset])) for i in useful]
    )
    weight *= len(weight) / weight.sum()
    data = lightgbm.Dataset(
        x,
        label=y,
        group=group,
        weight=weight,
        feature_name=[feature_names[c] for c in columns],
        params={"verbosity": -1, "deterministic": True, "max_bin": 255},
    )
    booster = lightgbm.train({**RANKER_PARAMS, **(params or {})}, data, num_boost_round=rounds)
    return TreeEnsemble.from_lightgbm(booster.dump_model())


def confidence_rows(
    items: Sequence[Shortlisted], scores: Sequence[NDArray[np.float64]]
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Each request's weak-match facts (from its shortlist's learned `scores`) and whether it
    is answerable (1) or not (0)."""
    facts, answerable = [], []
    for item, item_scores in zip(items, scores, strict=True):
        positions, ordered_scores = ordered(item, item_scores)
        facts.append(confidence_features(ordered_scores[positions], item.features[positions]))
        answerable.append(1.0 if item.answerable else 0.0)
    return np.vstack(facts), np.asarray(answerable)


def fold_of(item: Shortlisted, folds: int) -> int:
    """A request's fold, by a hash of its set and id (its unanswerable copy goes with it)."""
    digest = hashlib.sha256(f"{item.dataset}\0{item.query_id}".encode()).digest()
    return int.from_bytes(digest[:4], "big") % folds


def cross_fitted_scores(
    items: Sequence[Shortlisted], columns: Sequence[int], folds: int = CROSS_FOLDS
) -> list[NDArray[np.float64]]:
    """Each item's learned scores from a ranker fitted without its fold: the scores a request
    the ranker never saw gets, which is what weak_match meets in service (in-sample scores
    are over-confident)."""
    assignment = [fold_of(item, folds) for item in items]
    scores: list[NDArray[np.float64]] = [np.zeros(0)] * len(items)
    for fold in range(folds):
        training = [item for item, f in zip(items, assignment, strict=True) if f != fold]
        ranker = LearnedStage(fit_ranker(training, columns), tuple(columns), None)
        for index, f in enumerate(assignment):
            if f == fold:
                scores[index] = ranker.score(items[index].features)
    return scores


def fit_logistic(
    x: NDArray[np.float64], y: NDArray[np.float64], l2: float = 1.0, steps: int = 50
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64], float]:
    """Standardised L2-regularised logistic regression by Newton's method from zeros:
    (mean, scale, coefficients, intercept)."""
    mean = x.mean(axis=0)
    scale = x.std(axis=0)
    scale[scale == 0.0] = 1.0
    z = np.hstack([(x - mean) / scale, np.ones((len(x), 1))])
    w = np.zeros(z.shape[1])
    penalty = np.full(z.shape[1], l2)
    penalty[-1] = 0.0  # the intercept is not shrunk
    for _ in range(steps):
        p = 1.0 / (1.0 + np.exp(-(z @ w)))
        gradient = z.T @ (p - y) + penalty * w
        hessian = (z * (p * (1.0 - p))[:, None]).T @ z + np.diag(penalty)
        step = np.linalg.solve(hessian, gradient)
        w -= step
        if float(np.abs(step).max()) < 1e-10:
            break
    return mean, scale, w[:-1], float(w[-1])


@dataclass(kw_only=True, frozen=True)
class OperatingPoint:
    threshold: float
    flagged_unanswerable: float
    flagged_answerable: float


def pr_curve(
    probability: NDArray[np.float64], answerable: NDArray[np.float64], points: int = 21
) -> list[OperatingPoint]:
    """Flag rates of unanswerable (recall of "weak") and answerable requests (false alarms)
    at thresholds spread over the probabilities' quantiles."""
    unanswerable = answerable == 0.0
    thresholds = np.unique(np.quantile(probability, np.linspace(0.0, 1.0, points)))
    return [_point(float(t), probability, unanswerable) for t in thresholds]


def _point(
    threshold: float, probability: NDArray[np.float64], unanswerable: NDArray[np.bool_]
) -> OperatingPoint:
    flagged = probability < threshold
    return OperatingPoint(
        threshold=threshold,
        flagged_unanswerable=float(flagged[unanswerable].mean()) if unanswerable.any() else 0.0,
        flagged_answerable=float(flagged[~unanswerable].mean()) if (~unanswerable).any() else 0.0,
    )


def choose_threshold(
    probability: NDArray[np.float64], answerable: NDArray[np.float64]
) -> OperatingPoint:
    """The highest threshold that flags at most MAX_FALSE_WEAK of the answerable requests:
    as many unanswerable ones flagged as that allows."""
    answerable_p = np.sort(probability[answerable == 1.0])
    allowed = math.floor(MAX_FALSE_WEAK * len(answerable_p))
    # Flagging is p < threshold: the threshold at the (allowed)-th smallest answerable
    # probability flags exactly `allowed` of them (ties aside).
    threshold = float(answerable_p[allowed]) if allowed < len(answerable_p) else 1.0
    return _point(threshold, probability, answerable == 0.0)


def cosine_floor(items: Sequence[Shortlisted]) -> float:
    """The best-cosine value below which at most FLOOR_QUANTILE of the answerable requests
    of every tuning set fall (the lowest of the sets' quantiles)."""
    by_set: dict[str, list[float]] = {}
    for item in items:
        if item.answerable:
            by_set.setdefault(item.dataset, []).append(best_cosine(item.features))
    return min(float(np.quantile(values, FLOOR_QUANTILE)) for values in by_set.values())


def fit_weak_match(
    items: Sequence[Shortlisted], scores: Sequence[NDArray[np.float64]], floor: float
) -> tuple[WeakMatch, OperatingPoint, list[OperatingPoint]]:
    """The classifier and its threshold; answers under the cosine `floor` are flagged
    whatever the classifier says, so the threshold is chosen on the others' share."""
    x, y = confidence_rows(items, scores)
    mean, scale, coef, intercept = fit_logistic(x, y)
    probability = WeakMatch(mean, scale, coef, intercept, 0.5).probability(x)
    below = np.asarray([best_cosine(i.features) < floor for i in items])
    probability = np.where(below, -1.0, probability)
    point = choose_threshold(probability, y)
    weak = WeakMatch(mean, scale, coef, intercept, point.threshold, floor)
    return weak, point, pr_curve(probability, y)


def inputs_digest(items: Sequence[Shortlisted]) -> str:
    """SHA-256 over every shortlist in order: request, judgement, ids and feature bytes."""
    digest = hashlib.sha256()
    for item in items:
        head = f"{item.dataset}\0{item.query_id}\0{int(item.answerable)}\0{item.front}\0"
        digest.update(head.encode())
        digest.update("\0".join([*item.ids, *sorted(item.relevant)]).encode())
        digest.update(np.ascontiguousarray(item.features, dtype=np.float32).tobytes())
    return digest.hexdigest()


def fit_stage(
    items: Sequence[Shortlisted], columns: Sequence[int]
) -> tuple[LearnedStage, OperatingPoint, list[OperatingPoint]]:
    """The whole learned stage from tuning shortlists (answerable and unanswerable): the
    ranker on every tuning set, weak_match on cross-fitted scores of the sets that have
    unanswerable copies (answerable requests from other sets would let the classifier tell
    the sets apart instead of answerable from not)."""
    ensemble = fit_ranker(items, columns)
    with_unanswerable = {i.dataset for i in items if not i.answerable}
    if not with_unanswerable:
        raise ValueError("no tuning set has unanswerable requests to calibrate weak_match on")
    scores = cross_fitted_scores(items, columns)
    calibration = [
        (i, s) for i, s in zip(items, scores, strict=True) if i.dataset in with_unanswerable
    ]
    floor = cosine_floor(items)
    weak, point, curve = fit_weak_match(
        [i for i, _ in calibration], [s for _, s in calibration], floor
    )
    return LearnedStage(ensemble, tuple(columns), weak, inputs_digest(items)), point, curve


__all__ = [
    "CONFIDENCE_FEATURES",
    "OperatingPoint",
    "Shortlisted",
    "choose_threshold",
    "fit_stage",
    "inputs_digest",
    "offline_metrics",
    "pr_curve",
]
