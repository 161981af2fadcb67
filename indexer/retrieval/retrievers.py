"""The retrievers a search can be asked for: the served default, two baselines, and the
default with one lever changed at a time (the ablation that measures each lever)."""

from __future__ import annotations

from enum import StrEnum

from indexer.retrieval.fusion import Levers
from indexer.retrieval.scaling import Scaling


class Retriever(StrEnum):
    DEFAULT = "default"
    DENSE = "dense"
    BM25 = "bm25"
    NO_INTENTS = "hybrid-no-intents"
    NO_CATALOG = "hybrid-no-catalog"
    NO_LEXICAL = "hybrid-no-lexical"
    NO_CUT = "hybrid-no-cut"
    NO_LITERAL = "hybrid-no-literal"
    CLAUSES_APART = "hybrid-clauses-apart"
    Z = "hybrid-z"
    MIN_MAX = "hybrid-minmax"
    RRF = "hybrid-rrf"
    # The fixed blend alone: the fallback path when no learned model is installed.
    BLEND = "hybrid-blend"


ABLATIONS: dict[Retriever, Levers] = {
    Retriever.NO_INTENTS: Levers(intents=False),
    Retriever.NO_CATALOG: Levers(catalog=False),
    Retriever.NO_LEXICAL: Levers(lexical=False),
    Retriever.NO_CUT: Levers(cut=False),
    Retriever.NO_LITERAL: Levers(literal=False),
    Retriever.CLAUSES_APART: Levers(joint_clauses=False),
    Retriever.Z: Levers(scaling=Scaling.Z),
    Retriever.MIN_MAX: Levers(scaling=Scaling.MIN_MAX),
    Retriever.RRF: Levers(scaling=Scaling.RRF),
    Retriever.BLEND: Levers(learned=False),
}
RETRIEVERS: tuple[str, ...] = tuple(Retriever)
