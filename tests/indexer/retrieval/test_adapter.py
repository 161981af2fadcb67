"""The query adapter: it maps and normalises request vectors, round trips through the model
file bit for bit, applies only to the space it was fitted in, and its fit learns a mapping
it was shown, deterministically, staying near the identity under a heavy penalty."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from numpy.typing import NDArray

from capreg.training.adapting import AdapterSet, dense_metrics, fit_adapter
from capreg.training.learning import fit_ranker
from indexer.embedding import Embedder
from indexer.retrieval.adapter import QueryAdapter
from indexer.retrieval.learned import LearnedStage, ModelFileError, dumps, load_learned_stage
from registry.config import SearchSettings
from registry.core import Registry
from registry.store import SqliteStore
from tests.synthetic import synthetic_shortlists


def _unit(rows: NDArray[np.float64]) -> NDArray[np.float32]:
    unit: NDArray[np.float32] = (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(
        np.float32
    )
    return unit


def _rotated_requests(
    seed: int, tools: NDArray[np.float32], rotation: NDArray[np.float64]
) -> AdapterSet:
    """Requests that are their gold tool's vector, noised and then rotated: raw cosine finds
    the gold tool poorly; undoing the rotation finds it."""
    rng = np.random.default_rng(seed)
    gold = rng.integers(0, len(tools), size=300)
    noisy = tools[gold] + 0.35 * rng.normal(size=(len(gold), tools.shape[1]))
    return AdapterSet(
        name=f"synthetic-{seed}",
        requests=_unit(noisy @ rotation.T),
        tools=tools,
        gold=tuple((int(g),) for g in gold),
    )


@pytest.fixture(scope="module")
def rotated() -> tuple[AdapterSet, AdapterSet, AdapterSet]:
    rng = np.random.default_rng(3)
    dimension = 16
    rotation, _ = np.linalg.qr(rng.normal(size=(dimension, dimension)))
    first = _unit(rng.normal(size=(40, dimension)))
    second = _unit(rng.normal(size=(40, dimension)))
    return (
        _rotated_requests(1, first, rotation),
        _rotated_requests(2, second, rotation),
        _rotated_requests(4, _unit(rng.normal(size=(40, dimension))), rotation),
    )


def test_apply_maps_and_normalises_each_vector() -> None:
    matrix = np.diag([2.0, 1.0, 0.0]).astype(np.float32)
    adapter = QueryAdapter(matrix, "m")
    mapped = adapter.apply([np.asarray([1.0, 1.0, 5.0], dtype=np.float32)])
    np.testing.assert_allclose(mapped[0], np.asarray([2.0, 1.0, 0.0]) / np.sqrt(5.0), rtol=1e-6)
    assert adapter.apply([]) == []
    identity = QueryAdapter(np.eye(3, dtype=np.float32), "m")
    vector = _unit(np.asarray([[0.2, -0.4, 0.9]]))[0]
    np.testing.assert_allclose(identity.apply([vector])[0], vector, rtol=1e-6)


def test_a_non_square_adapter_is_refused() -> None:
    with pytest.raises(ValueError, match="square, not 2x3"):
        QueryAdapter(np.zeros((2, 3), dtype=np.float32), "m")


def test_the_model_file_round_trips_the_adapter_bit_for_bit(tmp_path: Path) -> None:
    rng = np.random.default_rng(5)
    adapter = QueryAdapter(rng.normal(size=(8, 8)).astype(np.float32), "model@abc")
    stage = LearnedStage(
        fit_ranker(synthetic_shortlists(6), [0, 1], rounds=3), (0, 1), None, "", adapter
    )
    path = tmp_path / "stage.json"
    path.write_text(dumps(stage))
    loaded = load_learned_stage(path)
    assert loaded is not None
    assert loaded.adapter is not None
    assert loaded.adapter.model == "model@abc"
    np.testing.assert_array_equal(loaded.adapter.matrix, adapter.matrix)
    assert dumps(loaded) == dumps(stage)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"dimension": 9}, "holds 256 bytes, expected 324"),
        ({"matrix_f32_base64": "not base64!"}, "base64|Incorrect padding|Non-base64"),
    ],
)
def test_a_damaged_adapter_is_refused_by_name(
    tmp_path: Path, change: dict[str, object], message: str
) -> None:
    adapter = QueryAdapter(np.eye(8, dtype=np.float32), "m")
    stage = LearnedStage(
        fit_ranker(synthetic_shortlists(6), [0, 1], rounds=3), (0, 1), None, "", adapter
    )
    document = json.loads(dumps(stage))
    document["query_adapter"] |= change
    path = tmp_path / "stage.json"
    path.write_text(json.dumps(document))
    with pytest.raises(ModelFileError, match=message):
        load_learned_stage(path)


def test_an_adapter_fits_its_model_and_the_int8_export_of_it_only() -> None:
    adapter = QueryAdapter(np.eye(4, dtype=np.float32), "minilm@abc")
    assert adapter.fits("minilm@abc", 4)
    assert adapter.fits("minilm@abc+int8", 4)
    assert not adapter.fits("other@def", 4)
    assert not adapter.fits("minilm@abc", 8)


def test_fitting_learns_a_mapping_that_carries_to_a_corpus_it_has_not_seen(
    rotated: tuple[AdapterSet, AdapterSet, AdapterSet],
) -> None:
    first, second, unseen = rotated
    adapter = fit_adapter([first, second], "m", penalty=1e-4)
    before, after = dense_metrics(unseen, None), dense_metrics(unseen, adapter)
    assert after["precision@1"] > before["precision@1"] + 20.0
    assert after["recall@5"] > before["recall@5"]


def test_fitting_is_deterministic_and_a_heavy_penalty_keeps_the_identity(
    rotated: tuple[AdapterSet, AdapterSet, AdapterSet],
) -> None:
    first, second, _ = rotated
    once = fit_adapter([first, second], "m", steps=20)
    again = fit_adapter([first, second], "m", steps=20)
    np.testing.assert_array_equal(once.matrix, again.matrix)
    held = fit_adapter([first, second], "m", penalty=1e4, steps=50)
    identity = np.eye(first.requests.shape[1], dtype=np.float32)
    assert np.abs(held.matrix - identity).max() < 1e-3 < np.abs(once.matrix - identity).max()


def test_fitting_without_any_gold_tool_is_refused() -> None:
    empty = AdapterSet(
        name="none",
        requests=np.ones((2, 4), dtype=np.float32),
        tools=np.ones((3, 4), dtype=np.float32),
        gold=((), ()),
    )
    with pytest.raises(ValueError, match="no tuning request has a gold tool"):
        fit_adapter([empty], "m")


def test_serving_drops_an_adapter_fitted_for_another_model(
    model: Embedder, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    adapter = QueryAdapter(np.zeros((model.dimension, model.dimension), dtype=np.float32), "x@1")
    stage = LearnedStage(
        fit_ranker(synthetic_shortlists(6), [0, 1], rounds=3), (0, 1), None, "", adapter
    )
    path = tmp_path / "stage.json"
    path.write_text(dumps(stage))
    store = SqliteStore(tmp_path / "r.db")
    try:
        with caplog.at_level(logging.WARNING):
            registry = Registry(store, model, settings=SearchSettings(learned_stage=path))
        assert "fitted for x@1" in caplog.text
        assert "ranked without it" in caplog.text
        # A zero matrix would send every request to the zero vector; dropped, search works.
        registry.load()
        assert registry.reader.query_adapter is None
    finally:
        store.close()


def test_a_model_file_from_before_the_adapter_is_served_without_one(tmp_path: Path) -> None:
    stage = LearnedStage(fit_ranker(synthetic_shortlists(6), [0, 1], rounds=3), (0, 1), None)
    document = json.loads(dumps(stage))
    document["format"] = 1
    del document["query_adapter"]
    path = tmp_path / "stage.json"
    path.write_text(json.dumps(document))
    loaded = load_learned_stage(path)
    assert loaded is not None
    assert loaded.adapter is None


_FIT_DIGEST = """
import hashlib, os, sys
import numpy as np
from capreg.training.adapting import AdapterSet, fit_adapter
rng = np.random.default_rng(11)
def unit(rows):
    return (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)
