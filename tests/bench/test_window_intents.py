"""The intents bench.window_intents blends, and how it reads a shortlist's recall."""

from __future__ import annotations

import numpy as np
import pytest

from bench.window_intents import clauses_and_windows, shortlist_recall
from indexer.evaluation.learning import Shortlisted
from indexer.retrieval.fusion import split_intents


def test_a_short_request_keeps_its_clauses_and_gets_no_window() -> None:
    assert clauses_and_windows("find a hotel near the station") == []
    two = "Reset the MFA factors, then open a ticket"
    assert (
        clauses_and_windows(two) == split_intents(two) == ["Reset the MFA factors", "open a ticket"]
    )


def test_windows_follow_the_clauses_and_are_substrings_of_the_request() -> None:
    text = (
        "Search the web for this week's most discussed open source projects, summarise "
        "each one in two lines and save the summary to a markdown file in my documents"
    )
    intents = clauses_and_windows(text)
    clauses = split_intents(text)
    assert intents[: len(clauses)] == clauses
    windows = intents[len(clauses) :]
    assert windows
    assert all(w in text and len(w.split()) <= 8 for w in windows)
    assert windows[0].startswith("Search the web")
    assert windows[-1].endswith("my documents")
    assert len(set(intents)) == len(intents)


def _item(ids: tuple[str, ...], relevant: set[str], answerable: bool = True) -> Shortlisted:
    return Shortlisted(
        dataset="d",
        query_id="q",
        ids=ids,
        features=np.zeros((len(ids), 1), dtype=np.float32),
        front=0,
        relevant=frozenset(relevant),
        answerable=answerable,
    )


def test_shortlist_recall_is_macro_over_answerable_requests() -> None:
    items = [
        _item(("a", "b"), {"a", "c"}),
        _item(("x",), {"x"}),
        _item(("y",), {"z"}, answerable=False),  # an unanswerable copy: not judged
    ]
    assert shortlist_recall(items) == 75.0
    with pytest.raises(ValueError, match="no answerable request"):
        shortlist_recall(items[2:])
