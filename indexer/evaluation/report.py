"""Scores a search function against labeled queries: answers in, metric reports out."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tqdm import tqdm

from indexer.evaluation.datasets import LabeledQuery
from indexer.evaluation.metrics import KS, evaluate, mean_scores, recall_at_k, score_steps

if TYPE_CHECKING:  # matplotlib is imported only when a plot is drawn
    from matplotlib.figure import Figure

CURVE_KS = tuple(range(1, 11))
# Columns of the readable table, in order.
TABLE_COLUMNS = (
    "precision@1",
    "recall@1",
    "recall@3",
    "f1@3",
    "recall@5",
    "f1@5",
    "recall@10",
    "ndcg@10",
    "mrr",
    "precision@returned",
    "recall@returned",
    "f1@returned",
)


@dataclass(kw_only=True, frozen=True)
class Answer:
    """What the registry answered for one query."""

    # The best ids, at least max(KS) deep when the registry has that many.
    ranked: tuple[str, ...]
    # What a default request returns (its limit and any confidence cut).
    returned: tuple[str, ...]
    # Whether the registry flagged "no good match".
    weak: bool


Searcher = Callable[[str], Answer]


@dataclass(kw_only=True)
class Report:
    dataset: str
    retriever: str
    tools: int
    queries: int
    metrics: dict[str, float]
    none: dict[str, float | int]
    recall_curve: dict[int, float]
    per_query: list[dict[str, Any]] = field(default_factory=list)
    # Per request kind, where the set labels kinds: the metrics over that kind's answerable
    # queries, and how often its queries were flagged weak (for "none", the catch rate).
    by_kind: dict[str, dict[str, float]] = field(default_factory=dict)

    def to_json(self, *, per_query: bool = False) -> dict[str, Any]:
        summary = {
            "dataset": self.dataset,
            "tools": self.tools,
            "queries": self.queries,
            "retriever": self.retriever,
            "metrics": self.metrics,
            "none": self.none,
            "recall_curve": {str(k): v for k, v in self.recall_curve.items()},
        }
        if self.by_kind:
            summary["by_kind"] = self.by_kind
        return {**summary, "per_query": self.per_query} if per_query else summary

    @classmethod
    def from_json(cls, item: Mapping[str, Any]) -> Report:
        """A report back from `to_json`'s output (a plot can be redrawn without a rerun)."""
        return cls(
            dataset=item["dataset"],
            retriever=item["retriever"],
            tools=item["tools"],
            queries=item["queries"],
            metrics=dict(item["metrics"]),
            none=dict(item["none"]),
            recall_curve={int(k): v for k, v in item["recall_curve"].items()},
            per_query=list(item.get("per_query", [])),
            by_kind=dict(item.get("by_kind", {})),
        )


def run(
    dataset: str,
    retriever: str,
    tools: int,
    queries: Sequence[LabeledQuery],
    search: Searcher,
    *,
    ks: Sequence[int] = KS,
    progress: bool = False,
) -> Report:
    """Asks `search` every query and scores the answers (macro averages over queries).

    Queries with an empty gold set ("nothing here serves this") are scored apart: how often
    the registry flags them as weak, against how often it flags answerable queries.
    """
    judged = []
    per_query = []
    stepwise: list[dict[str, float]] = []
    weak_on_none = weak_on_answerable = none_count = 0
    kinds: dict[str, list[tuple[Answer, frozenset[str]]]] = {}
    for query in tqdm(queries, desc=f"{dataset} {retriever}", disable=not progress, unit="q"):
        if query.steps:
            # One search per annotated step, as an agent using the bridge makes them.
            steps = [search(step) for step in query.steps]
            stepwise.append(
                score_steps(
                    [s.ranked for s in steps], query.relevant, [s.returned for s in steps], ks
                )
            )
            per_query.append(
                {
                    "id": query.id,
                    "relevant": sorted(query.relevant),
                    "steps": [
                        {
                            "step": text,
                            "ranked": list(s.ranked[: max(ks)]),
                            "returned": list(s.returned),
                        }
                        for text, s in zip(query.steps, steps, strict=True)
                    ],
                }
            )
            continue
        answer = search(query.query)
        per_query.append(
            {
                "id": query.id,
                "relevant": sorted(query.relevant),
                "ranked": list(answer.ranked[: max(ks)]),
                "returned": list(answer.returned),
                "weak": answer.weak,
            }
        )
        kinds.setdefault(query.kind, []).append((answer, query.relevant))
        if not query.relevant:
            none_count += 1
            weak_on_none += answer.weak
            continue
        weak_on_answerable += answer.weak
        judged.append((answer.ranked, query.relevant, answer.returned))
    if stepwise:
        return _stepwise_report(dataset, retriever, tools, queries, stepwise, per_query)
    answerable = len(judged)
    metrics = evaluate(judged, ks) if judged else {}
    curve = {
        k: sum(recall_at_k(r, g, k) for r, g, _ in judged) / answerable if answerable else 0.0
        for k in CURVE_KS
    }
    none: dict[str, float | int] = {
        "queries": none_count,
        "flagged_weak": weak_on_none / none_count if none_count else 0.0,
        "false_weak_rate": weak_on_answerable / answerable if answerable else 0.0,
    }
    return Report(
        dataset=dataset,
        retriever=retriever,
        tools=tools,
        queries=answerable,
        metrics=metrics,
        none=none,
        recall_curve=curve,
        per_query=per_query,
        by_kind=kind_figures(kinds, ks) if set(kinds) != {""} else {},
    )


