"""BM25 read at a million tools: a request's best documents, and the share of its words each
shortlisted tool holds, without reading every posting of its words.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from indexer.retrieval.array_bm25 import ArrayBM25
from indexer.retrieval.lexical import words

# Past this many documents, the best are chosen among those reaching the k-th best of every
# SAMPLE_STRIDE-th document (`best_rows`).
SAMPLE_FROM = 65_536
SAMPLE_STRIDE = 16


def _holding(docs: NDArray[np.int32], rows: NDArray[np.int64]) -> NDArray[np.bool_]:
    """Which of `rows` are among `docs` (ascending)."""
    if not len(docs):
        return np.zeros(len(rows), dtype=bool)
    # int32 needles, as the documents are: int64 ones make NumPy copy the documents to int64
    # to compare them (a copy of each word's postings, on every search).
    at = np.minimum(np.searchsorted(docs, rows.astype(np.int32)), len(docs) - 1)
    return np.asarray(docs[at] == rows)


def best_rows(scores: NDArray[np.float32], k: int, allowed: NDArray[np.bool_]) -> NDArray[np.int64]:
    """Up to `k` allowed documents with a positive score, the best ones (which of several
    equal scores at the k-th place is unspecified).

    At a million tools a request's words match hundreds of thousands of documents, and
    selecting among all of them was most of the lexical work. The k-th best of every
    `SAMPLE_STRIDE`-th document is a score at least k documents reach, so the best k are
    among the documents scoring that much: one comparison over the scores, then a selection
    among a few thousand."""
    if len(scores) >= SAMPLE_FROM:
        sample = scores[::SAMPLE_STRIDE][allowed[::SAMPLE_STRIDE]]
        sample = sample[sample > 0.0]
        if len(sample) >= k:
            reached = np.partition(sample, len(sample) - k)[len(sample) - k]
            positive = np.flatnonzero((scores >= reached) & allowed)
            return positive[np.argpartition(-scores[positive], k - 1)[:k]].astype(np.int64)
    positive = np.flatnonzero(allowed & (scores > 0.0))
    if len(positive) > k:
        positive = positive[np.argpartition(-scores[positive], k - 1)[:k]]
    return positive.astype(np.int64)


def idf_coverage(
    bm25: ArrayBM25,
    query: str,
    rows: NDArray[np.int64],
    visible: NDArray[np.bool_] | None = None,
) -> tuple[NDArray[np.float32], float]:
    """How much of the request's IDF mass (its distinct words, each weighted by its IDF over
    the visible documents) each of `rows` contains, and the share that no visible document
    contains at all (a request about something nobody offers). Both 0 when the request has no
    word BM25 reads. It runs on every search: it looks the rows up in each word's sorted
    documents (`ArrayBM25.documents`) instead of gathering every posting."""
    tokens = list(dict.fromkeys(words(query)))
    if not tokens:
        return np.zeros(len(rows), dtype=np.float32), 0.0
    terms = bm25.term_ids(tokens)
    rows = np.asarray(rows, dtype=np.int64)
    held = [bm25.documents(t) for t in terms]
    members = [_holding(docs, rows) for docs in held]
    if visible is not None and not visible.all():
        # The collection is what the caller sees: its size, each word's documents in it.
        size = int(visible.sum())
        df = np.asarray([int(visible[docs].sum()) for docs in held], dtype=np.float64)
        members = [inside & visible[rows] for inside in members]
    else:
        size = len(bm25)
        df = np.asarray([len(docs) for docs in held], dtype=np.float64)
    idf = np.log(1.0 + (size - df + 0.5) / (df + 0.5))
    # Words no visible document has weigh the most (df 0), known or not.
    unknown_idf = float(np.log(1.0 + (size + 0.5) / 0.5))
    unknown = (len(tokens) - len(terms)) * unknown_idf + float(idf[df == 0].sum())
    total = float(idf.sum()) + (len(tokens) - len(terms)) * unknown_idf
    if total <= 0.0:
        return np.zeros(len(rows), dtype=np.float32), 0.0
    matched = np.zeros(len(rows), dtype=np.float64)
    for inside, weight in zip(members, idf.tolist(), strict=True):
        matched[inside] += weight
    return (matched / total).astype(np.float32), unknown / total
