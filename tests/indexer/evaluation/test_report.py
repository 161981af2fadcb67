"""Reports per kind of request: each kind's own figures beside the whole set's."""

from __future__ import annotations

import matplotlib.pyplot as plt
from matplotlib.colors import to_hex

from indexer.evaluation.labeled_sets import LabeledQuery
from indexer.evaluation.report import CURVE_KS, Answer, Report, format_kinds, recall_figure, run

QUERIES = (
    LabeledQuery(
        id="p1",
        query="undo yesterday's deploy",
        relevant=frozenset({"k/rollout"}),
        kind="paraphrase",
    ),
    LabeledQuery(
        id="p2", query="more copies of the api", relevant=frozenset({"k/scale"}), kind="paraphrase"
    ),
    LabeledQuery(
        id="m1",
        query="scale up and tail the logs",
        relevant=frozenset({"k/scale", "k/logs"}),
        kind="multi",
    ),
    LabeledQuery(id="n1", query="order a pizza", relevant=frozenset(), kind="none"),
    LabeledQuery(id="n2", query="book a flight", relevant=frozenset(), kind="none"),
)
ANSWERS = {
    "undo yesterday's deploy": Answer(
        ranked=("k/rollout", "k/scale"), returned=("k/rollout",), weak=False
    ),
    "more copies of the api": Answer(ranked=("k/logs", "k/scale"), returned=("k/logs",), weak=True),
    "scale up and tail the logs": Answer(
        ranked=("k/scale", "k/logs"), returned=("k/scale", "k/logs"), weak=False
    ),
    "order a pizza": Answer(ranked=("k/logs",), returned=("k/logs",), weak=True),
    "book a flight": Answer(ranked=("k/scale",), returned=("k/scale",), weak=False),
}


def test_each_kind_is_scored_on_its_own_queries() -> None:
    report = run("set", "default", 3, QUERIES, ANSWERS.__getitem__, ks=(1, 5))
    paraphrase = report.by_kind["paraphrase"]
    assert paraphrase["queries"] == 2
    assert paraphrase["precision@1"] == 0.5
    assert paraphrase["recall@5"] == 1.0
    assert paraphrase["flagged_weak"] == 0.5
    assert report.by_kind["multi"]["recall@5"] == 1.0
    # A "none" kind has no gold to rank: its figure is how often it was flagged.
    assert report.by_kind["none"] == {"queries": 2, "flagged_weak": 0.5}
    assert report.none["flagged_weak"] == 0.5
    assert report.none["false_weak_rate"] == 1 / 3


def test_a_set_without_kinds_reports_none_and_keeps_its_json() -> None:
    plain = tuple(
        LabeledQuery(id=q.id, query=q.query, relevant=q.relevant) for q in QUERIES if q.relevant
    )
    report = run("set", "default", 3, plain, ANSWERS.__getitem__, ks=(1, 5))
    assert report.by_kind == {}
    assert "by_kind" not in report.to_json()
    assert format_kinds([report]) == ""


def test_the_kind_table_has_a_column_pair_per_answerable_kind_and_one_for_none() -> None:
    report = run("set", "default", 3, QUERIES, ANSWERS.__getitem__, ks=(1, 5))
    header, _, row = format_kinds([report]).splitlines()
    assert header == (
        "| retriever | multi P@1 | multi R@5 | none flagged | paraphrase P@1 | paraphrase R@5 "
        "| answerable flagged |"
    )
    assert row == "| default | 100.00 | 100.00 | 50.00 | 50.00 | 100.00 | 33.33 |"


# `make eval`'s thirteen retrievers, in its order.
EVAL_RETRIEVERS = [
    "bm25",
    "dense",
    "hybrid-blend",
    "hybrid-no-lexical",
    "hybrid-no-intents",
    "hybrid-no-catalog",
    "hybrid-no-cut",
    "hybrid-no-literal",
    "hybrid-clauses-apart",
    "hybrid-z",
    "hybrid-minmax",
    "hybrid-rrf",
    "default",
]


def _report(retriever: str, level: float = 0.5) -> Report:
    curve = {k: level * k / 10 for k in CURVE_KS}
    return Report(
        dataset="set",
        retriever=retriever,
        tools=10,
        queries=5,
        metrics={},
        none={},
        recall_curve=curve,
    )


def test_a_full_run_plots_the_headline_retrievers_each_in_its_own_colour() -> None:
    figure = recall_figure([_report(name) for name in EVAL_RETRIEVERS])
    try:
        [axes] = figure.axes
        lines = axes.get_lines()
        labels = [line.get_label() for line in lines]
        assert labels == ["default (served)", "bm25", "dense", "hybrid-blend", "hybrid-rrf"]
        colours = [to_hex(line.get_color()) for line in lines]
        assert len(set(colours)) == len(colours)
        # What is served stands out: the heaviest line, drawn over the others.
        served = lines[0]
        assert all(served.get_linewidth() > line.get_linewidth() for line in lines[1:])
        assert all(served.get_zorder() > line.get_zorder() for line in lines[1:])
        # The ones left out are counted, not dropped silently.
        assert any("8 more retrievers" in text.get_text() for text in axes.texts)
    finally:
        plt.close(figure)


def test_the_legend_sits_beside_the_curves_not_over_them() -> None:
    figure = recall_figure([_report(name) for name in EVAL_RETRIEVERS])
    try:
        [axes] = figure.axes
        renderer = figure.canvas.get_renderer()  # type: ignore[attr-defined]  # Agg has one
        legend = axes.get_legend()
        assert legend is not None
        legend_box = legend.get_window_extent(renderer)
        plot_box = axes.get_window_extent(renderer)
        assert legend_box.x0 >= plot_box.x1
    finally:
        plt.close(figure)


def test_a_small_run_is_plotted_whole_without_a_shared_colour() -> None:
    names = ["hybrid-z", "hybrid-minmax", "bm25", "default", "hybrid-no-cut", "hybrid-no-lexical"]
    figure = recall_figure([_report(name) for name in names])
    try:
        lines = figure.axes[0].get_lines()
        assert len(lines) == len(names)
        colours = [to_hex(line.get_color()) for line in lines]
        assert len(set(colours)) == len(colours)
        assert lines[0].get_label() == "default (served)"
        assert len(figure.axes[0].texts) == 0
    finally:
        plt.close(figure)


def test_a_report_comes_back_from_its_json() -> None:
    report = _report("dense")
    assert Report.from_json(report.to_json()) == report
