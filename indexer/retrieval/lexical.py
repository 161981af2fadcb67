"""BM25 lexical index over tool texts, set up exactly as the published livemcpbench protocol."""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Sequence

import bm25s
import numpy as np
from bm25s.stopwords import STOPWORDS_EN
from numpy.typing import NDArray

# bm25s sets its own logger to DEBUG; its per-index chatter is not ours to print.
logging.getLogger("bm25s").setLevel(logging.WARNING)

# The protocol's settings (datasets README, step 7): changing any of them moves the anchor.
K1 = 1.5
B = 0.75
STOPWORDS = "en"


class LexicalIndex:
    """Okapi BM25 (bm25s, Lucene variant) over a fixed list of documents, searched by row."""

    def __init__(self, documents: Sequence[str]) -> None:
        self._size = len(documents)
        self._retriever: bm25s.BM25 | None = None
        # No stemmer: the published figures use bm25s' plain lowercase \w\w+ tokens.
        corpus_tokens = bm25s.tokenize(list(documents), stopwords=STOPWORDS, show_progress=False)
        if not corpus_tokens.vocab:
            # bm25s cannot index a corpus without a single token (its average length is 0);
            # such an index can match nothing anyway.
            return
        self._retriever = bm25s.BM25(k1=K1, b=B)
        self._retriever.index(corpus_tokens, show_progress=False)

    def __len__(self) -> int:
        return self._size

    def scores(self, query: str) -> NDArray[np.float32]:
        """The BM25 score of every document for `query` (zeros where nothing matches)."""
        if self._retriever is None:
            return np.zeros(self._size, dtype=np.float32)
        # Tokenised in its own call, as in the protocol: the query's vocabulary never
        # touches the corpus', and tokens the corpus lacks are simply dropped.
        query_tokens: list[list[str]] = bm25s.tokenize(
            [query], stopwords=STOPWORDS, return_ids=False, show_progress=False
        )
        token_ids: list[int] = self._retriever.get_tokens_ids(query_tokens[0])
        if not token_ids:
            return np.zeros(self._size, dtype=np.float32)
        return np.asarray(self._retriever.get_scores_from_ids(token_ids), dtype=np.float32)

    def search(self, query: str, k: int) -> list[tuple[int, float]]:
        """Up to k (row, score) pairs, best first, equal scores in row order.

        Only documents sharing at least one token with the query are returned (their BM25
        score is positive), so a query with no indexed token gives an empty list.
        """
        if k < 1:
            raise ValueError(f"k must be at least 1, got {k}")
        scores = self.scores(query)
        matching = np.flatnonzero(scores > 0.0)
        # lexsort's last key is primary: score descending, then row ascending for ties.
        order = matching[np.lexsort((matching, -scores[matching]))][:k]
        return [(int(row), float(scores[row])) for row in order]


# bm25s' tokenizer, reproduced: lowercase, \w\w+ tokens, English stopwords dropped.
_TOKEN = re.compile(r"(?u)\b\w\w+\b")
_STOPWORDS = frozenset(STOPWORDS_EN)


def _tokens(text: str) -> list[str]:
    return [t for t in _TOKEN.findall(text.lower()) if t not in _STOPWORDS]


class ArrayBM25:
    """The same BM25 as `LexicalIndex` (bm25s' tokens, Lucene variant, K1 and B), built with
    array operations instead of per-document Python loops: ~3x faster to build, which is
    what a snapshot of 100k tools waits for. Scores equal bm25s' to float32 rounding (a test
    holds them together); `LexicalIndex` stays the protocol's reference for the anchor.
    """

    def __init__(self, documents: Sequence[str]) -> None:
        self._size = len(documents)
        vocab: dict[str, int] = {}
        ids: list[int] = []
        lengths = np.zeros(self._size, dtype=np.int64)
        for row, text in enumerate(documents):
            tokens = _tokens(text)
            ids.extend(vocab.setdefault(t, len(vocab)) for t in tokens)
            lengths[row] = len(tokens)
        self._vocab = vocab
        width = max(len(vocab), 1)
        docs_of = np.repeat(np.arange(self._size, dtype=np.int64), lengths)
        pairs, tf = np.unique(docs_of * width + np.asarray(ids, dtype=np.int64), return_counts=True)
        docs, terms = pairs // width, pairs % width
        df = np.bincount(terms, minlength=len(vocab))
        idf = np.log(1.0 + (self._size - df + 0.5) / (df + 0.5)).astype(np.float32)
        average = float(lengths.mean()) if self._size else 1.0
        norm = K1 * ((1.0 - B) + B * lengths[docs] / average)
        weights = (idf[terms] * (tf / (norm + tf))).astype(np.float32)
        # Columns by term, rows in document order: one slice per query token.
        order = np.lexsort((docs, terms))
        self._docs = docs[order]
        self._weights = weights[order]
        self._tf = tf[order]
        self._lengths = lengths
        self._starts = np.concatenate(([0], np.cumsum(df))).astype(np.int64)

    def __len__(self) -> int:
        return self._size

    def scores(self, query: str, visible: NDArray[np.bool_] | None = None) -> NDArray[np.float32]:
        """The BM25 score of every document for `query` (zeros where nothing matches).

        With `visible`, the collection is only the visible documents: their count, average
        length and each term's document frequency, so documents a caller may not see never
        change its scores. Invisible documents score zero.
        """
        if visible is not None and not visible.all():
            return self._scores_within(query, visible)
        scores = np.zeros(self._size, dtype=np.float32)
        for token in _tokens(query):
            term = self._vocab.get(token)
            if term is not None:
                start, end = self._starts[term], self._starts[term + 1]
                # A term's documents are distinct, so fancy-index addition is exact here.
                scores[self._docs[start:end]] += self._weights[start:end]
        return scores

    def _scores_within(self, query: str, visible: NDArray[np.bool_]) -> NDArray[np.float32]:
        scores = np.zeros(self._size, dtype=np.float32)
        size = int(visible.sum())
        if not size:
            return scores
        average = float(self._lengths[visible].mean())
        for token in _tokens(query):
            term = self._vocab.get(token)
            if term is None:
                continue
            start, end = self._starts[term], self._starts[term + 1]
            keep = visible[self._docs[start:end]]
            df = int(keep.sum())
            if not df:
                continue
            docs = self._docs[start:end][keep]
            tf = self._tf[start:end][keep]
            # The same arithmetic as the whole-collection weights, over the visible ones.
            idf = np.float32(np.log(1.0 + (size - df + 0.5) / (df + 0.5)))
            norm = K1 * ((1.0 - B) + B * self._lengths[docs] / average)
            scores[docs] += (idf * (tf / (norm + tf))).astype(np.float32)
        return scores


def protocol_tool_text(
    server: str | None, name: str, description: str | None, input_schema: object | None
) -> str:
    """The protocol's document text for a tool: its JSON with keys server, name, description,
    inputSchema in that order, a key left out only when its value is None (so "" stays)."""
    fields: dict[str, object] = {}
    if server is not None:
        fields["server"] = server
    fields["name"] = name
    if description is not None:
        fields["description"] = description
    if input_schema is not None:
        fields["inputSchema"] = input_schema
    return json.dumps(fields, ensure_ascii=False)
