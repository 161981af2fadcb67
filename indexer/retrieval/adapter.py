"""The query adapter: a linear map fitted on the tuning splits that moves a request's vector
toward the tools that answer requests written that way.

The model embeds a short paraphrased request and a tool's documentation into one space, but
not the same region of it: "book me somewhere to sleep in Rome" and a hotel search tool's
description share few words and the pre-trained model knows nothing of how agents ask. The
adapter is a square matrix `A` (dimension x dimension, identity plus a fitted, penalised
correction) applied to request and clause vectors only, then normalised; tool vectors are
untouched, so registered catalogs need no re-embedding and the map costs one small
matrix-vector product per request. It belongs to the learned stage and is used exactly where
that stage is ([0057](../../docs/decisions/0057-a-query-adapter-fitted-on-the-tuning-splits.md)).
"""

from __future__ import annotations

import base64
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray


def base_model(model_id: str) -> str:
    """The model a vector space belongs to: the int8 export of a model shares its space."""
    return model_id.removesuffix("+int8")


@dataclass(frozen=True, eq=False)
class QueryAdapter:
    """`A` for the vectors of `model` (an embedder's model id, int8 suffix dropped)."""

    matrix: NDArray[np.float32]
    model: str

    def __post_init__(self) -> None:
        rows, columns = self.matrix.shape
        if rows != columns:
            raise ValueError(f"query adapter must be square, not {rows}x{columns}")

    @property
    def dimension(self) -> int:
        return int(self.matrix.shape[0])

    def fits(self, model_id: str, dimension: int) -> bool:
        """Whether it was fitted for this embedder's space."""
        return base_model(model_id) == self.model and dimension == self.dimension

    def apply(self, vectors: Sequence[NDArray[np.float32]]) -> list[NDArray[np.float32]]:
        """Each vector mapped and normalised (a zero image stays zero)."""
        if not vectors:
            return []
        mapped = np.stack(vectors).astype(np.float32) @ self.matrix.T
        norms = np.linalg.norm(mapped, axis=1, keepdims=True)
        mapped = mapped / np.where(norms > 0.0, norms, 1.0)
        return [row.astype(np.float32) for row in mapped]

    def to_json(self) -> dict[str, Any]:
        data = np.ascontiguousarray(self.matrix, dtype="<f4").tobytes()
        return {
            "model": self.model,
            "dimension": self.dimension,
            "matrix_f32_base64": base64.b64encode(data).decode("ascii"),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> QueryAdapter:
        dimension = int(data["dimension"])
        raw = base64.b64decode(data["matrix_f32_base64"], validate=True)
        if len(raw) != 4 * dimension * dimension:
            raise ValueError(
                f"query adapter holds {len(raw)} bytes, expected {4 * dimension * dimension} "
                f"for dimension {dimension}"
            )
        matrix = np.frombuffer(raw, dtype="<f4").reshape(dimension, dimension).astype(np.float32)
        if not np.isfinite(matrix).all():
            raise ValueError("query adapter holds a non-finite value")
        return cls(matrix, str(data["model"]))
