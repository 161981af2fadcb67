"""The array-built BM25 scores exactly like the bm25s index it replaces for documents."""

from __future__ import annotations

import random
from collections import Counter
from functools import cache

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from indexer.retrieval.array_bm25 import ArrayBM25, by_term
from indexer.retrieval.document import document_text
from indexer.retrieval.lexical import LexicalIndex, Postings, Tokenised, words
from indexer.retrieval.lexical_terms import idf_coverage
from registry.ingest.catalog_dir import CATALOG_SUFFIXES
from tests.conftest import CATALOGS

QUERIES = [
    "open a support ticket for a customer",
    "email email the invoice",  # a repeated token counts twice, as in bm25s
    "the and of",  # stopwords only
    "zebra",  # not in the corpus
    "",
    "Pay a supplier's bill, then e-mail the finance team (urgent!)",
]


@cache
def _sample_documents() -> list[str]:
    from indexer.formats import parse_catalog

    documents = []
    for path in sorted(CATALOGS.iterdir()):
        if path.suffix in CATALOG_SUFFIXES:
            catalog = parse_catalog(path.read_text(), name=path.stem)
            documents += [document_text(tool, catalog.title) for tool in catalog.tools]
    return documents


def test_scores_equal_bm25s_on_the_sample_catalogs() -> None:
    documents = _sample_documents()
    assert len(documents) == 300
    fast, reference = ArrayBM25(documents), LexicalIndex(documents)
    for query in QUERIES:
        np.testing.assert_allclose(fast.scores(query), reference.scores(query), rtol=1e-6)


@pytest.mark.parametrize(
    "documents", [[], [""], ["", "the a"], ["alpha", "", "the", "alpha beta alpha"]]
)
def test_empty_and_stopword_documents_score_like_bm25s(documents: list[str]) -> None:
    fast, reference = ArrayBM25(documents), LexicalIndex(documents)
    assert len(fast) == len(documents)
    for query in ("alpha", "beta alpha", "the", ""):
        np.testing.assert_allclose(fast.scores(query), reference.scores(query), rtol=1e-6)


WORDS = st.sampled_from(["alpha", "beta", "gamma", "the", "of", "send", "mail", "x", "Ünïcode"])


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.lists(WORDS, max_size=12).map(" ".join), min_size=1, max_size=20),
    st.lists(WORDS, max_size=5).map(" ".join),
)
def test_any_corpus_scores_like_bm25s(documents: list[str], query: str) -> None:
    np.testing.assert_allclose(
        ArrayBM25(documents).scores(query), LexicalIndex(documents).scores(query), rtol=1e-6
    )


def test_the_stopwords_are_bm25s_own() -> None:
    from bm25s import stopwords

    from indexer.retrieval.lexical import STOPWORDS_EN

    assert tuple(stopwords.STOPWORDS_EN) == STOPWORDS_EN


def _coverage_by_hand(
    documents: list[str], query: str, rows: list[int], visible: list[bool]
) -> tuple[list[float], float]:
    """The IDF-mass coverage written out word by word (the definition)."""
    from indexer.retrieval.lexical import words as bm25_words

    seen = [i for i, ok in enumerate(visible) if ok]
    words = [set(bm25_words(documents[i])) for i in range(len(documents))]
    matched = [0.0] * len(rows)
    total = unknown = 0.0
    for token in dict.fromkeys(bm25_words(query)):
        df = sum(1 for i in seen if token in words[i])
        idf = float(np.log(1.0 + (len(seen) - df + 0.5) / (df + 0.5)))
        total += idf
        if not df:
            unknown += idf
            continue
        for k, row in enumerate(rows):
            if visible[row] and token in words[row]:
                matched[k] += idf
    if total <= 0.0:
        return [0.0] * len(rows), 0.0
    return [m / total for m in matched], unknown / total


@settings(max_examples=60, deadline=None)
@given(
    picks=st.lists(st.integers(0, 10_000), min_size=2, max_size=12),
    query=st.sampled_from(QUERIES),
    hidden=st.lists(st.booleans(), min_size=12, max_size=12),
)
def test_idf_coverage_is_the_share_of_the_requests_idf_mass_each_document_holds(
    picks: list[int], query: str, hidden: list[bool]
) -> None:
    pool = list(_sample_documents())
    documents = [pool[p % len(pool)] for p in picks]
    visible = [not h for h in hidden[: len(documents)]]
    if not any(visible):
        visible[0] = True
    rows = [i for i, ok in enumerate(visible) if ok]
    index = ArrayBM25(documents)
    matched, unknown = idf_coverage(
        index, query, np.asarray(rows, dtype=np.int64), np.asarray(visible)
    )
    expected, expected_unknown = _coverage_by_hand(documents, query, rows, visible)
    np.testing.assert_allclose(matched, expected, rtol=1e-5, atol=1e-6)
    assert unknown == pytest.approx(expected_unknown, rel=1e-9, abs=1e-12)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.lists(st.sampled_from(["pay", "bill", "email", "team", "the"]), max_size=6)),
    st.randoms(use_true_random=False),
)
def test_packed_postings_give_each_row_its_documents_term_counts(
    texts: list[list[str]], rng: random.Random
) -> None:
    documents = [" ".join(words) for words in texts]
    rows = list(range(len(documents)))
    rng.shuffle(rows)
    vocabulary: dict[str, int] = {}
    [postings] = Postings.of_many(
        [(Tokenised.of(documents), np.asarray(rows, dtype=np.int64))], vocabulary
    )
    term_of = {i: term for term, i in vocabulary.items()}
    found: dict[int, Counter[str]] = {row: Counter() for row in rows}
    for term, doc, tf in zip(postings.terms, postings.docs, postings.tf, strict=True):
        found[int(doc)][term_of[int(term)]] += int(tf)
    for document, row in zip(documents, rows, strict=True):
        assert found[row] == Counter(words(document))
        assert postings.lengths[row] == len(words(document))


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.integers(0, 4) | st.integers(0, 70_000), max_size=300),
    st.sampled_from([1 << 16, 70_001]),
)
def test_postings_are_ordered_by_term_stably_whatever_the_vocabulary_size(
    terms: list[int], vocabulary_size: int
) -> None:
    """The 16-bit radix path and the general one give the stable order by term."""
    ids = np.asarray([t % vocabulary_size for t in terms], dtype=np.int32)
    order = by_term(ids, vocabulary_size)
    assert order.tolist() == sorted(range(len(ids)), key=lambda i: (int(ids[i]), i))
