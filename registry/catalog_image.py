"""What a catalog's segment is made from besides its tools and vectors, stored with the catalog
so that a restart (or a replica joining) derives nothing again: each tool's document hash (the
key of its vector) and its document's tokens.

An image is written in the transaction that stores its catalog's revision, so it always
belongs to the tools stored beside it. It is also stamped with a fingerprint of how document
texts and tokens are derived: after an upgrade that derives them differently, a stored image
no longer matches, the catalog is derived from its tools as before, and the new image is
written back (`Writer.load`).

Layout (little-endian): the magic, the fingerprint (16 bytes), then four uint32 (tools, terms'
UTF-8 bytes, token ids, bytes per id: 2 or 4), each tool's SHA-256 (32 bytes), each
document's token count (uint32), the token ids, and the terms joined by newlines (a term is a
run of word characters, so it holds none).
"""

from __future__ import annotations

import binascii
import hashlib
import struct
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from indexer.model import Tool
from indexer.retrieval.document import document_hash, document_text
from indexer.retrieval.lexical import Tokenised

MAGIC = b"CRIM"
# Changed by hand when the layout changes; derivations are covered by the fingerprint.
LAYOUT_VERSION = 1
_HEADER = struct.Struct("<4s16sIIII")
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
    """Each tool's document hash and the tokenised documents, in stored tool order."""

    doc_hashes: tuple[str, ...]
    tokens: Tokenised

    @classmethod
    def of_documents(cls, documents: Sequence[str]) -> CatalogImage:
        return cls(tuple(document_hash(text) for text in documents), Tokenised.of(documents))

    def encode(self) -> bytes:
        tokens = self.tokens
        wide = len(tokens.terms) > 1 << 16
        ids = tokens.ids.astype("<u4" if wide else "<u2")
        terms = "\n".join(tokens.terms).encode("utf-8")
        return b"".join(
            (
                _HEADER.pack(
                    MAGIC, FINGERPRINT, len(self.doc_hashes), len(terms), len(ids), 4 if wide else 2
                ),
                binascii.unhexlify("".join(self.doc_hashes)),
                tokens.lengths.astype("<u4").tobytes(),
                ids.tobytes(),
                terms,
            )
        )


def decode(blob: bytes | None, tools: int) -> CatalogImage | None:
    """The image in `blob` when it was derived the way this process derives and holds
    `tools` documents; None otherwise (none stored, another derivation, or damaged)."""
    if not blob or len(blob) < _HEADER.size:
        return None
    magic, fingerprint, count, term_bytes, id_count, width = _HEADER.unpack_from(blob)
    if magic != MAGIC or fingerprint != FINGERPRINT or count != tools or width not in (2, 4):
        return None
    hashes_end = _HEADER.size + count * _HASH_BYTES
    lengths_end = hashes_end + 4 * count
    ids_end = lengths_end + width * id_count
    if len(blob) != ids_end + term_bytes:
        return None
    view = memoryview(blob)
    hexed = binascii.hexlify(view[_HEADER.size : hashes_end]).decode("ascii")
    step = 2 * _HASH_BYTES
    doc_hashes = tuple(hexed[i : i + step] for i in range(0, len(hexed), step))
    lengths = np.frombuffer(view[hashes_end:lengths_end], dtype="<u4").astype(np.int32)
    ids = np.frombuffer(view[lengths_end:ids_end], dtype="<u4" if width == 4 else "<u2")
    text = bytes(view[ids_end:]).decode("utf-8")
    terms = tuple(text.split("\n")) if text else ()
    try:
        tokens = Tokenised(terms, ids.astype(np.int32), lengths)
    except ValueError:
        return None
    return CatalogImage(doc_hashes, tokens)
