"""How bench.clause_cover scores the two orders and counts the requests they differ on."""

from __future__ import annotations

import pytest

from bench.clause_cover import figures, moved


def _answer(ranked: list[str], relevant: list[str]) -> dict[str, object]:
    return {"ranked": ranked, "relevant": relevant}


def test_figures_are_macro_over_answerable_requests_only() -> None:
    answers = [
        _answer(["a", "b", "c"], ["a"]),
        _answer(["x", "y", "z", "q"], ["q", "r"]),
        _answer(["a"], []),  # unanswerable: not scored
    ]
    p1, r3, r5, r10 = figures(answers)
    assert p1 == 50.0
    assert r3 == 50.0  # 1 and 0
    assert r5 == r10 == 75.0  # 1 and 1/2


def test_figures_refuse_a_set_without_answerable_requests() -> None:
    with pytest.raises(ValueError, match="no answerable request"):
        figures([_answer(["a"], [])])


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
