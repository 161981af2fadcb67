"""Fitting the query adapter (indexer.retrieval.adapter) on the tuning splits.

Each tuning set gives its requests' vectors, its corpus's tool vectors and which tools answer
each request. The adapter `A = I + W` minimises, over the sets, the cross-entropy of the gold
tools under a softmax of the adapted request's cosine to every tool of its corpus, plus
`PENALTY * |W|^2`, which keeps it near the identity (the pre-trained space) and away from
memorising one corpus. Each set weighs in proportion to the square root of its size, as in
the ranker. The settings below are fixed; the penalty was chosen inside the tuning splits
(fit on two sets, score the third: `python -m capreg.training.adapter_penalty`).

Deterministic: full-batch Adam from zeros, one thread, inputs in a fixed order, and computed
in float64 (stored as float32). In float32 the fit follows the CPU's vector kernels: one fit
run with torch's AVX-512 kernels and one with its plain ones differ in nearly every weight
(docs/experiments.md, the adapter-kernels row), and the ranker grown on either differs in its trees.
In float64 those differences stay far below float32's precision, so the stored adapter, and
the model file with it, are the same on any CPU (tests/indexer/retrieval/test_adapter.py
runs the fit under both kernels).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from indexer.evaluation.metrics import evaluate
from indexer.retrieval.adapter import QueryAdapter, base_model

PENALTY = 0.03
STEPS = 200
LEARNING_RATE = 0.01
# The softmax's inverse temperature over cosines (the usual contrastive scale for this model).
SCALE = 20.0


@dataclass(kw_only=True, frozen=True)
class AdapterSet:
    """One tuning set: request vectors (n x d), tool vectors (m x d) and, per request, the
    rows of the tools that answer it."""

    name: str
    requests: NDArray[np.float32]
    tools: NDArray[np.float32]
    gold: tuple[tuple[int, ...], ...]

    def __post_init__(self) -> None:
        if len(self.gold) != len(self.requests):
            raise ValueError(f"{self.name}: {len(self.requests)} requests, {len(self.gold)} golds")


def fit_adapter(
    sets: Sequence[AdapterSet],
    model_id: str,
    *,
    penalty: float = PENALTY,
    steps: int = STEPS,
    single: bool = False,
) -> QueryAdapter:
    """The adapter fitted on `sets` (requests without a gold tool in their corpus are left
    out: they teach nothing). `single` computes in float32, as fits did before decision 0059
    (the kernel test in tests/indexer/retrieval/test_adapter.py asks for it, to show that the
    simulated CPU reaches the fit and what float64 removes)."""
    import torch

    dtype = torch.float32 if single else torch.float64
    usable = [s for s in sets if any(s.gold)]
    if not usable:
        raise ValueError("no tuning request has a gold tool to fit the query adapter on")
    dimension = usable[0].requests.shape[1]
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        torch.manual_seed(0)
        batches = []
        for s in usable:
            keep = [i for i, rows in enumerate(s.gold) if rows]
            target = torch.zeros(len(keep), len(s.tools), dtype=dtype)
            for r, i in enumerate(keep):
                for row in s.gold[i]:
                    target[r, row] = 1.0 / len(s.gold[i])
            requests = torch.from_numpy(np.ascontiguousarray(s.requests[keep])).to(dtype)
            tools = torch.from_numpy(np.ascontiguousarray(s.tools)).to(dtype)
            batches.append((requests, tools, target))
        weights = np.sqrt([len(b[0]) for b in batches])
        weights = weights / weights.sum()
        correction = torch.zeros(dimension, dimension, dtype=dtype, requires_grad=True)
        optimiser = torch.optim.Adam([correction], lr=LEARNING_RATE)
        for _ in range(steps):
            optimiser.zero_grad()
            loss = penalty * (correction**2).sum()
            for (requests, tools, target), weight in zip(batches, weights, strict=True):
                mapped = requests + requests @ correction.T
                mapped = mapped / mapped.norm(dim=1, keepdim=True)
                log_p = torch.log_softmax(SCALE * mapped @ tools.T, dim=1)
                loss = loss - float(weight) * (target * log_p).sum(dim=1).mean()
            loss.backward()  # type: ignore[no-untyped-call]
            optimiser.step()
        matrix = np.eye(dimension) + correction.detach().numpy().astype(np.float64)
    finally:
        torch.set_num_threads(threads)
    return QueryAdapter(matrix.astype(np.float32), base_model(model_id))


def dense_metrics(
    s: AdapterSet, adapter: QueryAdapter | None, ks: Sequence[int] = (1, 5)
) -> dict[str, float]:
    """Dense retrieval alone over the set's corpus, with or without the adapter: P@1 and
    R@k in percent over requests with a gold tool (scored by `metrics.evaluate`)."""
    keep = [i for i, rows in enumerate(s.gold) if rows]
    vectors = [s.requests[i] for i in keep]
    if adapter is not None:
        vectors = adapter.apply(vectors)
    scores = np.stack(vectors) @ s.tools.T
    order = np.argsort(-scores, axis=1, kind="stable")[:, : max(ks)]
    judged = []
    for r, i in enumerate(keep):
        ranked = [str(row) for row in order[r].tolist()]
        judged.append((ranked, frozenset(str(row) for row in s.gold[i]), ranked))
    metrics = evaluate(judged, ks)
    wanted = ["precision@1", *(f"recall@{k}" for k in ks)]
    return {name: 100.0 * metrics[name] for name in wanted}


__all__ = ["PENALTY", "AdapterSet", "dense_metrics", "fit_adapter"]