def kind_figures(
    kinds: dict[str, list[tuple[Answer, frozenset[str]]]], ks: Sequence[int]
) -> dict[str, dict[str, float]]:
    """Per kind: its query count, the share flagged weak, and (for answerable kinds) the
    metrics over its queries."""
    figures: dict[str, dict[str, float]] = {}
    for kind, answered in sorted(kinds.items()):
        judged = [(a.ranked, gold, a.returned) for a, gold in answered if gold]
        figures[kind or "unlabelled"] = {
            "queries": float(len(answered)),
            "flagged_weak": sum(a.weak for a, _ in answered) / len(answered),
            **(evaluate(judged, ks) if judged else {}),
        }
    return figures


def format_kinds(reports: Iterable[Report]) -> str:
    """A markdown table of the per-kind figures: P@1 and R@5 per answerable kind, the share
    of each kind flagged weak."""
    rows = [r for r in reports if r.by_kind]
    if not rows:
        return ""
    kinds = list(rows[0].by_kind)
    header = ["retriever"]
    for kind in kinds:
        header += [f"{kind} flagged"] if kind == "none" else [f"{kind} P@1", f"{kind} R@5"]
    header.append("answerable flagged")
    lines = ["| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
    for report in rows:
        cells = [report.retriever]
        for kind in kinds:
            figures = report.by_kind.get(kind, {})
            wanted = ["flagged_weak"] if kind == "none" else ["precision@1", "recall@5"]
            cells += [f"{figures[w] * 100:.2f}" if w in figures else "—" for w in wanted]
        cells.append(f"{report.none['false_weak_rate'] * 100:.2f}")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _stepwise_report(
    dataset: str,
    retriever: str,
    tools: int,
    queries: Sequence[LabeledQuery],
    stepwise: list[dict[str, float]],
    per_query: list[dict[str, Any]],
) -> Report:
    if len(stepwise) != len(queries):
        raise ValueError(f"{dataset}: a step-wise set needs steps on every query")
    metrics = mean_scores(stepwise)
    return Report(
        dataset=dataset,
        retriever=retriever,
        tools=tools,
        queries=len(stepwise),
        metrics=metrics,
        none={"queries": 0, "flagged_weak": 0.0, "false_weak_rate": 0.0},
        recall_curve={k: metrics[f"recall@{k}"] for k in CURVE_KS if f"recall@{k}" in metrics},
        per_query=per_query,
    )


def format_table(reports: Iterable[Report], *, percent: bool = True) -> str:
    """A markdown table, one row per report (values in percent with two decimals)."""
    rows = list(reports)
    header = "| retriever | " + " | ".join(TABLE_COLUMNS) + " |"
    lines = [header, "|" + " --- |" * (len(TABLE_COLUMNS) + 1)]
    for report in rows:
        values = [report.metrics.get(column) for column in TABLE_COLUMNS]
        # A metric the protocol does not define (nDCG of a step-wise union) is shown as such.
        shown = [
            "—" if v is None else (f"{v * 100:.2f}" if percent else f"{v:.4f}") for v in values
        ]
        lines.append(f"| {report.retriever} | " + " | ".join(shown) + " |")
    return "\n".join(lines)


def write_json(reports: Sequence[Report], path: Path, *, per_query: bool = False) -> None:
    items = [r.to_json(per_query=per_query) for r in reports]
    payload: Any = items[0] if len(items) == 1 else items
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(payload, indent=2, ensure_ascii=False))


