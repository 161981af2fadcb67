"""BM25 over arrays: built from catalogs' postings, and spliced change by change.

The same BM25 as `lexical.LexicalIndex` (bm25s' tokens, Lucene variant, K1 and B), built with
array operations instead of per-document Python loops, and from parts: a snapshot joins its
catalogs' postings, or splices the changed catalogs' into the previous snapshot's, without
tokenising anything again. Scores equal bm25s' to float32 rounding (a test holds them together);
`LexicalIndex` stays the protocol's reference for the anchor.

Postings are kept by term (one slice per query token); a term's weights depend on the collection
(document count, average length, document frequency) and are computed the first time a request
uses the term, the same arithmetic whichever way the index was built.

A splice does not rewrite every posting (a million tools hold tens of millions of them: half a
second a change). A spliced index is a layer over the last index built whole, its base: each
base row's row here, and the postings of the rows that are not the base's. A term's postings are
put together when a request first uses the term, as its weights are. Once the layer's own
postings pass FOLD_SHARE of the base's, a splice builds whole again, in one pass.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np
from numpy.typing import NDArray

from indexer.retrieval.lexical import K1, B, Counts, Postings, Vocabulary, concatenate, words

# A layer's own postings, as a share of its base's, past which a splice builds whole.
FOLD_SHARE = 1 / 16
_NONE = np.zeros(0, dtype=np.int32)


def by_term(terms: Counts, vocabulary_size: int) -> NDArray[np.intp]:
    """The postings' order by term, each term's in their order (a stable sort). Ids that fit
    in 16 bits are sorted as such: NumPy sorts those by radix, in one pass (0.3 s against
    1.3 s for 19 million postings over 14,321 terms, as a million mirrored tools hold:
    docs/results/radix-sort-postings.py.txt)."""
    if vocabulary_size <= 1 << 16:
        return np.argsort(terms.astype(np.uint16), kind="stable")
    return np.argsort(terms, kind="stable")


class ArrayBM25:
    """BM25 scores of every row for a request, over postings by term (see the module)."""

    def __init__(self, documents: Sequence[str]) -> None:
        vocabulary: Vocabulary = {}
        postings = Postings.of(documents, vocabulary)
        order = by_term(postings.terms, len(vocabulary))
        self._setup(
            vocabulary,
            postings.docs[order],
            postings.tf[order],
            postings.lengths.astype(np.int64),
            terms=postings.terms,
        )

    def _setup(
        self,
        vocabulary: Vocabulary,
        docs: Counts,
        tf: Counts,
        lengths: NDArray[np.int64],
        terms: Counts | None = None,
        df: NDArray[np.int64] | None = None,
    ) -> None:
        """An index built whole: `docs` and `tf` ordered by term (kept as int32); the term of
        each is given by `terms` or `df`."""
        self._common(vocabulary, lengths)
        if df is None:
            assert terms is not None
            df = np.bincount(terms, minlength=self._terms).astype(np.int64)
        self._docs = docs.astype(np.int32, copy=False)
        self._tf = tf.astype(np.int32, copy=False)
        self._starts = np.concatenate(([0], np.cumsum(df))).astype(np.int64)

    def _common(self, vocabulary: Vocabulary, lengths: NDArray[np.int64]) -> None:
        self._vocab = vocabulary
        self._terms = len(vocabulary)
        self._lengths = lengths
        self._size = len(lengths)
        self._average = float(lengths.mean()) if self._size else 1.0
        self._weights: dict[int, NDArray[np.float32]] = {}
        self._sorted: dict[int, NDArray[np.int32]] = {}
        self._slices: dict[int, tuple[NDArray[np.int32], NDArray[np.int32]]] = {}
        # Built whole: postings by term (`_docs`, `_tf`, term t's from `_starts[t]`). A layer:
        # its base, each base row's row here (-1: dropped), and its own postings by term.
        self._docs = self._tf = _NONE
        self._starts = np.zeros(1, dtype=np.int64)
        self._base: ArrayBM25 | None = None
        self._moved = self._own_terms = self._own_docs = self._own_tf = _NONE

    @classmethod
    def joined(cls, vocabulary: Vocabulary, parts: Sequence[Postings]) -> ArrayBM25:
        """One index over `parts`, in order (each part's rows follow the previous part's)."""
        index = cls.__new__(cls)
        sizes = [len(p.lengths) for p in parts]
        offsets = np.concatenate(([0], np.cumsum(sizes, dtype=np.int64)))
        terms = concatenate([p.terms for p in parts])
        docs = Postings.docs_of(parts, offsets)
        order = by_term(terms, len(vocabulary))
        index._setup(
            vocabulary,
            docs[order],
            concatenate([p.tf for p in parts])[order],
            concatenate([p.lengths for p in parts]).astype(np.int64),
            terms=terms,
        )
        return index

    def spliced(
        self,
        moved: NDArray[np.int64],
        added: Sequence[tuple[int, Postings]],
        lengths: NDArray[np.int64],
    ) -> ArrayBM25:
        """This index with documents moved or dropped and new ones added: a layer over this
        index's base (see the module), or a whole index once the layer has grown.

        `moved[row]` is each current document's new row (-1: dropped); `added` gives each new
        part's first row; `lengths` every document's length in the new order."""
        step = moved.astype(np.int32)
        if self._base is None:
            base, to_base = self, step
            own = (_NONE, _NONE, _NONE)
        else:
            base = self._base
            to_base = np.full(len(self._moved), -1, dtype=np.int32)
            live = self._moved >= 0
            to_base[live] = step[self._moved[live]]
            docs = step[self._own_docs]
            kept = docs >= 0
            own = (self._own_terms[kept], docs[kept], self._own_tf[kept])
        terms = concatenate([own[0], *(p.terms for _, p in added)]).astype(np.int32)
        order = by_term(terms, len(base._vocab))
        own_docs = concatenate([own[1], *(p.docs + start for start, p in added)])
        own_tf = concatenate([own[2], *(p.tf for _, p in added)])
        layer = (terms[order], own_docs[order].astype(np.int32), own_tf[order].astype(np.int32))
        if len(layer[0]) >= FOLD_SHARE * len(base._docs):
            return base._rebuilt(to_base, layer, lengths)
        index = ArrayBM25.__new__(ArrayBM25)
        index._common(base._vocab, lengths)
        index._base = base
        index._moved = to_base
        index._own_terms, index._own_docs, index._own_tf = layer
        return index

    def _rebuilt(
        self,
        moved: NDArray[np.int32],
        own: tuple[NDArray[np.int32], NDArray[np.int32], NDArray[np.int32]],
        lengths: NDArray[np.int64],
    ) -> ArrayBM25:
        """An index built whole: this whole index's postings moved, and `own` (sorted by
        term) inserted at the end of each term's slice; linear in the postings."""
        terms = len(self._vocab)
        docs = moved[self._docs]
        keep = docs >= 0
        kept = np.concatenate(([0], np.cumsum(keep, dtype=np.int64)))
        df = np.zeros(terms, dtype=np.int64)
        df[: self._terms] = kept[self._starts[1:]] - kept[self._starts[:-1]]
        docs, tf = docs[keep], self._tf[keep]
        if len(own[0]):
            ends = np.cumsum(df)
            docs = np.insert(docs, ends[own[0]], own[1])
            tf = np.insert(tf, ends[own[0]], own[2])
            df += np.bincount(own[0], minlength=terms)
        index = ArrayBM25.__new__(ArrayBM25)
        index._setup(self._vocab, docs, tf, lengths, df=df)
        return index

    def _postings(self, term: int) -> tuple[NDArray[np.int32], NDArray[np.int32]]:
        """A known term's documents and frequencies (a layer's put together on first use)."""
        base = self._base
        if base is None:
            start, end = self._starts[term], self._starts[term + 1]
            return self._docs[start:end], self._tf[start:end]
        found = self._slices.get(term)
        if found is None:
            docs, tf = base._postings(term) if term < base._terms else (_NONE, _NONE)
            docs = self._moved[docs]
            kept = docs >= 0
            first = int(np.searchsorted(self._own_terms, term, side="left"))
            last = int(np.searchsorted(self._own_terms, term, side="right"))
            found = (
                np.concatenate((docs[kept], self._own_docs[first:last])),
                np.concatenate((tf[kept], self._own_tf[first:last])),
            )
            self._slices[term] = found
        return found

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
            docs = self._postings(term)[0]
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
            docs, tf = self._postings(term)
            weights = self._term_weights(docs, tf, self._size, self._average)
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
                _add(scores, self._postings(term)[0], self._weight(term))
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
            all_docs, all_tf = self._postings(term)
            keep = visible[all_docs]
            if not keep.any():
                continue
            docs = all_docs[keep]
            # The same arithmetic as the whole collection's weights, over the visible ones.
            _add(scores, docs, self._term_weights(docs, all_tf[keep], size, average))
        return scores


def _add(
    scores: NDArray[np.float32], docs: NDArray[np.int32], weights: NDArray[np.float32]
) -> None:
    """`scores[docs] += weights` for one term's postings.

    `np.add.at` over platform-sized indices is one pass in C; fancy-index addition gathers,
    adds and scatters, three passes (about three times slower at a million tools:
    `python -m bench.bm25_pass`). Each document's score is the same float32 additions, in
    the same order, either way."""
    np.add.at(scores, docs.astype(np.intp), weights)
