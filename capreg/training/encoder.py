"""Fine-tuning the sentence encoder on the tuning splits (`make train`), contrastively.

Each answerable request of every tuning split is paired with the document text of each tool
that answers it (the text serving embeds, `document_text`). A batch holds distinct requests
and distinct tools, so every other tool in it is a negative for a request (in-batch
negatives, the multiple-negatives ranking loss). The word embeddings stay frozen: they are
most of the model's bytes, and the tuning data is far too small to move 30k rows usefully,
so what is shipped is the rest of the network (`indexer.embedding.tuned`).

Runs on the CPU, single process, seeded: the same data, seed and settings give the same
weights on the same machine.
"""

from __future__ import annotations

import hashlib
import json
import logging
import random
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from indexer.evaluation.datasets import TUNING_SETS, Dataset, load_dataset
from indexer.formats import parse_catalog
from indexer.retrieval.document import document_text

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Pair:
    query: str
    document: str


# The learned stage learns from features of requests the encoder did not see (decision 0070):
# the tuning requests are split into FOLDS by their text, one encoder is fitted without each
# fold, and each fold's shortlists come from the encoder that left it out. The served encoder
# is the fit on every fold.
FOLDS = 2


# Where the fold encoders are written (`make train-encoder`); not shipped.
FOLDS_DIR = Path(".capreg") / "encoder-folds"


def fold_overlay(fold: int, folds: int = FOLDS) -> Path:
    """The overlay of the encoder fitted without `fold` (its record beside it)."""
    return FOLDS_DIR / f"{fold}-of-{folds}" / "encoder.safetensors"


def fold_of(query: str, folds: int = FOLDS) -> int:
    """The fold of a request, by its text alone: the same words in two sets share a fold, so
    no fold's encoder has seen a request of its own fold."""
    digest = hashlib.sha256(query.strip().encode("utf-8")).digest()
    return int.from_bytes(digest[:4], "big") % folds


def without_fold(pairs: Sequence[Pair], fold: int, folds: int = FOLDS) -> list[Pair]:
    """The pairs an encoder that leaves out `fold` is fitted on."""
    if not 0 <= fold < folds:
        raise ValueError(f"fold {fold} is not one of 0..{folds - 1}")
    return [pair for pair in pairs if fold_of(pair.query, folds) != fold]


@dataclass(frozen=True)
class EncoderSettings:
    """What a fit used; recorded beside the weights it gave."""

    seed: int = 20261128
    epochs: int = 1
    batch_size: int = 32
    learning_rate: float = 3e-5
    warmup_share: float = 0.1
    # Cosine similarities times this are the loss's logits (sentence-transformers' default).
    scale: float = 20.0
    # Tokens per text while fitting; serving embeds up to the model's own limit (256).
    max_tokens: int = 96
    threads: int = 2


def pairs_by_set(
    datasets: Path | None = None, sets: Sequence[str] = TUNING_SETS
) -> dict[str, list[Pair]]:
    """(request, gold tool's document text) for every answerable request of each of `sets`."""
    return {name: set_pairs(name, datasets) for name in sets}


def tool_documents(dataset: Dataset) -> dict[str, str]:
    """Each tool id of `dataset` with the text serving embeds for it."""
    documents: dict[str, str] = {}
    for source in dataset.catalogs:
        catalog = parse_catalog(source.content, name=source.name, fmt=source.format)
        for tool in catalog.tools:
            documents[f"{catalog.name}/{tool.name}"] = document_text(tool, catalog.title)
    return documents


def set_pairs(name: str, datasets: Path | None = None) -> list[Pair]:
    """One set's pairs: each answerable request with each of its gold tools, the tool as the
    text serving embeds for it."""
    dataset = load_dataset(name, datasets)
    documents = tool_documents(dataset)
    return [
        Pair(query.query.strip(), documents[tool_id])
        for query in dataset.queries
        if not query.steps
        for tool_id in sorted(query.relevant)
        if tool_id in documents
    ]


def pairs_digest(pairs: Sequence[Pair]) -> str:
    digest = hashlib.sha256()
    for pair in pairs:
        digest.update(pair.query.encode() + b"\0" + pair.document.encode() + b"\1")
    return digest.hexdigest()[:16]


def batches(pairs: Sequence[Pair], size: int, rng: random.Random) -> list[list[Pair]]:
    """Shuffled batches in which no request and no document appears twice (a repeated one
    would be its own false negative); a pair that collides waits for the next batch."""
    order = list(pairs)
    rng.shuffle(order)
    result: list[list[Pair]] = []
    while order:
        batch: list[Pair] = []
        queries: set[str] = set()
        documents: set[str] = set()
        waiting: list[Pair] = []
        for pair in order:
            if len(batch) < size and pair.query not in queries and pair.document not in documents:
                batch.append(pair)
                queries.add(pair.query)
                documents.add(pair.document)
            else:
                waiting.append(pair)
        result.append(batch)
        order = waiting
    return [batch for batch in result if len(batch) > 1]


