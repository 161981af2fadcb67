"""BM25 lexical index over tool texts, set up exactly as the published livemcpbench protocol."""

from __future__ import annotations

import functools
import json
import logging
import re
from collections import Counter
from collections.abc import Sequence
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
# Non-negative integers (ids, counts, lengths), of whatever integer type they come in.
Counts = NDArray[np.integer[Any]]


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
    nothing and counts nothing (`registry.catalog_image`). The arrays are of any integer type:
    int32 when tokenised here, the stored image's unsigned types when read back (converted
    where the postings are made, for every catalog at once, not a conversion each)."""

    terms: tuple[str, ...]
    ids: Counts
    tf: Counts
    distinct: Counts
    lengths: Counts

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


@dataclass(frozen=True, eq=False)
class Postings:
    """Some documents as BM25 postings: term id, document row (counted from the part's first
    document) and term frequency, in no particular order (`ArrayBM25.joined` and `spliced`
    order them by term); and each document's length.

    Each catalog's segment keeps its own, so a start-up holds thousands of them (12,347 at
    100,000 tools): one int32 array each, not one a field. Packed in it: each posting's term
    and frequency, then each document's row and how many postings it has (in the order the
    postings come; the rows a posting's document is at are derived, `docs`, instead of held a
    posting each), then each row's length: 115 bytes a tool less than four arrays at 100,000
    tools (decision 0083)."""

    packed: NDArray[np.int32]
    entries: int  # postings
    documents: int

    @classmethod
    def packing(
        cls,
        terms: NDArray[np.int32],
        tf: Counts,
        rows: NDArray[np.int64],
        counts: Counts,
        lengths: Counts,
    ) -> Postings:
        """From each posting's term and frequency, each document's row and posting count (in
        the postings' order) and each row's length."""
        packed = np.concatenate(
            [terms, tf, rows, counts, lengths], dtype=np.int32, casting="unsafe"
        )
        return cls(packed, len(terms), len(rows))

    @property
    def terms(self) -> NDArray[np.int32]:
        return self.packed[: self.entries]

    @property
    def tf(self) -> NDArray[np.int32]:
        return self.packed[self.entries : 2 * self.entries]

    @property
    def rows(self) -> NDArray[np.int32]:
        """Each document's row, in the order its postings come."""
        start = 2 * self.entries
        return self.packed[start : start + self.documents]

    @property
    def counts(self) -> NDArray[np.int32]:
        """How many postings each document has, in the order they come."""
        start = 2 * self.entries + self.documents
        return self.packed[start : start + self.documents]

    @property
    def docs(self) -> NDArray[np.int32]:
        """Each posting's document row."""
        return np.repeat(self.rows, self.counts)

    @property
    def lengths(self) -> NDArray[np.int32]:
        """Each row's length in tokens."""
        return self.packed[2 * self.entries + 2 * self.documents :]

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
            concatenate([tokenised.ids for tokenised, _ in parts])
            + np.repeat(term_offsets, entries)
        ]
        made = []
        start = 0
        for (tokenised, rows), count in zip(parts, entries, strict=True):
            end = start + count
            lengths = np.zeros(len(rows), dtype=np.int32)
            lengths[rows] = tokenised.lengths
            made.append(
                cls.packing(terms[start:end], tokenised.tf, rows, tokenised.distinct, lengths)
            )
            start = end
        return made

    @staticmethod
    def docs_of(parts: Sequence[Postings], offsets: NDArray[np.int64]) -> NDArray[np.int64]:
        """Every posting's row over `parts` joined, part i's rows from `offsets[i]`: in one
        pass, not an array a part."""
        if not parts:
            return np.zeros(0, dtype=np.int64)
        rows = concatenate([p.rows for p in parts]).astype(np.int64) + np.repeat(
            offsets[: len(parts)], [p.documents for p in parts]
        )
        return np.repeat(rows, concatenate([p.counts for p in parts]))


def concatenate(arrays: Sequence[Counts]) -> Counts:
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
