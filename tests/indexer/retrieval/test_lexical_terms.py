"""BM25 read at a million tools gives what reading every posting gives: the same best
documents, and the same share of a request's words held by each shortlisted tool."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from indexer.retrieval import array_bm25, lexical_terms
from indexer.retrieval.array_bm25 import ArrayBM25
from indexer.retrieval.lexical import Postings, Vocabulary
from indexer.retrieval.lexical_terms import best_rows, idf_coverage

WORDS = ["invoice", "ticket", "refund", "deploy", "email", "report", "sync", "user"]
documents = st.lists(
    st.lists(st.sampled_from(WORDS), min_size=0, max_size=6).map(" ".join),
    min_size=1,
    max_size=40,
)


@settings(max_examples=80, deadline=None)
@given(
    scores=st.lists(
        st.sampled_from([0.0, 0.5, 1.0, 1.5, 2.0, 3.25, 7.0]), min_size=1, max_size=300
    ),
    k=st.integers(1, 12),
    stride=st.integers(1, 9),
    seed=st.integers(0, 1000),
)
def test_the_best_rows_are_the_best_allowed_positive_scores_whichever_path_picks_them(
    scores: list[float], k: int, stride: int, seed: int
) -> None:
    values = np.asarray(scores, dtype=np.float32)
    allowed = np.random.default_rng(seed).random(len(values)) < 0.8
    wanted = np.sort(values[allowed & (values > 0)])[::-1][:k]
    for sample_from in (10**9, 0):  # every positive document, then the sampled threshold
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(lexical_terms, "SAMPLE_FROM", sample_from)
            patch.setattr(lexical_terms, "SAMPLE_STRIDE", stride)
            best = best_rows(values, k, allowed)
        assert len(set(best.tolist())) == len(best)
        assert allowed[best].all()
        np.testing.assert_array_equal(np.sort(values[best])[::-1], wanted)


def spliced_in_the_middle(parts: list[list[str]]) -> tuple[ArrayBM25, ArrayBM25]:
    """The first and last parts joined, then the middle one spliced between them (its
    postings land at each word's end), and the three joined in order."""
    vocabulary: Vocabulary = {}
    first, last, middle = (Postings.of(part, vocabulary) for part in parts)
    head, tail, width = len(parts[0]), len(parts[1]), len(parts[2])
    moved = np.concatenate([np.arange(head), np.arange(head, head + tail) + width])
    lengths = np.concatenate([first.lengths, middle.lengths, last.lengths])
    spliced = ArrayBM25.joined(vocabulary, [first, last]).spliced(moved, [(head, middle)], lengths)
    return spliced, ArrayBM25.joined(vocabulary, [first, middle, last])


def test_a_words_documents_come_in_order_after_a_splice(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(array_bm25, "FOLD_SHARE", 0.0)  # built whole: postings rewritten
    parts = [["invoice refund", "invoice"], ["invoice"] * 5, ["invoice ticket report"] * 4]
    spliced, joined = spliced_in_the_middle(parts)
    term = spliced.term_ids(["invoice"])[0]
    # The splice did leave the postings out of document order (the joined index has them
    # in order): what `documents` has to sort.
    assert spliced._docs.tolist() != joined._docs.tolist()
    assert spliced.documents(term).tolist() == list(range(11))
    assert joined.documents(term).tolist() == list(range(11))


@settings(max_examples=60, deadline=None)
@given(
    parts=st.lists(documents, min_size=3, max_size=3),
    query=st.lists(st.sampled_from([*WORDS, "zebra", "the"]), min_size=1, max_size=5).map(" ".join),
    seed=st.integers(0, 1000),
)
def test_idf_coverage_reads_a_spliced_index_as_the_same_index_joined(
    parts: list[list[str]], query: str, seed: int
) -> None:
    spliced, joined = spliced_in_the_middle(parts)
    rng = np.random.default_rng(seed)
    rows = np.sort(rng.choice(len(joined), size=min(len(joined), 7), replace=False))
    for visible in (None, rng.random(len(joined)) < 0.7):
        if visible is not None:
            visible[rows] = True
        matched, unknown = idf_coverage(spliced, query, rows, visible)
        expected, expected_unknown = idf_coverage(joined, query, rows, visible)
        np.testing.assert_array_equal(matched, expected)
        assert unknown == expected_unknown


# A change: which part to replace (or drop, or add when past the end) and its new documents.
changes = st.lists(st.tuples(st.integers(0, 5), documents), min_size=1, max_size=8)


@settings(max_examples=60, deadline=None)
@given(
    parts=st.lists(documents, min_size=1, max_size=4),
    steps=changes,
    fold=st.sampled_from([0.0, 0.3, 1e9]),
    query=st.lists(st.sampled_from([*WORDS, "zebra"]), min_size=1, max_size=4).map(" ".join),
)
def test_a_chain_of_splices_scores_like_the_same_rows_joined(
    parts: list[list[str]],
    steps: list[tuple[int, list[str]]],
    fold: float,
    query: str,
) -> None:
    # FOLD_SHARE 0: every splice built whole; 1e9: layers only; 0.3: both, in turn.
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(array_bm25, "FOLD_SHARE", fold)
        splice_in_turn(parts, steps, query)


def splice_in_turn(parts: list[list[str]], steps: list[tuple[int, list[str]]], query: str) -> None:
    vocabulary: Vocabulary = {}
    held = [Postings.of(part, vocabulary) for part in parts]
    index = ArrayBM25.joined(vocabulary, held)
    for where, new_documents in steps:
        sizes = [len(p.lengths) for p in held]
        starts = np.concatenate(([0], np.cumsum(sizes))).astype(np.int64)
        new = Postings.of(new_documents, vocabulary)
        if where < len(held):
            kept = (
                [*held[:where], new, *held[where + 1 :]]
                if where % 2
                else held[:where] + held[where + 1 :]
            )
        else:
            kept = [*held, new]
        # Each current row's new row: the parts kept in order, the replaced or dropped one -1.
        moved = np.full(int(starts[-1]), -1, dtype=np.int64)
        row = 0
        added = []
        for part in kept:
            if any(part is p for p in held):
                code = next(i for i, p in enumerate(held) if p is part)
                moved[starts[code] : starts[code + 1]] = np.arange(row, row + sizes[code])
            else:
                added.append((row, part))
            row += len(part.lengths)
        lengths = np.concatenate([p.lengths for p in kept]) if kept else np.zeros(0, np.int64)
        index = index.spliced(moved, added, lengths.astype(np.int64))
        held = kept
        joined = ArrayBM25.joined(vocabulary, held)
        assert len(index) == len(joined)
        np.testing.assert_array_equal(index.scores(query), joined.scores(query))
        visible = np.arange(len(joined)) % 3 != 1
        np.testing.assert_array_equal(index.scores(query, visible), joined.scores(query, visible))
        for term in joined.term_ids(WORDS):
            np.testing.assert_array_equal(index.documents(term), joined.documents(term))