@dataclass(frozen=True)
class EncoderFit:
    settings: EncoderSettings
    sets: tuple[str, ...]
    pairs: int
    pairs_sha256: str
    steps: int
    seconds: float
    final_loss: float

    def record(self, base: str) -> dict[str, object]:
        return {"base_model": base, **asdict(self)}


def fine_tune(
    base: Path,
    pairs: Sequence[Pair],
    target: Path,
    settings: EncoderSettings = EncoderSettings(),
    *,
    sets: Sequence[str] = TUNING_SETS,
) -> EncoderFit:
    """Fits `base` (a sentence-transformers folder) on `pairs` and saves the whole tuned
    model folder to `target`."""
    import numpy as np
    import torch
    from sentence_transformers import SentenceTransformer
    from transformers import PreTrainedModel

    random.seed(settings.seed)
    np.random.seed(settings.seed)
    torch.manual_seed(settings.seed)
    torch.set_num_threads(settings.threads)
    model = SentenceTransformer(str(base), device="cpu", local_files_only=True)
    model.max_seq_length = settings.max_tokens
    transformer = model[0].auto_model
    if not isinstance(transformer, PreTrainedModel):
        raise TypeError(f"{base}: the first module is not a transformers model")
    for frozen in transformer.get_input_embeddings().parameters():
        frozen.requires_grad_(False)
    trainable = [p for p in model.parameters() if p.requires_grad]
    plan = [
        batch
        for epoch in range(settings.epochs)
        for batch in batches(pairs, settings.batch_size, random.Random(settings.seed + epoch))  # noqa: S311 (a seeded shuffle)
    ]
    optimizer = torch.optim.AdamW(trainable, lr=settings.learning_rate)
    warmup = max(1, int(len(plan) * settings.warmup_share))

    def rate(step: int) -> float:
        if step < warmup:
            return (step + 1) / warmup
        return max(0.0, (len(plan) - step) / max(1, len(plan) - warmup))

    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, rate)
    model.train()
    started = time.perf_counter()
    loss_value = float("nan")
    for step, batch in enumerate(plan):
        queries = model.tokenize([p.query for p in batch])
        documents = model.tokenize([p.document for p in batch])
        q = model(queries)["sentence_embedding"]
        d = model(documents)["sentence_embedding"]
        q = torch.nn.functional.normalize(q, dim=-1)
        d = torch.nn.functional.normalize(d, dim=-1)
        logits = settings.scale * q @ d.T
        labels = torch.arange(len(batch))
        # Both directions: a request picks its tool, and a tool picks its request.
        loss = (
            torch.nn.functional.cross_entropy(logits, labels)
            + torch.nn.functional.cross_entropy(logits.T, labels)
        ) / 2
        loss.backward()  # type: ignore[no-untyped-call]
        torch.nn.utils.clip_grad_norm_(trainable, 1.0)
        optimizer.step()
        schedule.step()
        optimizer.zero_grad()
        loss_value = float(loss.detach())
        if step % 5 == 0:
            logger.info("step %d/%d loss %.4f", step, len(plan), loss_value)
    model.eval()
    target.mkdir(parents=True, exist_ok=True)
    model.save(str(target))
    return EncoderFit(
        settings=settings,
        sets=tuple(sets),
        pairs=len(pairs),
        pairs_sha256=pairs_digest(pairs),
        steps=len(plan),
        seconds=round(time.perf_counter() - started, 1),
        final_loss=round(loss_value, 4),
    )


def write_record(fit: EncoderFit, base: str, path: Path) -> None:
    path.write_text(json.dumps(fit.record(base), indent=2) + "\n", encoding="utf-8")


def write_overlay(tuned: Path, base: Path, overlay: Path) -> int:
    """Saves the tensors of the model folder `tuned` that differ from `base` to `overlay`, in
    float16 (what `indexer.embedding.model_files.apply_overlay` puts back); returns bytes."""
    import numpy as np
    from safetensors.numpy import load_file, save_file

    from indexer.embedding.model_files import WEIGHTS

    before = load_file(str(base / WEIGHTS))
    after = load_file(str(tuned / WEIGHTS))
    changed = {
        name: np.ascontiguousarray(tensor.astype(np.float16))
        for name, tensor in sorted(after.items())
        if tensor.dtype == np.float32 and not np.array_equal(tensor, before[name])
    }
    overlay.parent.mkdir(parents=True, exist_ok=True)
    save_file(changed, str(overlay))
    return overlay.stat().st_size
