"""Token counts of the text an agent carries (OpenAI encodings via bpe-openai, offline)."""

from __future__ import annotations

import functools
import warnings
from typing import Any, Literal, get_args

Encoding = Literal["o200k_base", "cl100k_base"]
ENCODINGS: tuple[Encoding, ...] = get_args(Encoding)


@functools.cache
def _encoding(name: str) -> Any:
    if name not in ENCODINGS:
        raise ValueError(f"encoding must be one of {', '.join(ENCODINGS)}, not {name!r}")
    with warnings.catch_warnings():
        # bpe-openai reads its bundled ranks with a call Python 3.11 deprecates.
        warnings.simplefilter("ignore", DeprecationWarning)
        import bpe_openai

        return bpe_openai.get_encoding(name)


def count_tokens(text: str, encoding: Encoding = "o200k_base") -> int:
    return len(_encoding(encoding).encode(text))
