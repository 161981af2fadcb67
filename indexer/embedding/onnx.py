"""The same sentence-transformers model run by ONNX Runtime: the only module importing it.

The model folder's transformer is exported to ONNX once (with the local torch, never a
download) into a cache folder, then served by ONNX Runtime with the folder's own tokenizer,
pooling and normalisation. Its vectors equal the sentence-transformers ones to float32
rounding (a test holds them within 1e-5), so both backends share one model id and one set of
stored embeddings. What it saves is per-call overhead around the model (the floor column of
docs/results/performance.md is its encode time), and the serving process never imports torch.
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from indexer.embedding.model_files import default_cache_dir, default_model_path, model_fingerprint
from indexer.embedding.protocol import Opener, at_once

if TYPE_CHECKING:
    from onnxruntime import InferenceSession
    from tokenizers import Encoding

logger = logging.getLogger(__name__)

# Texts per forward pass; inputs are sorted by length first so little of a batch is padding.
# 16 embedded tool documents fastest here (84-90/s against 74-77/s at 32 and 68/s at 64).
BATCH_SIZE = 16
_TRANSFORMER = "sentence_transformers.models.Transformer"
_POOLING = "sentence_transformers.models.Pooling"
_NORMALIZE = "sentence_transformers.models.Normalize"


class UnsupportedModel(ValueError):
    """The folder's pipeline has a module this backend does not reproduce."""


class ExportFailed(RuntimeError):
    """torch could not export the folder's transformer to ONNX."""


@dataclass(frozen=True)
class Pipeline:
    """What sentence-transformers would do around the transformer."""

    pooling: str  # "mean" or "cls"
    max_tokens: int


def read_pipeline(path: Path) -> Pipeline:
    """Transformer, then mean or CLS pooling, then optional normalisation; anything else is
    refused (the sentence-transformers backend serves such folders)."""
    modules_file = path / "modules.json"
    if not modules_file.is_file():
        raise UnsupportedModel(f"{path} has no modules.json")
    modules = json.loads(modules_file.read_text())
    kinds = [m.get("type", "") for m in modules]
    if kinds[:2] != [_TRANSFORMER, _POOLING] or any(k != _NORMALIZE for k in kinds[2:]):
        raise UnsupportedModel(f"{path}: modules {kinds} are not transformer + pooling")
    pooling_config = json.loads((path / modules[1]["path"] / "config.json").read_text())
    modes = {k for k, v in pooling_config.items() if k.startswith("pooling_mode_") and v}
    if modes == {"pooling_mode_mean_tokens"}:
        pooling = "mean"
    elif modes == {"pooling_mode_cls_token"}:
        pooling = "cls"
    else:
        raise UnsupportedModel(f"{path}: pooling {sorted(modes)} is not mean or CLS")
    settings_file = path / "sentence_bert_config.json"
    settings = json.loads(settings_file.read_text()) if settings_file.is_file() else {}
    config = json.loads((path / "config.json").read_text())
    limit = int(config.get("max_position_embeddings", 512))
    return Pipeline(pooling, min(int(settings.get("max_seq_length") or limit), limit))


