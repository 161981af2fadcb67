"""Fine-tuning's inputs: batches fit for in-batch negatives, and the overlay it ships."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from safetensors.numpy import load_file, save_file

from capreg.training import stage
from capreg.training.encoder import Pair, batches, pairs_digest, write_overlay
from indexer.embedding.model_files import WEIGHTS, base_model_path

pairs_strategy = st.lists(
    st.builds(Pair, st.sampled_from("abcdefgh"), st.sampled_from("stuvwxyz")), max_size=60
)


@given(pairs_strategy, st.integers(min_value=2, max_value=8), st.integers(0, 1_000))
def test_a_batch_never_holds_a_request_or_a_tool_twice(
    pairs: list[Pair], size: int, seed: int
) -> None:
    used: list[Pair] = []
    for batch in batches(pairs, size, random.Random(seed)):
        assert 1 < len(batch) <= size
        assert len({p.query for p in batch}) == len(batch)
        assert len({p.document for p in batch}) == len(batch)
        used.extend(batch)
    remaining = list(pairs)
    for pair in used:
        remaining.remove(pair)  # each pair at most as often as it was given


@given(st.integers(0, 200), st.integers(min_value=2, max_value=40), st.integers(0, 1_000))
def test_distinct_pairs_are_all_used_but_a_last_one_left_alone(
    count: int, size: int, seed: int
) -> None:
    pairs = [Pair(f"request {i}", f"tool {i}") for i in range(count)]
    used = [p for batch in batches(pairs, size, random.Random(seed)) for p in batch]
    assert len(used) == count - (1 if count % size == 1 else 0)
    assert len(set(used)) == len(used)


def test_the_same_seed_plans_the_same_batches() -> None:
    pairs = [Pair(f"q{i % 17}", f"d{i % 23}") for i in range(200)]
    assert batches(pairs, 8, random.Random(3)) == batches(pairs, 8, random.Random(3))
    assert batches(pairs, 8, random.Random(3)) != batches(pairs, 8, random.Random(4))
    assert pairs_digest(pairs) != pairs_digest(pairs[::-1])


def test_the_overlay_holds_only_the_tensors_fine_tuning_changed(tmp_path: Path) -> None:
    base = load_file(str(base_model_path() / WEIGHTS))
    tuned = tmp_path / "tuned"
    tuned.mkdir()
    changed = dict(base)
    changed["encoder.layer.0.attention.self.query.bias"] = base[
        "encoder.layer.0.attention.self.query.bias"
    ] + np.float32(0.125)
    save_file(changed, str(tuned / WEIGHTS))
    write_overlay(tuned, base_model_path(), tmp_path / "encoder.safetensors")
    overlay = load_file(str(tmp_path / "encoder.safetensors"))
    assert list(overlay) == ["encoder.layer.0.attention.self.query.bias"]
    assert overlay["encoder.layer.0.attention.self.query.bias"].dtype == np.float16


def test_with_a_tuned_encoder_shipped_the_ranker_learns_from_the_base_without_adapter(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(stage, "OVERLAY_FILE", tmp_path / "encoder.safetensors")
    assert stage.ranker_encoder(None) == (None, True)
    assert stage.ranker_encoder(tmp_path / "folder") == (tmp_path / "folder", True)
    (tmp_path / "encoder.safetensors").write_bytes(b"")
    assert stage.ranker_encoder(None) == (base_model_path(), False)
    # A folder named on the command line is served as it is, and learned from as it is.
    assert stage.ranker_encoder(tmp_path / "folder") == (tmp_path / "folder", True)
