"""The ONNX backend against the sentence-transformers reference, and its batching."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from concurrent.futures import Future
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from indexer.embedding import Embedder, EmbedderBackend, SpanEmbedder, load_embedder
from indexer.embedding.model_files import default_model_path
from indexer.embedding.onnx import OnnxEmbedder, UnsupportedModel, read_pipeline
from indexer.embedding.torch import SentenceTransformerEmbedder
from indexer.retrieval.fusion import clause_spans, split_intents

TEXTS = [
    "send an email with an attachment",
    "Get the weather forecast for Paris tomorrow, then book a table for two.",
    "create_ticket: Open a support ticket for a customer. Parameters: subject, priority.",
    "word " * 400,  # past the model's 256-token limit: both backends truncate alike
    "",
]


def _linked_copy(tmp_path: Path) -> Path:
    """The packaged model folder as links, so a test may change its configuration."""
    source = default_model_path()
    target = tmp_path / "model"
    for item in source.rglob("*"):
        if item.is_file():
            link = target / item.relative_to(source)
            link.parent.mkdir(parents=True, exist_ok=True)
            link.symlink_to(item)
    return target


def test_onnx_vectors_equal_the_sentence_transformers_ones(model: Embedder) -> None:
    assert isinstance(model, OnnxEmbedder)
    reference = SentenceTransformerEmbedder()
    assert reference.model_id == model.model_id
    onnx, torch = model.encode(TEXTS), reference.encode(TEXTS)
    assert onnx.shape == torch.shape == (len(TEXTS), 384)
    np.testing.assert_allclose(onnx, torch, atol=1e-5)
    # Batched or one by one, the same vectors.
    singly = np.vstack([model.encode([text]) for text in TEXTS])
    np.testing.assert_allclose(singly, onnx, atol=1e-6)
    np.testing.assert_allclose(np.linalg.norm(onnx, axis=1), 1.0, atol=1e-5)


def test_concurrent_callers_each_get_their_own_vectors(model: Embedder) -> None:
    texts = [f"find tool number {i} for the {'quarterly ' * (i % 5)}report" for i in range(48)]
    expected = model.encode(texts)
    results: dict[int, np.ndarray] = {}
    errors: list[BaseException] = []

    def call(i: int) -> None:
        try:
            results[i] = model.encode([texts[i], texts[(i + 1) % len(texts)]])
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=call, args=(i,)) for i in range(len(texts))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    for i, vectors in results.items():
        np.testing.assert_allclose(vectors[0], expected[i], atol=1e-5)
        np.testing.assert_allclose(vectors[1], expected[(i + 1) % len(texts)], atol=1e-5)


def test_a_large_request_is_encoded_in_input_order(model: Embedder) -> None:
    texts = [
        ("short" if i % 2 else "a much longer text about many things " * 5) + str(i)
        for i in range(70)
    ]
    many = model.encode(texts)
    np.testing.assert_allclose(many[5], model.encode([texts[5]])[0], atol=1e-5)
    np.testing.assert_allclose(many[68], model.encode([texts[68]])[0], atol=1e-5)
    assert model.encode([]).shape == (0, 384)


def test_the_packaged_pipeline_is_mean_pooling_over_256_tokens() -> None:
    pipeline = read_pipeline(default_model_path())
    assert (pipeline.pooling, pipeline.max_tokens) == ("mean", 256)


@pytest.mark.model  # loads it on both backends
def test_a_pipeline_the_backend_cannot_reproduce_falls_back_to_sentence_transformers(
    tmp_path: Path,
) -> None:
    folder = _linked_copy(tmp_path)
    pooling = folder / "1_Pooling" / "config.json"
    config = json.loads(pooling.read_text())
    config.update(pooling_mode_mean_tokens=False, pooling_mode_max_tokens=True)
    pooling.unlink()
    pooling.write_text(json.dumps(config))
    with pytest.raises(UnsupportedModel, match="pooling"):
        read_pipeline(folder)
    embedder = load_embedder(folder, EmbedderBackend.ONNX)
    assert isinstance(embedder, SentenceTransformerEmbedder)
    assert embedder.encode(["max pooling works"]).shape == (1, 384)


def test_an_unknown_backend_is_refused_by_name() -> None:
    with pytest.raises(ValueError, match="onnx, onnx-int8, torch"):
        load_embedder(None, "tensorflow")  # type: ignore[arg-type]  # the refusal under test


@pytest.mark.model  # exports and loads it
def test_the_export_is_cached_and_reused(tmp_path: Path) -> None:
    first = OnnxEmbedder(cache_dir=tmp_path)
    exported = list((tmp_path / "onnx").glob("*.onnx"))
    assert [p.name for p in exported] == [f"{first.model_id}.onnx"]
    stamp = exported[0].stat().st_mtime_ns
    second = OnnxEmbedder(cache_dir=tmp_path)
    assert exported[0].stat().st_mtime_ns == stamp
    assert not list((tmp_path / "onnx").glob("*.part"))
    np.testing.assert_allclose(first.encode(TEXTS[:2]), second.encode(TEXTS[:2]), atol=1e-6)


def test_clause_vectors_pool_their_tokens_from_one_pass(model: Embedder) -> None:
    assert isinstance(model, SpanEmbedder)
    text = "Find the invoice for ACME. Then email it to the finance team."
    clauses = split_intents(text)
    spans = clause_spans(text, clauses)
    assert [text[a:b] for a, b in spans] == clauses
    vectors = model.encode_spans(text, spans)
    whole, first, second = vectors
    assert whole is not None
    assert first is not None
    assert second is not None
    np.testing.assert_allclose(whole, model.encode([text])[0], atol=1e-5)
    alone = model.encode(clauses)
    # Each pooled clause is nearest to its own clause encoded alone.
    similarity = np.vstack([first, second]) @ alone.T
    assert similarity.argmax(axis=1).tolist() == [0, 1]
    assert similarity.diagonal().min() > 0.8


def test_a_span_outside_the_model_window_is_reported_missing(model: Embedder) -> None:
    assert isinstance(model, SpanEmbedder)
    text = "word " * 300 + "then send the report to the whole team"
    tail = text.index("send")
    vectors = model.encode_spans(text, [(0, 20), (tail, len(text))])
    assert vectors[1] is not None
    assert vectors[2] is None


def test_the_int8_variant_is_its_own_model_close_to_float32(model: Embedder) -> None:
    quantized = load_embedder(None, EmbedderBackend.ONNX_INT8)
    assert quantized.model_id == f"{model.model_id}+int8"
    similarity = (quantized.encode(TEXTS[:4]) * model.encode(TEXTS[:4])).sum(axis=1)
    assert similarity.min() > 0.97


def test_a_model_opening_elsewhere_is_known_at_once_and_encodes_once_open(
    model: Embedder,
) -> None:
    # A server reads its store while the session opens: the store needs the model's identity,
    # and nothing may be encoded before the session is there.
    release = threading.Event()

    def held_opener(opening: Callable[[], Any]) -> Future[Any]:
        opened: Future[Any] = Future()

        def run() -> None:
            release.wait()
            opened.set_result(opening())

        threading.Thread(target=run).start()
        return opened

    embedder = OnnxEmbedder(opens=held_opener)
    assert (embedder.model_id, embedder.dimension) == (model.model_id, model.dimension)
    vectors: list[np.ndarray] = []
    caller = threading.Thread(target=lambda: vectors.append(embedder.encode(TEXTS[:2])))
    caller.start()
    caller.join(timeout=0.5)
    assert caller.is_alive(), "an encode waits for the session to open"
    release.set()
    caller.join()
    np.testing.assert_allclose(vectors[0], model.encode(TEXTS[:2]), atol=1e-6)


def test_a_model_that_cannot_open_elsewhere_says_so_when_used() -> None:
    embedder = OnnxEmbedder(opens=lambda _opening: _failed())
    with pytest.raises(OSError, match="cannot map"):
        embedder.encode(["anything"])


def _failed() -> Future[Any]:
    opened: Future[Any] = Future()
    opened.set_exception(OSError("cannot map the model file"))
    return opened
