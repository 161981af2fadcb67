"""What a catalog's segment is made from besides its tools' names and vectors, stored with the
catalog so that a restart (or a replica joining) derives nothing again and reads no schema:
each tool's document hash (the key of its vector), its document's terms with their counts,
its own scopes, and what a search reads of it (`indexer.retrieval.tool_facts`).

An image is written in the transaction that stores its catalog's revision, so it always
belongs to the tools stored beside it. It is also stamped with a fingerprint of how document
texts and tokens are derived: after an upgrade that derives them differently, a stored image
no longer matches, the catalog is derived from its tools as before, and the new image is
written back (`Writer.load`).

Layout (little-endian): the magic, the fingerprint (16 bytes), then seven uint32 (tools, terms'
UTF-8 bytes, (document, term) entries, bytes per term id and per count: 2 or 4 each, scope
sets' JSON bytes, facts' UTF-8 bytes), each tool's SHA-256 (32 bytes), each document's length
in tokens and its number of distinct terms (uint32 each), each tool's scope set (uint32, an
index into the sets), each entry's term id and count, the terms joined by newlines (a term is
a run of word characters, so it holds none), the distinct scope sets as a JSON list of sorted
lists, one byte per tool (1: destructive), and each tool's summary, input names and output
names, all joined by NUL (`ToolFacts` keeps NUL out of them).
"""

from __future__ import annotations

import binascii
import hashlib
import json
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from itertools import accumulate

import numpy as np
from numpy.typing import NDArray

from indexer.made_on_read import MadeOnRead
from indexer.model import Tool
from indexer.retrieval.document import document_hash, document_text
from indexer.retrieval.lexical import Tokenised
from indexer.retrieval.tool_facts import ToolFacts

MAGIC = b"CRIM"
# Changed by hand when the layout changes; derivations are covered by the fingerprint.
LAYOUT_VERSION = 4
_HEADER = struct.Struct("<4s16sIIIIIII")
_HASH_BYTES = 32


def _derivation_fingerprint() -> bytes:
    """Changes when the text a tool is embedded by, or the tokens a text gives, change: one
    probe tool's document text and its tokens, hashed with the layout version."""
    probe = Tool(
        catalog="probe-catalog",
        name="getWeatherForecast_v2",
        description="Returns the forecast for a city. Units: metric or imperial!\n" * 3,
        input_schema={
            "type": "object",
            "properties": {
                "cityName": {"type": "string", "description": "The city, e.g. São Paulo"},
                "units": {"type": "string"},
                "days-ahead": {"type": "integer", "description": "1 to 10"},
            },
        },
        title="Weather forecast",
        tags=("weather", "the forecast"),
        examples=("rain in Oslo tomorrow?", "is it an A-OK day"),
    )
    text = document_text(probe, "Probe Title")
    tokens = Tokenised.of([text, text.upper()])
    digest = hashlib.sha256(f"{LAYOUT_VERSION}\0{text}\0".encode())
    digest.update("\n".join(tokens.terms).encode() + tokens.ids.tobytes() + tokens.tf.tobytes())
    digest.update(repr(ToolFacts.of(probe)).encode())
    return digest.digest()[:16]


FINGERPRINT = _derivation_fingerprint()


@dataclass(frozen=True, eq=False)
class CatalogImage:
    """Each tool's document hash, tokenised document, own scopes and facts, in stored tool
    order."""

    doc_hashes: tuple[str, ...]
    tokens: Tokenised
    scopes: tuple[frozenset[str], ...]
    facts: Sequence[ToolFacts]

    def __post_init__(self) -> None:
        if not len(self.doc_hashes) == len(self.tokens) == len(self.scopes) == len(self.facts):
            raise ValueError("an image has one document hash, document, scope set and facts a tool")

    @classmethod
    def of_tools(cls, tools: Sequence[Tool], catalog_title: str) -> CatalogImage:
        """Derived from the tools (every field of each is read)."""
        documents = [document_text(tool, catalog_title) for tool in tools]
        return cls.of_documents(tools, documents)

    @classmethod
    def of_documents(cls, tools: Sequence[Tool], documents: Sequence[str]) -> CatalogImage:
        """From the tools and their document texts (`document_text`)."""
        return cls(
            tuple(document_hash(text) for text in documents),
            Tokenised.of(documents),
            tuple(tool.scopes for tool in tools),
            tuple(ToolFacts.of(tool) for tool in tools),
        )

    def encode(self) -> bytes:
        tokens = self.tokens
        id_type, id_width = _unsigned(len(tokens.terms))
        tf_type, tf_width = _unsigned(int(tokens.tf.max()) + 1 if len(tokens.tf) else 0)
        terms = "\n".join(tokens.terms).encode("utf-8")
        sets = list(dict.fromkeys(self.scopes))
        index = {scopes: i for i, scopes in enumerate(sets)}
        scope_json = json.dumps([sorted(s) for s in sets], ensure_ascii=False).encode("utf-8")
        facts = "\x00".join(f"{f.summary}\x00{f.inputs}\x00{f.outputs}" for f in self.facts).encode(
            "utf-8"
        )
        header = _HEADER.pack(
            MAGIC,
            FINGERPRINT,
            len(self.doc_hashes),
            len(terms),
            len(tokens.ids),
            id_width,
            tf_width,
            len(scope_json),
            len(facts),
        )
        return b"".join(
            (
                header,
                binascii.unhexlify("".join(self.doc_hashes)),
                tokens.lengths.astype("<u4").tobytes(),
                tokens.distinct.astype("<u4").tobytes(),
                np.asarray([index[s] for s in self.scopes], dtype="<u4").tobytes(),
                tokens.ids.astype(id_type).tobytes(),
                tokens.tf.astype(tf_type).tobytes(),
                terms,
                scope_json,
                bytes(f.destructive for f in self.facts),
                facts,
            )
        )


