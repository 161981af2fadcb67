"""sentence-transformers on torch: the reference backend, and the only module importing it."""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from indexer.embedding.model_files import default_model_path, model_fingerprint

logger = logging.getLogger(__name__)


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