def export_onnx(path: Path, target: Path) -> None:
    """Exports the folder's transformer (last hidden state) to `target`, atomically."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    import inspect

    import torch
    from transformers import AutoModel

    model = AutoModel.from_pretrained(str(path), local_files_only=True, attn_implementation="eager")
    model.eval()
    names = ["input_ids", "attention_mask"]
    if "token_type_ids" in inspect.signature(model.forward).parameters:
        names.append("token_type_ids")

    class LastHiddenState(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.inner = model

        def forward(self, *inputs: torch.Tensor) -> torch.Tensor:
            hidden: torch.Tensor = self.inner(
                **dict(zip(names, inputs, strict=True))
            ).last_hidden_state
            return hidden

    sample = torch.ones((2, 8), dtype=torch.long)
    axes = {name: {0: "batch", 1: "tokens"} for name in [*names, "hidden"]}
    target.parent.mkdir(parents=True, exist_ok=True)
    handle, scratch = tempfile.mkstemp(dir=target.parent, suffix=".onnx.part")
    os.close(handle)
    try:
        try:
            # The legacy (TorchScript) exporter handles this model's dynamic batch and length
            # in one trace; its deprecation and tracer warnings are about other models.
            with torch.inference_mode(), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                torch.onnx.export(
                    LastHiddenState(),
                    tuple(sample for _ in names),
                    scratch,
                    input_names=names,
                    output_names=["hidden"],
                    dynamic_axes=axes,
                    opset_version=17,
                    dynamo=False,
                )
        except Exception as exc:  # torch raises many types here; the caller falls back
            raise ExportFailed(f"cannot export {path} to ONNX: {exc}") from exc
        os.chmod(scratch, 0o644)
        os.replace(scratch, target)
    finally:
        if os.path.exists(scratch):
            os.unlink(scratch)


def quantize_onnx(source: Path, target: Path) -> None:
    """Dynamic int8 quantization of the weights, per output channel, atomically."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    handle, scratch = tempfile.mkstemp(dir=target.parent, suffix=".onnx.part")
    os.close(handle)
    try:
        quantize_dynamic(str(source), scratch, weight_type=QuantType.QInt8, per_channel=True)
        os.chmod(scratch, 0o644)
        os.replace(scratch, target)
    finally:
        if os.path.exists(scratch):
            os.unlink(scratch)


