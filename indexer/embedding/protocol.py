"""What every embedding backend provides; the retrieval and the registry depend only on this."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np
from numpy.typing import NDArray


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