# The retrievers a recall plot draws when a run has more than MAX_SERIES (`make eval` runs
# thirteen): what is served, the blend without the learned stage, the fusion it is measured
# against, and the two single signals. The ablations stay in the tables. Okabe-Ito colours,
# told apart with colour vision deficiencies, and a marker each; what is served is black and
# heavier, drawn on top.
HEADLINE_SERIES: dict[str, tuple[str, str]] = {
    "default": ("#000000", "o"),
    "hybrid-blend": ("#0072B2", "s"),
    "hybrid-rrf": ("#009E73", "^"),
    "dense": ("#E69F00", "D"),
    "bm25": ("#CC79A7", "v"),
}
# A run of at most this many retrievers is drawn whole (an ad hoc comparison).
MAX_SERIES = 6
# For retrievers outside the headline, in a run drawn whole: enough that none shares a colour.
SPARE_SERIES = (
    ("#D55E00", "P"),
    ("#56B4E9", "X"),
    ("#8C564B", "h"),
    ("#7F7F7F", "<"),
    ("#BCBD22", ">"),
)
SERVED = "default"


def plotted(reports: Sequence[Report]) -> list[tuple[Report, str, str]]:
    """The reports a recall plot draws, each with its colour and marker: every one when there
    are at most MAX_SERIES, else the headline ones; `default` first, then in run order."""
    shown = (
        list(reports)
        if len(reports) <= MAX_SERIES
        else [r for r in reports if r.retriever in HEADLINE_SERIES]
    )
    shown.sort(key=lambda r: r.retriever != SERVED)
    spare = iter(SPARE_SERIES)
    styled = []
    for report in shown:
        colour, marker = HEADLINE_SERIES.get(report.retriever) or next(spare)
        styled.append((report, colour, marker))
    return styled


def recall_figure(reports: Sequence[Report]) -> Figure:
    """Recall@k for k = 1..10, one line per plotted report (see `plotted`), the legend beside
    the axes rather than over the curves."""
    import matplotlib

    matplotlib.use("Agg")  # files only: no display here
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(7.6, 4.2))
    for report, colour, marker in plotted(reports):
        served = report.retriever == SERVED
        ks = list(report.recall_curve)
        axes.plot(
            ks,
            [report.recall_curve[k] * 100 for k in ks],
            color=colour,
            marker=marker,
            linewidth=2.8 if served else 1.4,
            markersize=6 if served else 4.5,
            zorder=3 if served else 2,
            label=f"{report.retriever} (served)" if served else report.retriever,
        )
    axes.set_xlabel("k")
    axes.set_ylabel("Recall@k (%)")
    axes.set_title(f"{reports[0].dataset}: {reports[0].queries} queries, {reports[0].tools} tools")
    axes.set_xticks(list(CURVE_KS))
    axes.grid(alpha=0.3)
    axes.legend(
        title="retriever",
        loc="upper left",
        bbox_to_anchor=(1.02, 1.0),
        borderaxespad=0.0,
        frameon=False,
    )
    left_out = len(reports) - len(axes.get_lines())
    if left_out:
        axes.annotate(
            f"{left_out} more retrievers:\nsee the table",
            xy=(1.02, 0.0),
            xycoords="axes fraction",
            va="bottom",
            fontsize=8,
            color="#555555",
        )
    figure.tight_layout()
    return figure


def plot_recall(reports: Sequence[Report], path: Path) -> None:
    """Writes `recall_figure(reports)` to `path` as a PNG."""
    import matplotlib.pyplot as plt

    figure = recall_figure(reports)
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=120, bbox_inches="tight")
    plt.close(figure)
