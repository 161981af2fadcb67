"""How strongly the query adapter may move requests, judged on the tuning splits alone.

The adapter (indexer.retrieval.adapter) is fitted on two of the three tuning sets with each
penalty in turn and scored by dense retrieval alone on the third, whose corpus it has not
seen. The committed penalty (`capreg.training.adapting.PENALTY`) is the one that raises
P@1 and R@5 most evenly on every left-out set.
"""

from __future__ import annotations

from capreg.training.adapting import PENALTY, AdapterSet, dense_metrics, fit_adapter
from capreg.training.corpus import Corpus
from capreg.training.left_out import emit, left_out_table
from capreg.training.tuning import tuning_run
from indexer.evaluation.datasets import TUNING_SETS

PENALTIES = (0.001, 0.01, 0.03, 0.1, 0.3)


def main() -> None:
    run = tuning_run(__doc__.splitlines()[0])
    datasets, embedder = run.datasets, run.embedder
    sets: dict[str, AdapterSet] = {}
    for name in TUNING_SETS:
        corpus = Corpus(name, embedder, datasets=datasets, workdir=run.workdir)
        try:
            sets[name] = corpus.adapter_set()
        finally:
            corpus.close()

    def cell(metrics: dict[str, float]) -> str:
        return f"{metrics['precision@1']:.2f} / {metrics['recall@5']:.2f}"

    rows = {"dense, no adapter": [cell(dense_metrics(sets[n], None)) for n in TUNING_SETS]}
    for penalty in PENALTIES:
        label = f"penalty {penalty}" + (" (committed)" if penalty == PENALTY else "")
        rows[label] = []
        for held in TUNING_SETS:
            others = [sets[n] for n in TUNING_SETS if n != held]
            adapter = fit_adapter(others, embedder.model_id, penalty=penalty)
            rows[label].append(cell(dense_metrics(sets[held], adapter)))
            print(label, held, rows[label][-1], flush=True)
    lines = [
        "# The query adapter's penalty, judged across the tuning splits",
        "",
        run.header("capreg.training.adapter_penalty"),
        "",
        "Each column: dense retrieval alone on that tuning set, with the adapter fitted on the "
        "other two (all settings as `make train` but the penalty); P@1 / R@5 in percent.",
        "",
        *left_out_table("adapter", rows),
    ]
    emit(lines, run.out)


if __name__ == "__main__":
    main()
