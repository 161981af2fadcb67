"""Sentence embeddings behind one protocol; `load_embedder` is the only way to get a backend.

Two backends run the same model folder: ONNX Runtime (`onnx`, the default: no torch in the
serving process, ~3x less time per query) and sentence-transformers on torch (`torch`, the
reference, and the fallback for folders whose pipeline the ONNX backend cannot reproduce).
Their vectors agree to float32 rounding, so they share a model id. This factory is the only
module that imports the backends; they import only `protocol` and `model_files`.
"""

from __future__ import annotations

import logging
from enum import StrEnum
from pathlib import Path
from typing import Any

from indexer.embedding.protocol import Embedder, Opener, SpanEmbedder, at_once

__all__ = ["BACKENDS", "Embedder", "EmbedderBackend", "Opener", "SpanEmbedder", "load_embedder"]

logger = logging.getLogger(__name__)


class EmbedderBackend(StrEnum):
    ONNX = "onnx"
    ONNX_INT8 = "onnx-int8"
    TORCH = "torch"


BACKENDS = tuple(EmbedderBackend)


def load_embedder(
    model_path: Path | None = None,
    backend: EmbedderBackend = EmbedderBackend.ONNX,
    *,
    cache_dir: Path | None = None,
    opens: Opener[Any] | None = None,
) -> Embedder:
    """The model in `model_path` (default: the packaged MiniLM) on the chosen backend.

    "onnx-int8" quantizes the weights (about twice as fast; its own model id, since its
    vectors differ slightly). Both ONNX backends fall back to "torch", with a warning, when
    the folder's pipeline has modules they do not reproduce or the export cannot be written.
    `cache_dir` holds the ONNX exports (default: ~/.cache/capreg).

    `opens` (default: at once, on the calling thread) runs the model's opening and its first
    pass. The ONNX backends return at once with their session opening through it, and their
    first encode waits for it; sentence-transformers opens through it and is waited for.
    """
    if backend not in BACKENDS:
        raise ValueError(f"embedder backend must be one of {', '.join(BACKENDS)}, not {backend!r}")
    if backend in (EmbedderBackend.ONNX, EmbedderBackend.ONNX_INT8):
        from indexer.embedding.onnx import ExportFailed, OnnxEmbedder, UnsupportedModel

        try:
            return OnnxEmbedder(
                model_path,
                cache_dir=cache_dir,
                int8=backend == EmbedderBackend.ONNX_INT8,
                opens=opens or at_once,
            )
        except (UnsupportedModel, ExportFailed, OSError) as exc:
            logger.warning("ONNX backend unavailable (%s); using sentence-transformers", exc)
    from indexer.embedding.torch import SentenceTransformerEmbedder

    if opens is None:
        return SentenceTransformerEmbedder(model_path)

    def opened() -> Embedder:
        embedder = SentenceTransformerEmbedder(model_path)
        embedder.encode(["start the model's thread pools"])
        return embedder

    embedder: Embedder = opens(opened).result()
    return embedder