class OnnxEmbedder:
    """A local sentence-transformers folder served by ONNX Runtime on the CPU.

    One session holds the model, its thread pool sized to the cores, and every request runs
    on it at once (ONNX Runtime allows concurrent runs): an idle model gives one request every
    core, and concurrent requests share them. A second, single-threaded session for requests
    arriving while the first was busy held another copy of the weights (about 90 MB) and
    served no more requests per second than concurrent runs of the one session
    (docs/decisions/0078-one-onnx-session-and-lexical-work-bounded-at-size.md).

    Its identity (model id, dimension, tokenizer) is read at once; the session opens through
    `opens`, by default on the calling thread. Given another opener, the session opens
    elsewhere while the caller goes on, and the first encode waits for it: a server reads its
    store meanwhile (docs/decisions/0089-the-model-opens-while-the-store-is-read.md).
    """

    def __init__(
        self,
        model_path: Path | None = None,
        *,
        cache_dir: Path | None = None,
        threads: int = 0,
        int8: bool = False,
        opens: Opener[InferenceSession] = at_once,
    ) -> None:
        from tokenizers import Tokenizer

        path = model_path or default_model_path(cache_dir)
        self._pipeline = read_pipeline(path)
        fingerprint = model_fingerprint(path)
        folder = (cache_dir or default_cache_dir()) / "onnx"
        onnx_file = folder / f"{fingerprint}.onnx"
        if not onnx_file.is_file():
            logger.info("exporting %s to ONNX at %s (once)", fingerprint, onnx_file)
            export_onnx(path, onnx_file)
        # int8 weights give other vectors (cosine ~0.994 to float32): another model id, so
        # stored float32 embeddings are never mixed with int8 ones.
        self._model_id = f"{fingerprint}+int8" if int8 else fingerprint
        if int8:
            quantized = folder / f"{fingerprint}.int8.onnx"
            if not quantized.is_file():
                quantize_onnx(onnx_file, quantized)
            onnx_file = quantized

        self._tokenizer = Tokenizer.from_file(str(path / "tokenizer.json"))
        self._tokenizer.enable_truncation(self._pipeline.max_tokens)
        self._tokenizer.no_padding()
        self._dimension = int(json.loads((path / "config.json").read_text())["hidden_size"])
        self._inputs: frozenset[str] = frozenset()
        cores = threads or (os.cpu_count() or 1)
        self._session = opens(lambda: self._open(onnx_file, cores))

    def _open(self, onnx_file: Path, threads: int) -> InferenceSession:
        """The session, run once: the tokenizer's thread pool starts at its first batch and
        ONNX Runtime's with the session, both here, on the opening thread (whose scheduling
        priority the threads it starts inherit on Linux)."""
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        session = ort.InferenceSession(str(onnx_file), options, providers=["CPUExecutionProvider"])
        self._inputs = frozenset(i.name for i in session.get_inputs())
        self._forward(session, self._tokenizer.encode_batch(["open the model's thread pools"]))
        logger.info(
            "loaded embedding model %s (ONNX, %d dimensions)", self._model_id, self._dimension
        )
        return session

    @property
    def model_id(self) -> str:
        return self._model_id

    @property
    def dimension(self) -> int:
        return self._dimension

    def encode(self, texts: Sequence[str], *, progress: bool = False) -> NDArray[np.float32]:
        result = np.zeros((len(texts), self._dimension), dtype=np.float32)
        if not texts:
            return result
        session = self._session.result()
        encodings = self._tokenizer.encode_batch(list(texts))
        order = sorted(range(len(texts)), key=lambda i: len(encodings[i].ids))
        batches = range(0, len(order), BATCH_SIZE)
        if progress:
            from tqdm import tqdm

            batches = tqdm(batches, desc="embedding", unit="batch")
        for start in batches:
            rows = order[start : start + BATCH_SIZE]
            result[rows] = self._forward(session, [encodings[i] for i in rows])
        return result

    def encode_spans(
        self, text: str, spans: Sequence[tuple[int, int]]
    ) -> list[NDArray[np.float32] | None]:
        """Vectors for `text` and for each character span of it, from one forward pass.

        A span's vector pools the contextual token states inside it (late chunking): a
        request's clauses cost no extra model work. A span with no token inside the model's
        window gets None (the caller encodes it on its own).
        """
        session = self._session.result()
        encoding = self._tokenizer.encode(text)
        hidden = self._hidden(session, [encoding])[0]
        whole = self._pool(hidden[None, :, :], np.ones((1, len(hidden)), dtype=np.int64))[0]
        offsets = np.asarray(encoding.offsets, dtype=np.int64).reshape(-1, 2)
        special = np.asarray(encoding.special_tokens_mask, dtype=bool)
        result: list[NDArray[np.float32] | None] = [whole]
        for start, end in spans:
            inside = ~special & (offsets[:, 0] >= start) & (offsets[:, 1] <= end)
            inside &= offsets[:, 1] > offsets[:, 0]
            if not inside.any():
                result.append(None)
                continue
            pooled = hidden[inside].mean(axis=0)
            result.append((pooled / max(float(np.linalg.norm(pooled)), 1e-12)).astype(np.float32))
        return result

    def _hidden(
        self, session: InferenceSession, encodings: Sequence[Encoding]
    ) -> NDArray[np.float32]:
        """Last hidden states, batch x tokens x dimension (rows padded to the longest)."""
        ids, mask = self._pad(encodings)
        feeds = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self._inputs:
            feeds["token_type_ids"] = np.zeros_like(ids)
        return np.asarray(session.run(None, feeds)[0], dtype=np.float32)

    @staticmethod
    def _pad(encodings: Sequence[Encoding]) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
        width = max(len(e.ids) for e in encodings)
        ids = np.zeros((len(encodings), width), dtype=np.int64)
        mask = np.zeros((len(encodings), width), dtype=np.int64)
        for row, encoding in enumerate(encodings):
            ids[row, : len(encoding.ids)] = encoding.ids
            mask[row, : len(encoding.ids)] = 1
        return ids, mask

    def _pool(self, hidden: NDArray[np.float32], mask: NDArray[np.int64]) -> NDArray[np.float32]:
        if self._pipeline.pooling == "cls":
            pooled = hidden[:, 0]
        else:
            weights = mask[:, :, None].astype(np.float32)
            pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return np.ascontiguousarray(pooled / np.maximum(norms, 1e-12), dtype=np.float32)

    def _forward(
        self, session: InferenceSession, encodings: Sequence[Encoding]
    ) -> NDArray[np.float32]:
        _, mask = self._pad(encodings)
        return self._pool(self._hidden(session, encodings), mask)
