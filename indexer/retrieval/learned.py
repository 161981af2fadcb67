"""The learned ranking stage and the weak-match classifier, as served.

Both are fitted by `make train` on the tuning splits only (capreg.training.stage collects the
shortlists, capreg.training.learning fits) and committed as one small JSON file. Serving needs
no learning library: the ranker is a LightGBM lambdarank ensemble whose trees are evaluated
here with numpy (a test holds the result equal to LightGBM's own prediction), and the
weak-match flag is a logistic model over the top hit's facts with a threshold chosen on
held-apart requests. Without the file, search falls back to the fixed blend and the cosine
threshold.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from indexer.retrieval.adapter import QueryAdapter
from indexer.retrieval.features import FEATURE_NAMES

MODEL_FORMAT = 2
# Formats this code serves: 1 is the same model without a query adapter.
READABLE_FORMATS = (1, MODEL_FORMAT)
# Small against any two distinct sums of leaf values, large against float noise.
TIE_BREAK = 1e-6
MODEL_FILE = Path(__file__).with_name("learned_stage.json")

# What the weak-match classifier reads about a ranked answer (see confidence_features). Only
# facts whose meaning does not shift with the corpus or the request's length: a model that
# also read the BM25 coverage or the request's length fitted the tuning set better and
# flagged up to 55% of another set's answerable requests.
CONFIDENCE_FEATURES = (
    "top_dense_cosine",
    "best_above_corpus_mean",
    "best_above_tenth",
    "top_learned_score",
    "learned_margin",
)
_COLUMN = {name: i for i, name in enumerate(FEATURE_NAMES)}
TENTH = 9
# The facts that say how close the best tool is, and those that say how far it stands out.
_CLOSENESS = (0, 1, 3)
_STANDING_OUT = (2, 4)


class WeakReason(StrEnum):
    """Why an answer is weak."""

    # Nothing is near the request.
    NO_CLOSE_TOOL = "no_close_tool"
    # Tools are near, but alike: none stands out.
    NEAREST_TOOLS_ALIKE = "nearest_tools_alike"
    # Nothing the caller may see was eligible.
    NOTHING_ELIGIBLE = "nothing_eligible"


class ModelFileError(ValueError):
    """The learned stage's file is not one this code can serve."""


