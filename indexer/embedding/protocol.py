"""What every embedding backend provides; the retrieval and the registry depend only on this."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import Future
from typing import Protocol, TypeVar, runtime_checkable

import numpy as np
from numpy.typing import NDArray

T = TypeVar("T")
# Runs the opening of a model (a callable) and returns its future: on the calling thread
# (`at_once`), or on another while the caller goes on (a server reads its store meanwhile).
Opener = Callable[[Callable[[], T]], Future[T]]


def at_once(opening: Callable[[], T]) -> Future[T]:
    """Opens on the calling thread, raising what the opening raises."""
    opened: Future[T] = Future()
    opened.set_result(opening())
    return opened


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
