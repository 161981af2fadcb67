"""BM25 lexical index over tool texts, set up exactly as the published livemcpbench protocol."""

from __future__ import annotations

import functools
import json
import logging
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

# bm25s sets its own logger to DEBUG; its per-index chatter is not ours to print.
logging.getLogger("bm25s").setLevel(logging.WARNING)
# bm25s' English stopwords (`bm25s.stopwords.STOPWORDS_EN`; a test holds the two equal).
# Kept here so that serving, which only needs `ArrayBM25`, does not import bm25s (a quarter
# of a second at every start).
STOPWORDS_EN = tuple(
    "a an and are as at be but by for if in into is it no not of on or such that the their "  # noqa: SIM905 -- a word list reads better as one string
    "then there these they this to was will with".split()
)

# The protocol's settings (datasets README, step 7): changing any of them moves the anchor.
K1 = 1.5
B = 0.75
STOPWORDS = "en"


class LexicalIndex:
    """Okapi BM25 (bm25s, Lucene variant) over a fixed list of documents, searched by row."""

    def __init__(self, documents: Sequence[str]) -> None:
        # Imported here: only the evaluation's protocol baseline builds this index.
        import bm25s

        self._bm25s = bm25s
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
        query_tokens: list[list[str]] = self._bm25s.tokenize(
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


def words(text: str) -> list[str]:
    """`text`'s tokens as BM25 reads them, in order."""
    return [t for t in _TOKEN.findall(text.lower()) if t not in _STOPWORDS]


# Term ids shared by every part of one corpus (append-only: an id never changes meaning, so
# parts tokenised at different times fit together without being tokenised again).
Vocabulary = dict[str, int]


@functools.lru_cache(maxsize=8192)
def _document_terms(text: str) -> tuple[tuple[tuple[str, int], ...], int]:
    """A text's distinct terms with their counts, and its length in tokens. Remembered: the
    same server registered under several names has the same texts."""
    tokens = words(text)
    return tuple(Counter(tokens).items()), len(tokens)


@dataclass(frozen=True, eq=False)
class Tokenised:
    """Some documents as bags of terms: each document's distinct terms, as ids into their own
    list of terms, with how often each occurs (`ids` and `tf`, one document after another),
    how many distinct terms each document has (`distinct`), and its length in tokens.
    Independent of any vocabulary, so it can be stored with its catalog: a restart tokenises
    nothing and counts nothing (`registry.catalog_image`)."""

    terms: tuple[str, ...]
    ids: NDArray[np.int32]
    tf: NDArray[np.int32]
    distinct: NDArray[np.int32]
    lengths: NDArray[np.int32]

    def __post_init__(self) -> None:
        entries = len(self.ids)
        if (
            len(self.tf) != entries
            or int(self.distinct.sum()) != entries
            or len(self.lengths) != len(self.distinct)
            or (entries and not 0 <= int(self.ids.min()) <= int(self.ids.max()) < len(self.terms))
        ):
            raise ValueError("term ids and counts do not fit their terms and documents")

    def __len__(self) -> int:
        return len(self.lengths)

    @classmethod
    def of(cls, documents: Sequence[str]) -> Tokenised:
        local: dict[str, int] = {}
        ids: list[int] = []
        tf: list[int] = []
        distinct = np.zeros(len(documents), dtype=np.int32)
        lengths = np.zeros(len(documents), dtype=np.int32)
        for row, text in enumerate(documents):
            counted, length = _document_terms(text)
            for term, count in counted:
                ids.append(local.setdefault(term, len(local)))
                tf.append(count)
            distinct[row] = len(counted)
            lengths[row] = length
        return cls(
            tuple(local),
            np.asarray(ids, dtype=np.int32),
            np.asarray(tf, dtype=np.int32),
            distinct,
            lengths,
        )


@dataclass(frozen=True, kw_only=True)
class Postings:
    """Some documents as BM25 postings: term id, document row (counted from the part's first
    document) and term frequency, in no particular order (`ArrayBM25.joined` and `spliced`
    order them by term); and each document's length. A posting is three int32 (int64 held
    0.4 KB more a tool at 100,000 tools)."""

    terms: NDArray[np.int32]
    docs: NDArray[np.int32]
    tf: NDArray[np.int32]
    lengths: NDArray[np.int64]

    @classmethod
    def of(cls, documents: Sequence[str], vocabulary: Vocabulary) -> Postings:
        """Tokenises `documents`, giving new terms the next ids of `vocabulary`."""
        tokenised = Tokenised.of(documents)
        return cls.of_many([(tokenised, np.arange(len(tokenised)))], vocabulary)[0]

    @classmethod
    def of_many(
        cls, parts: Sequence[tuple[Tokenised, NDArray[np.int64]]], vocabulary: Vocabulary
    ) -> list[Postings]:
        """Each part's postings, its documents in the rows given beside it (`rows[i]`: the
        row of the part's i-th document). Terms new to `vocabulary` get its next ids. Every
        part's terms are mapped to the vocabulary in one pass and its arrays made together:
        a start-up joins thousands of parts, and per-part array calls added up."""
        for tokenised, rows in parts:
            if len(rows) != len(tokenised):
                raise ValueError("one row per tokenised document is required")
        names = [term for tokenised, _ in parts for term in tokenised.terms]
        for name in dict.fromkeys(names):  # new terms in first-seen order
            vocabulary.setdefault(name, len(vocabulary))
        known = np.fromiter(map(vocabulary.__getitem__, names), dtype=np.int32, count=len(names))
        term_offsets = np.cumsum([0] + [len(t.terms) for t, _ in parts[:-1]], dtype=np.int64)
        entries = [len(tokenised.ids) for tokenised, _ in parts]
        terms = known[
            _concatenate([tokenised.ids for tokenised, _ in parts])
            + np.repeat(term_offsets, entries)
        ]
        rows = _concatenate([np.asarray(rows, dtype=np.int64) for _, rows in parts])
        docs = np.repeat(rows, _concatenate([t.distinct for t, _ in parts])).astype(np.int32)
        tf = _concatenate([tokenised.tf for tokenised, _ in parts]).astype(np.int32)
        lengths = np.zeros(len(rows), dtype=np.int64)
        sizes = [len(tokenised) for tokenised, _ in parts]
        first = np.repeat(np.cumsum([0, *sizes[:-1]], dtype=np.int64), sizes)
        lengths[first + rows] = _concatenate([t.lengths for t, _ in parts])
        made = []
        start = size_start = 0
        for count, size in zip(entries, sizes, strict=True):
            end = start + count
            made.append(
                # Copies: a part outlives the others when its catalog alone is kept.
                cls(
                    terms=terms[start:end].copy(),
                    docs=docs[start:end].copy(),
                    tf=tf[start:end].copy(),
                    lengths=lengths[size_start : size_start + size].copy(),
                )
            )
            start, size_start = end, size_start + size
        return made


class ArrayBM25:
    """The same BM25 as `LexicalIndex` (bm25s' tokens, Lucene variant, K1 and B), built with
    array operations instead of per-document Python loops, and from parts: a snapshot joins
    its catalogs' postings, or splices one catalog's into the previous snapshot's, without
    tokenising anything again. Scores equal bm25s' to float32 rounding (a test holds them
    together); `LexicalIndex` stays the protocol's reference for the anchor.

    Postings are kept by term (one slice per query token); a term's weights depend on the
    collection (document count, average length, document frequency) and are computed the
    first time a request uses the term, the same arithmetic whichever way the index was built.
    """

    def __init__(self, documents: Sequence[str]) -> None:
        vocabulary: Vocabulary = {}
        postings = Postings.of(documents, vocabulary)
        order = np.argsort(postings.terms, kind="stable")
        self._setup(
            vocabulary,
            postings.docs[order],
            postings.tf[order],
            postings.lengths,
            terms=postings.terms,
        )

    def _setup(
        self,
        vocabulary: Vocabulary,
        docs: NDArray[np.signedinteger[Any]],
        tf: NDArray[np.signedinteger[Any]],
        lengths: NDArray[np.int64],
        terms: NDArray[np.signedinteger[Any]] | None = None,
        df: NDArray[np.int64] | None = None,
    ) -> None:
        """`docs` and `tf` ordered by term (kept as int32); the term of each is given by
        `terms` or `df`."""
        self._vocab = vocabulary
        self._terms = len(vocabulary)
        if df is None:
            assert terms is not None
            df = np.bincount(terms, minlength=self._terms).astype(np.int64)
        self._df = df
        self._docs = docs.astype(np.int32, copy=False)
        self._tf = tf.astype(np.int32, copy=False)
        self._lengths = lengths
        self._size = len(lengths)
        self._average = float(lengths.mean()) if self._size else 1.0
        self._starts = np.concatenate(([0], np.cumsum(df))).astype(np.int64)
        self._weights: dict[int, NDArray[np.float32]] = {}
        self._sorted: dict[int, NDArray[np.int32]] = {}

    @classmethod
    def joined(cls, vocabulary: Vocabulary, parts: Sequence[Postings]) -> ArrayBM25:
        """One index over `parts`, in order (each part's rows follow the previous part's)."""
        index = cls.__new__(cls)
        sizes = [len(p.lengths) for p in parts]
        offsets = np.concatenate(([0], np.cumsum(sizes, dtype=np.int64)))
        terms = _concatenate([p.terms for p in parts])
        docs = _concatenate([p.docs for p in parts]) + np.repeat(
            offsets[:-1], [len(p.docs) for p in parts]
        )
        order = np.argsort(terms, kind="stable")
        index._setup(
            vocabulary,
            docs[order],
            _concatenate([p.tf for p in parts])[order],
            _concatenate([p.lengths for p in parts]),
            terms=terms,
        )
        return index

    def spliced(
        self,
        moved: NDArray[np.int64],
        added: Sequence[tuple[int, Postings]],
        lengths: NDArray[np.int64],
    ) -> ArrayBM25:
        """This index with documents moved or dropped and new ones added, in time linear in
        the postings (no sort of the whole collection, no tokenising).

        `moved[row]` is each current document's new row (-1: dropped); `added` gives each new
        part's first row; `lengths` every document's length in the new order."""
        index = ArrayBM25.__new__(ArrayBM25)
        terms = len(self._vocab)
        docs = moved[self._docs]
        keep = docs >= 0
        kept = np.concatenate(([0], np.cumsum(keep, dtype=np.int64)))
        df = np.zeros(terms, dtype=np.int64)
        df[: self._terms] = kept[self._starts[1:]] - kept[self._starts[:-1]]
        docs, tf = docs[keep], self._tf[keep]
        if added:
            new_terms = _concatenate([p.terms for _, p in added])
            order = np.argsort(new_terms, kind="stable")
            new_terms = new_terms[order]
            new_docs = _concatenate([p.docs + start for start, p in added])[order]
            new_tf = _concatenate([p.tf for _, p in added])[order]
            # Each new posting goes at the end of its term's slice.
            ends = np.cumsum(df)
            docs = np.insert(docs, ends[new_terms], new_docs)
            tf = np.insert(tf, ends[new_terms], new_tf)
            df += np.bincount(new_terms, minlength=terms)
        index._setup(self._vocab, docs, tf, lengths, df=df)
        return index

    def __len__(self) -> int:
        return self._size

    def term_ids(self, tokens: Iterable[str]) -> list[int]:
        """The ids of the tokens this index knows, in order, repeats kept (a request's
        repeated word counts again in `scores`)."""
        return [t for t in map(self._term, tokens) if t is not None]

    def documents(self, term: int) -> NDArray[np.int32]:
        """A known term's documents in ascending order (read only). A splice leaves a term's
        new documents after its old ones: such a term's are sorted the first time they are
        asked for, and remembered (an index never changes)."""
        docs = self._sorted.get(term)
        if docs is None:
            docs = self._docs[self._starts[term] : self._starts[term + 1]]
            if len(docs) > 1 and not bool((docs[1:] > docs[:-1]).all()):
                docs = np.sort(docs)
            self._sorted[term] = docs
        return docs

    def _term(self, token: str) -> int | None:
        term = self._vocab.get(token)
        # The vocabulary is shared and grows: a term newer than this index matches nothing.
        return term if term is not None and term < self._terms else None

    def _weight(self, term: int) -> NDArray[np.float32]:
        weights = self._weights.get(term)
        if weights is None:
            start, end = self._starts[term], self._starts[term + 1]
            weights = self._term_weights(
                self._docs[start:end], self._tf[start:end], self._size, self._average
            )
            self._weights[term] = weights
        return weights

    def _term_weights(
        self, docs: NDArray[np.int32], tf: NDArray[np.int32], size: int, average: float
    ) -> NDArray[np.float32]:
        df = len(docs)
        idf = np.float32(np.log(1.0 + (size - df + 0.5) / (df + 0.5)))
        norm = K1 * ((1.0 - B) + B * self._lengths[docs] / average)
        return (idf * (tf / (norm + tf))).astype(np.float32)

    def scores(self, query: str, visible: NDArray[np.bool_] | None = None) -> NDArray[np.float32]:
        """The BM25 score of every document for `query` (zeros where nothing matches).

        With `visible`, the collection is only the visible documents: their count, average
        length and each term's document frequency, so documents a caller may not see never
        change its scores. Invisible documents score zero.
        """
        if visible is not None and not visible.all():
            return self._scores_within(query, visible)
        scores = np.zeros(self._size, dtype=np.float32)
        for token in words(query):
            term = self._term(token)
            if term is not None:
                start, end = self._starts[term], self._starts[term + 1]
                # A term's documents are distinct, so fancy-index addition is exact here.
                scores[self._docs[start:end]] += self._weight(term)
        return scores

    def _scores_within(self, query: str, visible: NDArray[np.bool_]) -> NDArray[np.float32]:
        scores = np.zeros(self._size, dtype=np.float32)
        size = int(visible.sum())
        if not size:
            return scores
        average = float(self._lengths[visible].mean())
        for token in words(query):
            term = self._term(token)
            if term is None:
                continue
            start, end = self._starts[term], self._starts[term + 1]
            keep = visible[self._docs[start:end]]
            if not keep.any():
                continue
            docs = self._docs[start:end][keep]
            # The same arithmetic as the whole collection's weights, over the visible ones.
            scores[docs] += self._term_weights(docs, self._tf[start:end][keep], size, average)
        return scores


def _concatenate(
    arrays: Sequence[NDArray[np.signedinteger[Any]]],
) -> NDArray[np.signedinteger[Any]]:
    return np.concatenate(arrays) if arrays else np.zeros(0, dtype=np.int64)


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
