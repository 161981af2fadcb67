"""Which facts weak_match should read: each set of facts fitted and thresholded on the tuning
splits' unanswerable copies, as `make train` does, and its flag rates reported on the
held-out sets.

The committed classifier reads five facts of the answer (docs/results/training.md). The
variants add what a missing catalog might leave behind: how much of the request's IDF mass the
best hit matches and how much no tool knows, how much of the top shares the best hit's catalog,
the request's length; or read the cosines of the unadapted request vector, which the query
adapter has not pulled toward the tools most like it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np
from numpy.typing import NDArray

from bench.tables import emit
from bench.tuning import tuning_run
from indexer.evaluation.learning import (
    Shortlisted,
    choose_threshold,
    cosine_floor,
    cross_fitted_scores,
    fit_logistic,
    ordered,
)
from indexer.retrieval.features import FEATURE_NAMES
from indexer.retrieval.learned import (
    CONFIDENCE_FEATURES,
    LearnedStage,
    WeakMatch,
    best_cosine,
    confidence_features,
)
from registry.training import ALL_COLUMNS, REPORT_SETS, Corpus, train

_COLUMN = {name: i for i, name in enumerate(FEATURE_NAMES)}
COMMITTED = tuple(CONFIDENCE_FEATURES)
LEXICAL = ("top_bm25_idf_matched", "request_idf_unknown")
SHAPE = ("top_catalog_share", "log_request_words")
RAW = ("raw_top_cosine", "raw_above_corpus_mean", "raw_above_tenth")
VARIANTS: dict[str, tuple[str, ...]] = {
    "committed facts": COMMITTED,
    "+ lexical coverage of the best hit": COMMITTED + LEXICAL,
    "+ catalog share and request length": COMMITTED + SHAPE,
    "+ both": COMMITTED + LEXICAL + SHAPE,
    "unadapted cosines instead of adapted": RAW + COMMITTED[3:],
    "unadapted cosines, + both": RAW + COMMITTED[3:] + LEXICAL + SHAPE,
}

Key = tuple[str, str, bool]


def _key(item: Shortlisted) -> Key:
    return (item.dataset, item.query_id, item.answerable)


def facts_of(
    item: Shortlisted, scores: NDArray[np.float64], raw: Shortlisted
) -> tuple[dict[str, float], float]:
    """Every candidate fact of one answer, and its best cosine (for the floor)."""
    positions, ordered_scores = ordered(item, scores)
    features = item.features[positions]
    committed = confidence_features(ordered_scores[positions], features)
    raw_positions, _ = ordered(raw, None)
    unadapted = confidence_features(np.zeros(len(raw.ids)), raw.features[raw_positions])
    top = features[0] if len(features) else np.zeros(len(FEATURE_NAMES), dtype=np.float32)
    facts = dict(zip(COMMITTED, committed.tolist(), strict=True))
    facts |= dict(zip(RAW, unadapted[:3].tolist(), strict=True))
    facts |= {
        "top_bm25_idf_matched": float(top[_COLUMN["bm25_idf_matched"]]),
        "request_idf_unknown": float(top[_COLUMN["request_idf_unknown"]]),
        "top_catalog_share": float(top[_COLUMN["catalog_share_of_top"]]),
        "log_request_words": math.log1p(float(top[_COLUMN["request_words"]])),
    }
    return facts, best_cosine(item.features)


Rows = tuple[list[dict[str, float]], NDArray[np.float64], NDArray[np.float64]]


def rows(
    items: Sequence[Shortlisted],
    raw: Sequence[Shortlisted],
    score: Callable[[Shortlisted], NDArray[np.float64]],
) -> Rows:
    """Facts, best cosines and answerability (1 / 0) of `items`."""
    unadapted = {_key(i): i for i in raw}
    facts, cosines, answerable = [], [], []
    for item in items:
        values, cosine = facts_of(item, score(item), unadapted[_key(item)])
        facts.append(values)
        cosines.append(cosine)
        answerable.append(1.0 if item.answerable else 0.0)
    return facts, np.asarray(cosines), np.asarray(answerable)


def matrix(facts: list[dict[str, float]], names: Sequence[str]) -> NDArray[np.float64]:
    return np.asarray([[f[n] for n in names] for f in facts], dtype=np.float64)


def rates(flagged: NDArray[np.bool_], answerable: NDArray[np.float64]) -> str:
    unanswerable = answerable == 0.0
    left = f"{flagged[unanswerable].mean() * 100:.1f}" if unanswerable.any() else "—"
    return f"{left} / {flagged[~unanswerable].mean() * 100:.1f}"


def main() -> None:
    run = tuning_run(__doc__.splitlines()[0])
    datasets, embedder = run.datasets, run.embedder
    result = train(embedder, datasets=datasets, workdir=run.workdir, raw=True)
    assert result.raw_tuning is not None
    tuning = [i for items in result.tuning.values() for i in items]
    raw_tuning = [i for items in result.raw_tuning.values() for i in items]
    # Calibration as `fit_stage` does it: cross-fitted ranker scores, on the sets that have
    # unanswerable copies.
    cross = dict(zip(map(_key, tuning), cross_fitted_scores(tuning, ALL_COLUMNS), strict=True))
    with_copies = {i.dataset for i in tuning if not i.answerable}
    calibration = rows(
        [i for i in tuning if i.dataset in with_copies], raw_tuning, lambda i: cross[_key(i)]
    )
    floor = cosine_floor(tuning)
    stage: LearnedStage = result.stage
    held_out: dict[str, Rows] = {}
    for name in REPORT_SETS:
        corpus = Corpus(name, embedder, datasets=datasets, workdir=run.workdir)
        try:
            adapted = corpus.shortlists(stage.adapter)
            raw = corpus.shortlists(None)
        finally:
            corpus.close()
        held_out[name] = rows(adapted, raw, lambda i: stage.score(i.features))
    lines = [
        "# weak_match: which facts it reads",
        "",
        run.header("bench.weak_facts"),
        "",
        "Each variant: the logistic classifier fitted on the tuning sets with unanswerable "
        f"copies ({', '.join(sorted(with_copies))}, cross-fitted ranker scores), answers under "
        f"the cosine floor {floor:.4f} flagged, and the threshold that flags at most 5% of "
        "those answerable tuning requests; then the same classifier on the held-out sets' "
        "shortlists. Cells: unanswerable flagged / answerable flagged, in percent (— where a "
        "set of one catalog has no unanswerable copies).",
        "",
        "| facts | tuning | " + " | ".join(REPORT_SETS) + " |",
        "| --- | --- | " + " | ".join("---" for _ in REPORT_SETS) + " |",
    ]
    for label, names in VARIANTS.items():
        facts, cosines, answerable = calibration
        x = matrix(facts, names)
        mean, scale, coef, intercept = fit_logistic(x, answerable)
        probability = WeakMatch(mean, scale, coef, intercept, 0.5).probability(x)
        point = choose_threshold(np.where(cosines < floor, -1.0, probability), answerable)
        weak = WeakMatch(mean, scale, coef, intercept, point.threshold, floor)
        cells = [f"{point.flagged_unanswerable * 100:.1f} / {point.flagged_answerable * 100:.1f}"]
        for held_facts, held_cosines, held_answerable in held_out.values():
            flagged = (weak.probability(matrix(held_facts, names)) < weak.threshold) | (
                held_cosines < floor
            )
            cells.append(rates(flagged, held_answerable))
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    emit(lines, run.out)


if __name__ == "__main__":
    main()
