"""What the tuning-split benches share for their tables: each variant fitted on two tuning
sets and scored on the third, one column per tuning set left out."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from capreg.training.learning import (
    ROUNDS,
    Scorer,
    Shortlisted,
    fit_ranker,
    offline_metrics,
)
from indexer.evaluation.datasets import TUNING_SETS
from indexer.retrieval.features import FEATURE_NAMES
from indexer.retrieval.learned import LearnedStage

# A variant: what it scores with, fitted on the shortlists of the other tuning sets.
Fit = Callable[[list[Shortlisted]], Scorer]


def ranker_fit(
    columns: Sequence[int],
    feature_names: Sequence[str] = FEATURE_NAMES,
    *,
    rounds: int = ROUNDS,
    params: Mapping[str, object] | None = None,
) -> Fit:
    """The ranker over `columns`, fitted as `make train` fits it (`feature_names` name the
    columns a bench appends; `rounds` and `params` change its settings)."""

    def fit(items: list[Shortlisted]) -> Scorer:
        ranker = fit_ranker(items, columns, rounds, params=params, feature_names=feature_names)
        return LearnedStage(ranker, tuple(columns), None).score

    return fit


def left_out_cells(
    shortlists: Mapping[str, Sequence[Shortlisted]], variants: Mapping[str, Fit]
) -> dict[str, list[str]]:
    """Each variant fitted on two tuning sets and scored on the third: "P@1 / R@5" in
    percent, one cell per TUNING_SETS entry left out."""
    cells: dict[str, list[str]] = {label: [] for label in variants}
    for held in TUNING_SETS:
        fitted_on = [item for name in TUNING_SETS if name != held for item in shortlists[name]]
        for label, fit in variants.items():
            scores = offline_metrics(shortlists[held], fit(fitted_on))
            cells[label].append(
                f"{scores['precision@1'] * 100:.2f} / {scores['recall@5'] * 100:.2f}"
            )
    return cells


def left_out_table(first: str, rows: dict[str, list[str]]) -> list[str]:
    """Markdown rows: `first` heads the label column, then one column per TUNING_SETS entry
    (the set scored, fitted on the other two)."""
    return [
        f"| {first} | " + " | ".join(f"{name} left out" for name in TUNING_SETS) + " |",
        "| --- | " + " | ".join("---" for _ in TUNING_SETS) + " |",
        *(f"| {label} | " + " | ".join(cells) + " |" for label, cells in rows.items()),
    ]


def emit(lines: list[str], out: Path | None) -> None:
    """Prints the report and writes it to `out` when given."""
    text = "\n".join(lines) + "\n"
    print(text)
    if out:
        out.write_text(text, encoding="utf-8")
