"""Which feature groups the learned stage should read, judged on the tuning splits alone.

`make ablation` scores each left-out group on the held-out sets, which may be read but never
tuned on. This asks the same question inside the tuning splits: the ranker is fitted on two of
the three tuning sets, without one feature group at a time, and scored on the third. A group
worth dropping would raise P@1 and R@5 on every left-out set.
"""

from __future__ import annotations

from capreg.training.left_out import emit, left_out_cells, left_out_table, ranker_fit
from capreg.training.stage import ALL_COLUMNS, train
from capreg.training.tuning import tuning_run
from indexer.retrieval.features import FeatureGroup, columns_of


def main() -> None:
    run = tuning_run(__doc__.splitlines()[0])
    datasets, embedder = run.datasets, run.embedder
    # Each set's shortlists as training makes them: mapped by the query adapter fitted on
    # the other two sets.
    tuning = train(embedder, datasets=datasets, workdir=run.workdir).tuning
    variants = {"all features": list(ALL_COLUMNS)}
    for group in FeatureGroup:
        variants[f"without {group.value}"] = [
            c for c in ALL_COLUMNS if c not in columns_of([group])
        ]
    fits = {name: ranker_fit(columns) for name, columns in variants.items()}
    cells = left_out_cells(tuning, fits)
    lines = [
        "# The learned stage's feature groups, judged across the tuning splits",
        "",
        run.header("capreg.training.cross_set_ablation"),
        "",
        "Each column: the ranker fitted on the other two tuning sets (answerable requests, all "
        "settings as `make train`), scored on this one's shortlists (its requests mapped by the "
        "query adapter fitted on the other two, as `make train` makes them); P@1 / R@5 in "
        "percent.",
        "",
        *left_out_table("variant", cells),
    ]
    emit(lines, run.out)


if __name__ == "__main__":
    main()
