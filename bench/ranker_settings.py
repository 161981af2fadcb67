"""Whether other settings of the ranker carry better from one tuning set to another.

The ranker's settings were chosen a priori (indexer.evaluation.learning.RANKER_PARAMS). This
judges one change at a time inside the tuning splits, as `bench.cross_set_ablation` judges
feature groups: each variant is fitted on two tuning sets and scored on the third. The first
stage's shortlists already hold almost every gold tool (`bench.window_intents`), so the
order the ranker gives them is what R@5 turns on. A setting would be adopted if it raised P@1
and R@5 on every left-out set under two kernel sets (decision 0060).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from bench.tables import Fit, emit, left_out_cells, left_out_table, ranker_fit
from bench.tuning import tuning_run
from indexer.evaluation.learning import RANKER_PARAMS, ROUNDS
from registry.training import ALL_COLUMNS, train


@dataclass(kw_only=True, frozen=True)
class Setting:
    label: str
    # LightGBM parameters that replace RANKER_PARAMS' (none: as `make train`).
    params: Mapping[str, object] = field(default_factory=dict)
    rounds: int = ROUNDS

    def fit(self) -> Fit:
        return ranker_fit(ALL_COLUMNS, rounds=self.rounds, params=self.params)


SETTINGS: tuple[Setting, ...] = (
    Setting(label="as `make train`"),
    Setting(label=f"{ROUNDS // 2} rounds", rounds=ROUNDS // 2),
    Setting(label=f"{ROUNDS * 2} rounds", rounds=ROUNDS * 2),
    Setting(label="7 leaves, depth 3", params={"num_leaves": 7, "max_depth": 3}),
    Setting(label="31 leaves", params={"num_leaves": 31}),
    Setting(label="20 rows a leaf at least", params={"min_data_in_leaf": 20}),
    Setting(label="80 rows a leaf at least", params={"min_data_in_leaf": 80}),
    Setting(label="pairs within the first 5", params={"lambdarank_truncation_level": 5}),
    Setting(label="rank_xendcg objective", params={"objective": "rank_xendcg"}),
)


def main() -> None:
    run = tuning_run(__doc__.splitlines()[0])
    tuning = train(run.embedder, datasets=run.datasets, workdir=run.workdir).tuning
    cells = left_out_cells(tuning, {s.label: s.fit() for s in SETTINGS})
    settings = ", ".join(
        f"{k} {v}" for k, v in RANKER_PARAMS.items() if k not in ("verbosity", "num_threads")
    )
    lines = [
        "# The ranker's settings, one change at a time, judged across the tuning splits",
        "",
        run.header("bench.ranker_settings"),
        "",
        f"As `make train`: {ROUNDS} rounds, {settings}. Each column: the variant fitted on the "
        "other two tuning sets (all features), scored on this one's adapted shortlists; P@1 / "
        "R@5 in percent.",
        "",
        *left_out_table("setting", cells),
    ]
    emit(lines, run.out)


if __name__ == "__main__":
    main()
