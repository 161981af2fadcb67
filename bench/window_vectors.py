"""Whether dense cosines over word windows of the request help the ranker, on the tuning splits.

A long request names several needs ("find today's trending topics, draw a word cloud of them
and save it as a PDF"); its one vector sits between them, and so do its clauses' when they
are long or when no connective splits them. Windows of WINDOW_WORDS words, one every
STRIDE_WORDS, pooled from the one model pass over the request (as clause vectors are,
decision 0006), let a candidate match the part of the request it serves. This bench judges
two appended columns as `bench.appended_columns` judges any candidate feature: the
candidate's best cosine over the windows (the whole request's when it has no more than
WINDOW_WORDS words), and its gap to the best such cosine in the shortlist. Windows read the
request as the model gives it, without the query adapter. It also prints, per tuning set,
dense retrieval alone by the whole request's vector against the windows' best, P@1 / R@5
over the whole corpus.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from bench.appended_columns import appended, catalog_tools, judged, judged_table
from bench.tables import emit
from bench.tuning import tuning_run
from indexer.embedding import Embedder, SpanEmbedder
from indexer.evaluation.datasets import TUNING_SETS, load_dataset
from indexer.evaluation.learning import Shortlisted
from indexer.evaluation.metrics import recall_at_k
from indexer.retrieval.document import document_text
from registry.training import train

WINDOW_WORDS = 8
STRIDE_WORDS = 4
WINDOW_FEATURES = ("window_cosine_best", "window_gap_to_best")
_WORD = re.compile(r"\S+")


def word_windows(
    text: str, size: int = WINDOW_WORDS, stride: int = STRIDE_WORDS
) -> list[tuple[int, int]]:
    """Character spans of `size` words, one every `stride` words, the last ending at the
    text's last word; none for a text of at most `size` words."""
    words = [(m.start(), m.end()) for m in _WORD.finditer(text)]
    if len(words) <= size:
        return []
    spans = []
    for first in range(0, len(words) - size + stride, stride):
        last = min(first + size, len(words)) - 1
        spans.append((words[first][0], words[last][1]))
        if last == len(words) - 1:
            break
    return spans


def request_vectors(
    embedder: SpanEmbedder, text: str
) -> tuple[NDArray[np.float32], NDArray[np.float32]]:
    """The whole text's vector, and one row per window (the whole text's when it has none),
    from one model pass."""
    vectors = embedder.encode_spans(text, word_windows(text))
    whole = vectors[0]
    if whole is None:  # pragma: no cover - the whole text always has tokens in the window
        raise ValueError(f"no vector for {text!r}")
    windows = [v for v in vectors[1:] if v is not None]
    return whole, np.vstack(windows or [whole]).astype(np.float32)


def window_columns(
    windows: NDArray[np.float32], candidates: NDArray[np.float32]
) -> NDArray[np.float32]:
    """Each candidate's best cosine over the windows, and its gap to the shortlist's best."""
    best = (windows @ candidates.T).max(axis=0)
    return np.column_stack([best, best - best.max()]).astype(np.float32)


def _dense_alone(
    vectors: NDArray[np.float32],
    ids: Sequence[str],
    requests: Mapping[str, tuple[NDArray[np.float32], NDArray[np.float32], frozenset[str]]],
) -> str:
    """P@1 / R@5 of the whole request's vector, then of the windows' best, over the corpus."""
    cells = []
    for pick in (0, 1):
        top1 = recall5 = 0.0
        for whole, windows, relevant in requests.values():
            scores = (vectors @ whole) if pick == 0 else (windows @ vectors.T).max(axis=0)
            ranked = [ids[i] for i in np.argsort(-scores, kind="stable")[:5]]
            top1 += ranked[0] in relevant
            recall5 += recall_at_k(ranked, relevant, 5)
        n = len(requests)
        cells.append(f"{top1 / n * 100:.2f} / {recall5 / n * 100:.2f}")
    return " against ".join(cells)


def with_windows(
    name: str, items: Sequence[Shortlisted], datasets: Path | None, embedder: SpanEmbedder
) -> tuple[list[Shortlisted], str]:
    """`items` with the window columns appended, and dense retrieval alone by each vector."""
    dataset = load_dataset(name, datasets)
    tools = catalog_tools(dataset)
    ids = [tool.id for tool, _ in tools]
    vectors = embedder.encode([document_text(tool, title) for tool, title in tools])
    row = {tool_id: i for i, tool_id in enumerate(ids)}
    requests = {
        query.id: (*request_vectors(embedder, query.query), query.relevant)
        for query in dataset.queries
    }
    extended = appended(
        items,
        lambda item: window_columns(
            requests[item.query_id][1], vectors[[row[i] for i in item.ids]]
        ),
    )
    judged_requests = {key: value for key, value in requests.items() if value[2]}
    return extended, _dense_alone(vectors, ids, judged_requests)


def main() -> None:
    run = tuning_run(__doc__.splitlines()[0])
    embedder: Embedder = run.embedder
    if not isinstance(embedder, SpanEmbedder):
        raise SystemExit("window_vectors: the embedder cannot pool spans of one pass")
    tuning = train(embedder, datasets=run.datasets, workdir=run.workdir).tuning
    extended: dict[str, list[Shortlisted]] = {}
    dense: dict[str, str] = {}
    for name in TUNING_SETS:
        extended[name], dense[name] = with_windows(name, tuning[name], run.datasets, embedder)
    cells = judged(extended, WINDOW_FEATURES, "with the window columns")
    lines = [
        "# Dense cosines over word windows of the request, judged across the tuning splits",
        "",
        run.header("bench.window_vectors"),
        "",
        f"Windows of {WINDOW_WORDS} words, one every {STRIDE_WORDS}. Dense retrieval alone over "
        "each tuning set's corpus, P@1 / R@5 in percent, by the whole request's vector against "
        "the windows' best: " + "; ".join(f"{name} {dense[name]}" for name in TUNING_SETS) + ".",
        "",
        *judged_table(cells),
    ]
    emit(lines, run.out)


if __name__ == "__main__":
    main()
