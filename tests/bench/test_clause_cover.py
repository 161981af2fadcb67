"""How bench.clause_cover reads the two orders' figures and counts the requests they differ on."""

from __future__ import annotations

from bench.clause_cover import figures, moved


def _answer(ranked: list[str], relevant: list[str]) -> dict[str, object]:
    return {"id": "+".join(ranked), "ranked": ranked, "relevant": relevant}


def test_figures_are_p_at_1_then_recall_at_3_5_10_in_percent() -> None:
    metrics = {"precision@1": 0.5, "recall@3": 0.25, "recall@5": 0.75, "recall@10": 1.0}
    assert figures({**metrics, "recall@1": 0.1}) == [50.0, 25.0, 75.0, 100.0]


def test_moved_counts_requests_whose_first_k_differ_and_which_way_recall_went() -> None:
    base = [
        _answer(["a", "b", "c"], ["c"]),
        _answer(["a", "b", "c"], ["a"]),
        _answer(["a", "b", "c"], ["b"]),
    ]
    other = [
        _answer(["a", "c", "b"], ["c"]),  # c enters the first 2
        _answer(["b", "c", "a"], ["a"]),  # a leaves the first 2
        _answer(["a", "b", "c"], ["b"]),  # unchanged
    ]
    assert moved(base, other, 2) == "2 (1 gain, 1 lose)"
