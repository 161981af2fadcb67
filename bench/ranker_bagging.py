"""Whether averaging rankers grown on subsamples carries better from one tuning set to another.

A lever for the learned stage, judged inside the tuning splits as `bench.cross_set_ablation`
judges feature groups: each variant is fitted on two tuning sets and scored on the third. A
bag averages the scores of rankers that differ only in their seed, each grown on 80% of the
rows and 80% of the features per tree (LightGBM's bagging and feature fractions). It would be
adopted if it raised P@1 and R@5 on every left-out set.
"""

from __future__ import annotations

import functools

import numpy as np

from bench.tables import emit, left_out_cells, left_out_table
from bench.tuning import tuning_run
from indexer.evaluation.learning import RANKER_PARAMS, Scorer, Shortlisted, fit_ranker
from indexer.retrieval.learned import LearnedStage
from registry.training import ALL_COLUMNS, train

SUBSAMPLE = {"bagging_fraction": 0.8, "bagging_freq": 1, "feature_fraction": 0.8}
# (label, rankers in the bag, subsampled)
VARIANTS = (
    ("one ranker (as `make train`)", 1, False),
    ("one ranker, subsampled", 1, True),
    ("bag of 3, subsampled", 3, True),
    ("bag of 5, subsampled", 5, True),
)


def bag(items: list[Shortlisted], size: int, subsampled: bool) -> Scorer:
    """The mean score of `size` rankers fitted on `items`, seeds counted up from the default."""
    seed = int(str(RANKER_PARAMS["seed"]))
    stages = [
        LearnedStage(
            fit_ranker(
                items,
                ALL_COLUMNS,
                params={**(SUBSAMPLE if subsampled else {}), "seed": seed + b},
            ),
            ALL_COLUMNS,
            None,
        )
        for b in range(size)
    ]
    return lambda features: np.mean([s.score(features) for s in stages], axis=0)


def main() -> None:
    run = tuning_run(__doc__.splitlines()[0])
    tuning = train(run.embedder, datasets=run.datasets, workdir=run.workdir).tuning
    cells = left_out_cells(
        tuning,
        {
            label: functools.partial(bag, size=size, subsampled=subsampled)
            for label, size, subsampled in VARIANTS
        },
    )
    lines = [
        "# Bagged rankers, judged across the tuning splits",
        "",
        run.header("bench.ranker_bagging"),
        "",
        "Each column: the variant fitted on the other two tuning sets (all features, all other "
        "settings as `make train`), scored on this one's adapted shortlists; P@1 / R@5 in "
        "percent. Subsampled: each tree sees 80% of the rows and 80% of the features.",
        "",
        *left_out_table("variant", cells),
    ]
    emit(lines, run.out)


if __name__ == "__main__":
    main()
