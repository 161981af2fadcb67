"""The shipped encoder overlay: applied to the packaged base, once, with its own model id."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from safetensors.numpy import load_file, save_file

from indexer.embedding import model_files
from indexer.embedding.model_files import (
    WEIGHTS,
    apply_overlay,
    base_model_path,
    model_fingerprint,
    tuned_model_path,
)

LAYER = "encoder.layer.5.output.dense.weight"


def _overlay(folder: Path, shift: float = 0.5) -> Path:
    """An overlay changing one tensor of the base, as fine-tuning writes it (float16)."""
    base = load_file(str(base_model_path() / WEIGHTS))
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "encoder.safetensors"
    save_file({LAYER: (base[LAYER] + shift).astype(np.float16)}, str(path))
    (folder / "tuning.json").write_text('{"seed": 1}\n')
    return path


def test_an_overlay_replaces_its_tensors_and_keeps_every_other(tmp_path: Path) -> None:
    overlay = _overlay(tmp_path / "tuned")
    target = tmp_path / "made"
    apply_overlay(base_model_path(), overlay, target)
    base = load_file(str(base_model_path() / WEIGHTS))
    made = load_file(str(target / WEIGHTS))
    assert made.keys() == base.keys()
    expected = (base[LAYER] + 0.5).astype(np.float16).astype(np.float32)
    np.testing.assert_array_equal(made[LAYER], expected)
    for name in base.keys() - {LAYER}:
        np.testing.assert_array_equal(made[name], base[name])
    assert (target / "tokenizer.json").read_bytes() == (
        base_model_path() / "tokenizer.json"
    ).read_bytes()
    assert (target / "1_Pooling" / "config.json").is_file()
    assert (target / "tuning.json").read_text() == '{"seed": 1}\n'
    # Same weight sizes as the base, yet another model id: stored vectors never mix.
    assert model_fingerprint(target) != model_fingerprint(base_model_path())


def test_an_overlay_that_does_not_fit_the_base_is_refused_by_tensor_name(tmp_path: Path) -> None:
    overlay = tmp_path / "encoder.safetensors"
    save_file({LAYER: np.zeros((3, 3), dtype=np.float16)}, str(overlay))
    with pytest.raises(ValueError, match=LAYER):
        apply_overlay(base_model_path(), overlay, tmp_path / "made")
    assert not (tmp_path / "made").exists()


def test_the_tuned_folder_is_made_once_and_named_by_the_overlay(tmp_path: Path) -> None:
    first = _overlay(tmp_path / "a")
    folder = tuned_model_path(tmp_path / "cache", first)
    stamp = (folder / WEIGHTS).stat().st_mtime_ns
    assert tuned_model_path(tmp_path / "cache", first) == folder
    assert (folder / WEIGHTS).stat().st_mtime_ns == stamp
    other = tuned_model_path(tmp_path / "cache", _overlay(tmp_path / "b", shift=0.25))
    assert other != folder
    assert model_fingerprint(other) != model_fingerprint(folder)


def test_the_default_model_is_the_tuned_one_only_when_an_overlay_is_shipped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(model_files, "OVERLAY_FILE", tmp_path / "none" / "encoder.safetensors")
    assert model_files.default_model_path(tmp_path / "cache") == base_model_path()
    monkeypatch.setattr(model_files, "OVERLAY_FILE", _overlay(tmp_path / "shipped"))
    chosen = model_files.default_model_path(tmp_path / "cache")
    assert chosen.parent == tmp_path / "cache" / "models"
    assert (chosen / WEIGHTS).is_file()