sets = []
for seed in range(2):
    tools = unit(rng.normal(size=(300, 96)))
    gold = rng.integers(0, 300, size=400)
    requests = unit(tools[gold] + 0.5 * rng.normal(size=(400, 96)))
    sets.append(AdapterSet(name=str(seed), requests=requests, tools=tools,
                           gold=tuple((int(g),) for g in gold)))
adapter = fit_adapter(sets, "m", steps=40, single=os.environ.get("FIT_SINGLE") == "1")
sys.stdout.write(hashlib.sha256(adapter.matrix.tobytes()).hexdigest())
"""


def _fit_digest(**env: str) -> str:
    root = Path(__file__).resolve().parents[3]
    result = subprocess.run(
        [sys.executable, "-c", _FIT_DIGEST],
        cwd=root,
        env={**os.environ, "PYTHONPATH": str(root), **env},
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    )
    return result.stdout


PLAIN_KERNELS = {"ATEN_CPU_CAPABILITY": "default", "MKL_CBWR": "COMPATIBLE"}


def test_fitting_gives_the_same_adapter_whatever_vector_kernels_the_cpu_runs() -> None:
    # Another CPU is simulated by torch's plain kernels and MKL's compatible code path
    # against the best this CPU has. In float32 (before decision 0059) the two differ, which
    # shows the simulation reaches the fit; in float64 they store the same bytes.
    assert _fit_digest(FIT_SINGLE="1") != _fit_digest(FIT_SINGLE="1", **PLAIN_KERNELS)
    assert _fit_digest() == _fit_digest(**PLAIN_KERNELS)
