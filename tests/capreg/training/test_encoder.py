"""Fine-tuning's inputs: batches fit for in-batch negatives, and the overlay it ships."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from safetensors.numpy import load_file, save_file

from capreg.training import cross_fit
from capreg.training.encoder import (
    FOLDS,
    Pair,
    batches,
    fold_of,
    fold_overlay,
    pairs_digest,
    without_fold,
    write_overlay,
)
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


@given(st.lists(st.text(min_size=1, max_size=30), max_size=40), st.integers(2, 5))
def test_folds_split_the_requests_by_their_text(texts: list[str], folds: int) -> None:
    pairs = [Pair(text, f"tool {i}") for i, text in enumerate(texts)]
    kept = [without_fold(pairs, fold, folds) for fold in range(folds)]
    for fold, fitted_on in enumerate(kept):
        # An encoder fitted without a fold never sees one of its requests, in any set ...
        assert all(fold_of(p.query, folds) != fold for p in fitted_on)
        # ... and sees every other request.
        assert [p for p in pairs if p not in fitted_on] == [
            p for p in pairs if fold_of(p.query, folds) == fold
        ]
    for text in texts:
        assert fold_of(text, folds) == fold_of(f"  {text}\n", folds)


def test_a_fold_out_of_range_is_refused() -> None:
    with pytest.raises(ValueError, match=r"fold 2 is not one of 0\.\.1"):
        without_fold([Pair("q", "d")], 2, 2)


def test_with_a_tuned_encoder_shipped_the_ranker_learns_from_the_fold_encoders(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(cross_fit, "OVERLAY_FILE", tmp_path / "encoder.safetensors")
    monkeypatch.chdir(tmp_path)
    assert cross_fit.ranker_features(None) == cross_fit.RankerFeatures(None)
    named = cross_fit.RankerFeatures(tmp_path / "f")
    assert cross_fit.ranker_features(tmp_path / "f") == named
    (tmp_path / "encoder.safetensors").write_bytes(b"")
    with pytest.raises(FileNotFoundError, match="run `make train-encoder` first"):
        cross_fit.ranker_features(None)
    for fold in range(FOLDS):
        fold_overlay(fold).parent.mkdir(parents=True)
        fold_overlay(fold).write_bytes(b"")
    features = cross_fit.ranker_features(None)
    assert features.model is None
    assert features.folds == tuple(fold_overlay(fold) for fold in range(FOLDS))
    # A folder named on the command line is served as it is, and learned from as it is.
    assert cross_fit.ranker_features(tmp_path / "f") == named