@dataclass(frozen=True, eq=False)
class TreeEnsemble:
    """A sum of binary regression trees over feature columns; children < 0 are leaves
    (`~child` is the leaf's index)."""

    split_feature: NDArray[np.int64]  # (trees, nodes)
    threshold: NDArray[np.float64]
    left: NDArray[np.int64]
    right: NDArray[np.int64]
    leaf_value: NDArray[np.float64]  # (trees, leaves)
    start: NDArray[np.int64]  # (trees,): 0, or -1 for a tree that is one leaf
    depth: int
    _walk: tuple[NDArray[Any], ...] = field(init=False, repr=False)
    _offsets: NDArray[np.int64] = field(init=False, repr=False)
    _start: NDArray[np.int64] = field(init=False, repr=False)

    @classmethod
    def from_lightgbm(cls, dump: dict[str, Any]) -> TreeEnsemble:
        """From LightGBM's `Booster.dump_model()` (numerical "<=" splits only)."""
        trees = [t["tree_structure"] for t in dump["tree_info"]]
        flat = [_flatten(tree) for tree in trees]
        nodes = max([len(f[0]) for f in flat] + [1])
        leaves = max(len(f[4]) for f in flat) if flat else 1
        count = len(flat)
        split_feature = np.zeros((count, nodes), dtype=np.int64)
        threshold = np.zeros((count, nodes), dtype=np.float64)
        left = np.full((count, nodes), -1, dtype=np.int64)
        right = np.full((count, nodes), -1, dtype=np.int64)
        leaf_value = np.zeros((count, leaves), dtype=np.float64)
        start = np.zeros(count, dtype=np.int64)
        depth = 0
        for t, (features, thresholds, lefts, rights, values, tree_depth) in enumerate(flat):
            split_feature[t, : len(features)] = features
            threshold[t, : len(thresholds)] = thresholds
            left[t, : len(lefts)] = lefts
            right[t, : len(rights)] = rights
            leaf_value[t, : len(values)] = values
            start[t] = 0 if features else -1
            depth = max(depth, tree_depth)
        return cls(split_feature, threshold, left, right, leaf_value, start, depth)

    def __post_init__(self) -> None:
        # Walking tables, one row per tree: internal nodes first, then the leaves as nodes
        # that lead to themselves (threshold +inf), so every row takes exactly `depth` steps
        # with no per-step bookkeeping of which rows have arrived; flat, so each step is a few
        # 1-D takes over (candidates x trees).
        trees, nodes = self.split_feature.shape
        leaves = self.leaf_value.shape[1]
        width = nodes + leaves
        feature = np.zeros((trees, width), dtype=np.int64)
        threshold = np.full((trees, width), np.inf)
        left = np.tile(np.arange(width, dtype=np.int64), (trees, 1))
        right = left.copy()
        feature[:, :nodes] = self.split_feature
        threshold[:, :nodes] = self.threshold
        # A child < 0 is the leaf ~child, now the node nodes + ~child.
        left[:, :nodes] = np.where(self.left >= 0, self.left, nodes + ~self.left)
        right[:, :nodes] = np.where(self.right >= 0, self.right, nodes + ~self.right)
        offsets = (np.arange(trees, dtype=np.int64) * width)[None, :]
        values = np.zeros((trees, width))
        values[:, nodes:] = self.leaf_value
        start = np.where(self.start >= 0, 0, nodes).astype(np.int64)
        walk = (feature.ravel(), threshold.ravel(), left.ravel(), right.ravel(), values.ravel())
        object.__setattr__(self, "_walk", walk)
        object.__setattr__(self, "_offsets", offsets)
        object.__setattr__(self, "_start", start)

    def predict(self, features: NDArray[np.float32]) -> NDArray[np.float64]:
        """The ensemble's raw score for each row of `features`."""
        rows = len(features)
        if not rows or not len(self.start):
            return np.zeros(rows, dtype=np.float64)
        feature, threshold, left, right, values = self._walk
        columns = features.shape[1]
        x = features.astype(np.float64).ravel()
        row_base = (np.arange(rows, dtype=np.int64) * columns)[:, None]
        flat = np.broadcast_to(self._start + self._offsets, (rows, len(self.start))).copy()
        for _ in range(self.depth):
            value = x.take(row_base + feature.take(flat))
            flat = np.where(value <= threshold.take(flat), left.take(flat), right.take(flat))
            flat += self._offsets
        result: NDArray[np.float64] = values.take(flat).sum(axis=1)
        return result

    def to_json(self) -> dict[str, Any]:
        return {
            "split_feature": self.split_feature.tolist(),
            "threshold": self.threshold.tolist(),
            "left": self.left.tolist(),
            "right": self.right.tolist(),
            "leaf_value": self.leaf_value.tolist(),
            "start": self.start.tolist(),
            "depth": self.depth,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> TreeEnsemble:
        return cls(
            np.asarray(data["split_feature"], dtype=np.int64),
            np.asarray(data["threshold"], dtype=np.float64),
            np.asarray(data["left"], dtype=np.int64),
            np.asarray(data["right"], dtype=np.int64),
            np.asarray(data["leaf_value"], dtype=np.float64),
            np.asarray(data["start"], dtype=np.int64),
            int(data["depth"]),
        )


def _flatten(
    tree: dict[str, Any],
) -> tuple[list[int], list[float], list[int], list[int], list[float], int]:
    """One dumped tree as arrays indexed by split_index (leaves by leaf_index)."""
    features: dict[int, int] = {}
    thresholds: dict[int, float] = {}
    lefts: dict[int, int] = {}
    rights: dict[int, int] = {}
    values: dict[int, float] = {}

    def child(node: dict[str, Any], depth: int) -> tuple[int, int]:
        if "split_index" not in node:
            index = int(node.get("leaf_index", 0))
            values[index] = float(node["leaf_value"])
            return ~index, depth
        if node.get("decision_type") != "<=":
            raise ModelFileError(f"unsupported split {node.get('decision_type')!r}")
        index = int(node["split_index"])
        features[index] = int(node["split_feature"])
        thresholds[index] = float(node["threshold"])
        lefts[index], left_depth = child(node["left_child"], depth + 1)
        rights[index], right_depth = child(node["right_child"], depth + 1)
        return index, max(left_depth, right_depth)

    _, depth = child(tree, 0)

    def ordered(table: dict[int, Any]) -> list[Any]:
        return [table[i] for i in range(len(table))]

    return (
        ordered(features),
        ordered(thresholds),
        ordered(lefts),
        ordered(rights),
        ordered(values),
        depth,
    )


@dataclass(frozen=True, eq=False)
class WeakMatch:
    """P(the best hit answers the request) from the answer's facts; below `threshold` the
    answer is flagged weak. So is an answer whose best cosine (any intent, any candidate) is
    below `cosine_floor`, under which almost no answerable tuning request falls: the
    classifier, fitted where requests are long, is lenient with short unrelated ones."""

    mean: NDArray[np.float64]
    scale: NDArray[np.float64]
    coef: NDArray[np.float64]
    intercept: float
    threshold: float
    cosine_floor: float = 0.0

    def probability(self, facts: NDArray[np.float64]) -> NDArray[np.float64]:
        z = ((facts - self.mean) / self.scale) @ self.coef + self.intercept
        result: NDArray[np.float64] = 1.0 / (1.0 + np.exp(-z))
        return result

    def reason(self, facts: NDArray[np.float64]) -> WeakReason:
        """Which group of facts weighs most against the answer: how close the best tool is
        (its cosine, how far it stands above the corpus, the ranker's score for it), or how
        far it stands out from the next ones (above the tenth, the ranker's margin)."""
        pulls = (facts - self.mean) / self.scale * self.coef
        close = float(pulls[list(_CLOSENESS)].sum())
        apart = float(pulls[list(_STANDING_OUT)].sum())
        return WeakReason.NEAREST_TOOLS_ALIKE if apart < close else WeakReason.NO_CLOSE_TOOL

    def to_json(self) -> dict[str, Any]:
        return {
            "features": list(CONFIDENCE_FEATURES),
            "mean": self.mean.tolist(),
            "scale": self.scale.tolist(),
            "coef": self.coef.tolist(),
            "intercept": self.intercept,
            "threshold": self.threshold,
            "cosine_floor": self.cosine_floor,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> WeakMatch:
        if list(data["features"]) != list(CONFIDENCE_FEATURES):
            raise ModelFileError("the weak-match model reads other facts than this code has")
        return cls(
            np.asarray(data["mean"], dtype=np.float64),
            np.asarray(data["scale"], dtype=np.float64),
            np.asarray(data["coef"], dtype=np.float64),
            float(data["intercept"]),
            float(data["threshold"]),
            float(data["cosine_floor"]),
        )


def best_cosine(features: NDArray[np.float32]) -> float:
    """The best cosine of any candidate with the request or one of its clauses."""
    return float(features[:, _COLUMN["dense_cosine_best_intent"]].max()) if len(features) else 0.0


def confidence_features(
    learned: NDArray[np.float64], features: NDArray[np.float32]
) -> NDArray[np.float64]:
    """The weak-match facts of one answer: its shortlist's learned scores and feature rows,
    both in final order (best first)."""
    if not len(learned):
        return np.zeros(len(CONFIDENCE_FEATURES), dtype=np.float64)
    cosine = features[:, _COLUMN["dense_cosine"]].astype(np.float64)
    scaled = features[:, _COLUMN["dense_scaled"]].astype(np.float64)
    order = np.argsort(-cosine, kind="stable")
    best, tenth = int(order[0]), int(order[min(TENTH, len(order) - 1)])
    # Scaled scores are (cosine - corpus mean) / width: two rows give the width, and with it
    # how far the best cosine stands above the corpus mean (0 when they cannot tell).
    spread = scaled[best] - scaled[tenth]
    width = (cosine[best] - cosine[tenth]) / spread if spread > 1e-6 else 0.0
    return np.asarray(
        [
            cosine[0],
            width * scaled[best],
            cosine[best] - cosine[tenth],
            float(learned[0]),
            float(learned[0] - learned[1]) if len(learned) > 1 else 0.0,
        ],
        dtype=np.float64,
    )


@dataclass(frozen=True, eq=False)
class LearnedStage:
    """The committed ranker (over FEATURE_NAMES, possibly a subset of columns), the
    weak-match classifier and the query adapter the ranker's dense features were computed
    with."""

    ranker: TreeEnsemble
    columns: tuple[int, ...]
    weak: WeakMatch | None
    # SHA-256 of the tuning shortlists it was fitted on (`inputs_digest`): tells a refit on
    # other inputs from a refit on the same ones.
    inputs: str = ""
    adapter: QueryAdapter | None = None

    def score(self, features: NDArray[np.float32]) -> NDArray[np.float64]:
        """The ranker's score, plus the blend's score times TIE_BREAK: trees give equal
        scores to candidates that fall in the same leaves, and the blend orders those
        (an answer is ordered by its scores, ties by id: docs/api.md)."""
        learned = self.ranker.predict(features[:, list(self.columns)])
        return learned + TIE_BREAK * features[:, _COLUMN["blend_score"]].astype(np.float64)

    def weak_reason(
        self, learned: NDArray[np.float64], features: NDArray[np.float32]
    ) -> WeakReason | None:
        """Why a weak answer is weak (call it on answers `is_weak` flags): the group of facts
        that pulls the classifier's odds down most."""
        if self.weak is None or not len(learned) or best_cosine(features) < self.weak.cosine_floor:
            return WeakReason.NO_CLOSE_TOOL
        facts = confidence_features(learned, features)
        return self.weak.reason(facts)

    def is_weak(self, learned: NDArray[np.float64], features: NDArray[np.float32]) -> bool | None:
        """Whether the answer is weak, or None without a weak-match model."""
        if self.weak is None:
            return None
        if not len(learned):
            return True
        if best_cosine(features) < self.weak.cosine_floor:
            return True
        facts = confidence_features(learned, features)[None, :]
        return bool(self.weak.probability(facts)[0] < self.weak.threshold)

    def to_json(self) -> dict[str, Any]:
        return {
            "format": MODEL_FORMAT,
            "features": [FEATURE_NAMES[c] for c in self.columns],
            "ranker": self.ranker.to_json(),
            "weak_match": self.weak.to_json() if self.weak is not None else None,
            "inputs": self.inputs,
            "query_adapter": self.adapter.to_json() if self.adapter is not None else None,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> LearnedStage:
        if data.get("format") not in READABLE_FORMATS:
            expected = " or ".join(map(str, READABLE_FORMATS))
            raise ModelFileError(f"model format {data.get('format')!r}, expected {expected}")
        names = list(data["features"])
        unknown = [n for n in names if n not in _COLUMN]
        if unknown:
            raise ModelFileError(f"the model reads unknown features: {', '.join(unknown)}")
        weak = data.get("weak_match")
        adapter = data.get("query_adapter")
        return cls(
            TreeEnsemble.from_json(data["ranker"]),
            tuple(_COLUMN[n] for n in names),
            WeakMatch.from_json(weak) if weak else None,
            str(data.get("inputs", "")),
            QueryAdapter.from_json(adapter) if adapter else None,
        )


def load_learned_stage(path: Path | None = MODEL_FILE) -> LearnedStage | None:
    """The learned stage in `path` (default: the committed one), or None when there is no
    file (search then uses the fixed blend). A file that exists but cannot be served is an
    error: silently ranking another way would hide it."""
    if path is None or not path.exists():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return LearnedStage.from_json(data)
    except (KeyError, TypeError, ValueError) as exc:
        raise ModelFileError(f"{path}: {exc}") from exc


def dumps(stage: LearnedStage) -> str:
    """The committed file's text: stable key order and float formatting, so retraining on
    the same data gives the same bytes."""
    return json.dumps(stage.to_json(), indent=1, sort_keys=True, allow_nan=False) + "\n"
