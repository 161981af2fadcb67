"""What a catalog's segment is made from besides its tools' names and vectors, stored with the
catalog so that a restart (or a replica joining) derives nothing again and parses no schema:
each tool's document hash (the key of its vector), its document's tokens and its own scopes.

An image is written in the transaction that stores its catalog's revision, so it always
belongs to the tools stored beside it. It is also stamped with a fingerprint of how document
texts and tokens are derived: after an upgrade that derives them differently, a stored image
no longer matches, the catalog is derived from its tools as before, and the new image is
written back (`Writer.load`).

Layout (little-endian): the magic, the fingerprint (16 bytes), then five uint32 (tools, terms'
UTF-8 bytes, token ids, bytes per id: 2 or 4, scope sets' JSON bytes), each tool's SHA-256
(32 bytes), each document's token count (uint32), each tool's scope set (uint32, an index into
the sets), the token ids, the terms joined by newlines (a term is a run of word characters, so
it holds none), and the distinct scope sets as a JSON list of sorted lists.
"""

from __future__ import annotations

import binascii
import hashlib
import json
import struct
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from indexer.model import Tool
from indexer.retrieval.document import document_hash, document_text
from indexer.retrieval.lexical import Tokenised

MAGIC = b"CRIM"
# Changed by hand when the layout changes; derivations are covered by the fingerprint.
LAYOUT_VERSION = 2
_HEADER = struct.Struct("<4s16sIIIII")
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
    digest.update("\n".join(tokens.terms).encode() + tokens.ids.tobytes())
    return digest.digest()[:16]


FINGERPRINT = _derivation_fingerprint()


@dataclass(frozen=True, eq=False)
class CatalogImage:
    """Each tool's document hash, tokenised document and own scopes, in stored tool order."""

    doc_hashes: tuple[str, ...]
    tokens: Tokenised
    scopes: tuple[frozenset[str], ...]

    def __post_init__(self) -> None:
        if not len(self.doc_hashes) == len(self.tokens) == len(self.scopes):
            raise ValueError("an image has one document hash, document and scope set a tool")

    @classmethod
    def of_tools(cls, tools: Sequence[Tool], catalog_title: str) -> CatalogImage:
        """Derived from the tools (every field of each is read)."""
        documents = [document_text(tool, catalog_title) for tool in tools]
        return cls(
            tuple(document_hash(text) for text in documents),
            Tokenised.of(documents),
            tuple(tool.scopes for tool in tools),
        )

    def encode(self) -> bytes:
        tokens = self.tokens
        wide = len(tokens.terms) > 1 << 16
        ids = tokens.ids.astype("<u4" if wide else "<u2")
        terms = "\n".join(tokens.terms).encode("utf-8")
        sets = list(dict.fromkeys(self.scopes))
        index = {scopes: i for i, scopes in enumerate(sets)}
        scope_json = json.dumps([sorted(s) for s in sets], ensure_ascii=False).encode("utf-8")
        header = _HEADER.pack(
            MAGIC,
            FINGERPRINT,
            len(self.doc_hashes),
            len(terms),
            len(ids),
            4 if wide else 2,
            len(scope_json),
        )
        return b"".join(
            (
                header,
                binascii.unhexlify("".join(self.doc_hashes)),
                tokens.lengths.astype("<u4").tobytes(),
                np.asarray([index[s] for s in self.scopes], dtype="<u4").tobytes(),
                ids.tobytes(),
                terms,
                scope_json,
            )
        )


def decode(blob: bytes | None, tools: int) -> CatalogImage | None:
    """The image in `blob` when it was derived the way this process derives and holds
    `tools` documents; None otherwise (none stored, another derivation, or damaged)."""
    if not blob or len(blob) < _HEADER.size:
        return None
    magic, fingerprint, count, term_bytes, id_count, width, scope_bytes = _HEADER.unpack_from(blob)
    if magic != MAGIC or fingerprint != FINGERPRINT or count != tools or width not in (2, 4):
        return None
    hashes_end = _HEADER.size + count * _HASH_BYTES
    lengths_end = hashes_end + 4 * count
    scopes_end = lengths_end + 4 * count
    ids_end = scopes_end + width * id_count
    terms_end = ids_end + term_bytes
    if len(blob) != terms_end + scope_bytes:
        return None
    view = memoryview(blob)
    hexed = binascii.hexlify(view[_HEADER.size : hashes_end]).decode("ascii")
    step = 2 * _HASH_BYTES
    doc_hashes = tuple(hexed[i : i + step] for i in range(0, len(hexed), step))
    lengths = np.frombuffer(view[hashes_end:lengths_end], dtype="<u4").astype(np.int32)
    ids = np.frombuffer(view[scopes_end:ids_end], dtype="<u4" if width == 4 else "<u2")
    try:
        text = bytes(view[ids_end:terms_end]).decode("utf-8")
        terms = tuple(text.split("\n")) if text else ()
        sets = [frozenset(s) for s in json.loads(bytes(view[terms_end:]).decode("utf-8"))]
        scopes = tuple(
            sets[i] for i in np.frombuffer(view[lengths_end:scopes_end], dtype="<u4").tolist()
        )
        tokens = Tokenised(terms, ids.astype(np.int32), lengths)
    except (ValueError, IndexError, TypeError):
        return None
    return CatalogImage(doc_hashes, tokens, scopes)
