"""Whether word windows of the request, blended by the first stage as intents of their own,
help the learned stage: judged across the tuning splits.

`bench.window_vectors` gave the ranker columns read from windows of the request, and it gained
nothing. This asks the question one stage earlier: the first stage blends the whole request
and each clause (dense and BM25 each) and keeps each one's best candidate, so windows made
intents can bring into the shortlist a tool that only one part of a long request asks for,
and move every per-intent feature. The windows are `bench.window_vectors`' (WINDOW_WORDS
words, one every STRIDE_WORDS), pooled from the same model pass as the clauses, after the
clauses (the ranker's clause count then counts them too). The shortlists are made as `make
train` makes them, then with the windows; each
variant's ranker is fitted on two tuning sets and scored on the third. The first columns
give the share of each tuning set's gold tools the first stage's shortlist holds at all.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from bench.tables import emit, left_out_cells, left_out_table, ranker_fit
from bench.tuning import tuning_run
from bench.window_vectors import word_windows
from indexer.evaluation.datasets import TUNING_SETS
from indexer.evaluation.learning import Shortlisted
from indexer.retrieval.fusion import split_intents
from registry.training import ALL_COLUMNS, train


def clauses_and_windows(text: str) -> list[str]:
    """The request's clauses as served, then its word windows that are not one of them."""
    clauses = split_intents(text)
    windows = [text[start:end] for start, end in word_windows(text)]
    return [*clauses, *(w for w in dict.fromkeys(windows) if w not in clauses)]


def shortlist_recall(items: Sequence[Shortlisted]) -> float:
    """Percent of the gold tools in the shortlist, macro over answerable requests."""
    judged = [item for item in items if item.answerable and item.relevant]
    if not judged:
        raise ValueError("no answerable request to judge")
    held = [len(item.relevant & set(item.ids)) / len(item.relevant) for item in judged]
    return 100 * sum(held) / len(judged)


def recall_cells(variants: Mapping[str, Mapping[str, Sequence[Shortlisted]]]) -> list[str]:
    """Markdown rows: each variant's shortlist recall and mean shortlist length per set."""
    lines = [
        "| shortlists | " + " | ".join(TUNING_SETS) + " |",
        "| --- | " + " | ".join("---" for _ in TUNING_SETS) + " |",
    ]
    for label, sets in variants.items():
        cells = []
        for name in TUNING_SETS:
            answerable = [item for item in sets[name] if item.answerable]
            size = sum(len(item.ids) for item in answerable) / max(len(answerable), 1)
            cells.append(f"{shortlist_recall(sets[name]):.2f}% held, {size:.1f} tools")
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return lines


def main() -> None:
    run = tuning_run(__doc__.splitlines()[0])
    served = train(run.embedder, datasets=run.datasets, workdir=run.workdir).tuning
    windows = train(
        run.embedder, datasets=run.datasets, workdir=run.workdir, intents=clauses_and_windows
    ).tuning
    fit = ranker_fit(list(ALL_COLUMNS))
    as_served = "as `make train` (clauses)"
    with_windows = "clauses and word windows"
    cells = {
        **left_out_cells(served, {as_served: fit}),
        **left_out_cells(windows, {with_windows: fit}),
    }
    lines = [
        "# Word windows as first-stage intents, judged across the tuning splits",
        "",
        run.header("bench.window_intents"),
        "",
        "Answerable requests. What the first stage's shortlist holds:",
        "",
        *recall_cells({as_served: served, with_windows: windows}),
        "",
        "The ranker (every feature, settings as `make train`) fitted on the other two tuning "
        "sets' shortlists of the same variant, scored on this one's; P@1 / R@5 in percent.",
        "",
        *left_out_table("intents", cells),
    ]
    emit(lines, run.out)


if __name__ == "__main__":
    main()