def _unsigned(values: int) -> tuple[str, int]:
    """The smallest of uint16 and uint32 that holds `values` distinct values from 0."""
    return ("<u2", 2) if values <= 1 << 16 else ("<u4", 4)


@lru_cache(maxsize=1024)
def _scope_sets(encoded: bytes) -> tuple[frozenset[str], ...]:
    """An image's scope sets from their JSON (most catalogs of a store share a few)."""
    return tuple(frozenset(s) for s in json.loads(encoded.decode("utf-8")))


# Facts repeat between tools (parameter names such as `query` or `id`; a server registered
# under several catalogs), and so do documents: one string object for each distinct one, up
# to this many of each.
_SHARED_FACTS = 1 << 17
_shared_facts: dict[str, str] = {}
_shared_hashes: dict[str, str] = {}


def decode(blob: bytes | None, tools: int) -> CatalogImage | None:
    """The image in `blob` when it was derived the way this process derives and holds
    `tools` documents; None otherwise (none stored, another derivation, or damaged)."""
    if not blob or len(blob) < _HEADER.size:
        return None
    magic, fingerprint, count, term_bytes, entries, id_width, tf_width, scope_bytes, fact_bytes = (
        _HEADER.unpack_from(blob)
    )
    if (
        magic != MAGIC
        or fingerprint != FINGERPRINT
        or count != tools
        or id_width not in (2, 4)
        or tf_width not in (2, 4)
    ):
        return None
    sizes = [_HEADER.size, count * _HASH_BYTES, 4 * count, 4 * count, 4 * count]
    sizes += [id_width * entries, tf_width * entries, term_bytes, scope_bytes, count, fact_bytes]
    # Eleven sizes: added in Python (np.cumsum cost more than the rest of a small catalog).
    ends = list(accumulate(sizes))
    if len(blob) != ends[-1]:
        return None
    view = memoryview(blob)

    def part(i: int) -> memoryview:
        return view[ends[i] : ends[i + 1]]

    hexed = binascii.hexlify(part(0)).decode("ascii")
    step = 2 * _HASH_BYTES
    doc_hashes = tuple(hexed[i : i + step] for i in range(0, len(hexed), step))
    if len(_shared_hashes) < _SHARED_FACTS:
        doc_hashes = tuple(_shared_hashes.setdefault(h, h) for h in doc_hashes)
    try:
        sets = _scope_sets(bytes(part(7)))
        own = np.frombuffer(part(3), dtype="<u4")
        scopes = (
            (sets[0],) * count
            if len(sets) == 1 and not own.any()
            else tuple(sets[i] for i in own.tolist())
        )
        text = bytes(part(6)).decode("utf-8")
        tokens = Tokenised(
            tuple(text.split("\n")) if text else (),
            np.frombuffer(part(4), dtype=f"<u{id_width}"),
            np.frombuffer(part(5), dtype=f"<u{tf_width}"),
            np.frombuffer(part(2), dtype="<u4"),
            np.frombuffer(part(1), dtype="<u4"),
        )
        facts = StoredFacts(bytes(part(9)).decode("utf-8"), bytes(part(8)))
    except (ValueError, IndexError, TypeError):
        return None
    return CatalogImage(doc_hashes, tokens, scopes, facts)


class StoredFacts(MadeOnRead[ToolFacts]):
    """A catalog's facts as its stored image holds them (each tool's summary, input names and
    output names joined by NUL; one byte a tool for destructive), each tool's `ToolFacts` made
    when first read: a start-up reads thousands of catalogs (12,347 at 100,000 tools), and a
    search reads the facts of the few tools it ranks last, whatever the size of their
    catalogs (decision 0092)."""

    def __init__(self, text: str, destructive: bytes) -> None:
        count = len(destructive)
        if text.count("\x00") != (3 * count - 1 if count else 0):
            raise ValueError("an image has three facts a tool")
        super().__init__(count)
        # One string for the catalogs whose facts are the same (a server under several names).
        if len(_shared_facts) < _SHARED_FACTS:
            text = _shared_facts.setdefault(text, text)
        self._text = text
        self._destructive = destructive
        # Where each field starts in the text (and one past the last), found on first read.
        self._starts: NDArray[np.int64] | None = None

    def _make(self, row: int) -> ToolFacts:
        starts = self._starts
        if starts is None:  # one split in C, its fields' lengths kept, the fields dropped
            lengths = np.fromiter(map(len, self._text.split("\x00")), np.int64, 3 * len(self))
            starts = self._starts = np.concatenate(([0], np.cumsum(lengths + 1)))
        text, at = self._text, starts[3 * row : 3 * row + 4].tolist()
        fields = [text[at[i] : at[i + 1] - 1] for i in range(3)]
        if len(_shared_facts) < _SHARED_FACTS:
            fields = [_shared_facts.setdefault(field, field) for field in fields]
        summary, inputs, outputs = fields
        return ToolFacts(summary, inputs, outputs, self._destructive[row] == 1)
