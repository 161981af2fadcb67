"""Reports per kind of request: each kind's own figures beside the whole set's."""

from __future__ import annotations

from indexer.evaluation.labeled_sets import LabeledQuery
from indexer.evaluation.report import Answer, format_kinds, run

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
