"""The learned stage over a fine-tuned encoder, cross-fitted (decision 0070).

The served encoder was fitted on every tuning request, so its cosines there are better than on
any request it will serve; a ranker (and weak_match) fitted on them trusts them too far. The
tuning requests are split into folds (`encoder.fold_of`), one encoder is fitted without each
fold (`capreg train-encoder --fold I`), and each request's shortlist comes from the encoder
that never saw it. The query adapter is cross-fitted with them: fitted on each request's
vector from the encoder that never saw it, what the served encoder leaves to correct on a
request it has not seen.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from capreg.evaluation.runner import DEFAULT_WORKDIR
from capreg.training.adapting import AdapterSet, fit_adapter
from capreg.training.corpus import Corpus
from capreg.training.encoder import FOLDS, fold_overlay
from capreg.training.learning import Shortlisted, fit_stage
from capreg.training.stage import ALL_COLUMNS, Training
from indexer.embedding import Embedder
from indexer.embedding.model_files import OVERLAY_FILE
from indexer.evaluation.datasets import TUNING_SETS
from indexer.retrieval.adapter import QueryAdapter


@dataclass(frozen=True)
class RankerFeatures:
    """Where the ranker and weak_match get their features from.

    `folds`: the overlays of the encoders fitted each without one fold of the tuning requests
    (cross-fitted: each request's features come from an encoder that never saw it). `model`:
    the folder otherwise (None: the default).
    """

    model: Path | None
    folds: tuple[Path, ...] = ()


def ranker_features(configured: Path | None) -> RankerFeatures:
    """With the fine-tuned encoder served (no folder configured, an overlay shipped), the
    fold encoders: the served encoder has seen every tuning request, so its cosines there are
    better than on any request it will serve, and a ranker (or an adapter) fitted on them
    trusts them too far (decisions 0069, 0070). Otherwise the configured (or default) folder
    itself. An adapter is fitted either way."""
    if configured is None and OVERLAY_FILE.is_file():
        overlays = tuple(fold_overlay(fold) for fold in range(FOLDS))
        missing = [str(overlay) for overlay in overlays if not overlay.is_file()]
        if missing:
            raise FileNotFoundError(
                f"the fold encoders the learned stage is fitted over are missing "
                f"({', '.join(missing)}): run `make train-encoder` first"
            )
        return RankerFeatures(model=None, folds=overlays)
    return RankerFeatures(model=configured)


def cross_fitted_adapters(
    sets: Sequence[AdapterSet], model_id: str
) -> tuple[QueryAdapter, dict[str, QueryAdapter]]:
    """The served query adapter, fitted on every fold's sets (each in the space of the encoder
    that left that fold out), and per tuning set the adapter fitted without any of its folds:
    the one its shortlists are mapped by, so the ranker learns how far an adapted cosine can
    be trusted on a corpus the adapter has not seen (as over one encoder: `stage.train`)."""
    served = fit_adapter(sets, model_id)
    names = dict.fromkeys(s.name for s in sets)
    without = {n: fit_adapter([s for s in sets if s.name != n], model_id) for n in names}
    return served, without


def train_cross_fitted(
    embedder: Embedder,
    folds: Sequence[Embedder],
    *,
    datasets: Path | None = None,
    workdir: Path = DEFAULT_WORKDIR,
) -> Training:
    """The learned stage fitted on TUNING_SETS, each request's shortlist made by the encoder
    of `folds` that left its fold out; `embedder` is the served encoder, which the report
    names and the query adapter (`cross_fitted_adapters`) is stored for."""
    corpora: list[dict[str, Corpus]] = []
    try:
        for fold, encoder in enumerate(folds):
            # Each fold encoder embeds the catalogs its own way: its own registry databases.
            where = workdir / "folds" / f"{fold}-of-{len(folds)}"
            corpora.append({})
            for name in TUNING_SETS:
                corpora[fold][name] = Corpus(
                    name, encoder, datasets=datasets, workdir=where, fold=(fold, len(folds))
                )
        sets = [corpus.adapter_set() for made in corpora for corpus in made.values()]
        adapter, without = cross_fitted_adapters(sets, embedder.model_id)
        tuning: dict[str, list[Shortlisted]] = {name: [] for name in TUNING_SETS}
        copies: dict[str, tuple[int, int]] = {}
        unserved: dict[str, int] = {}
        for fold_corpora in corpora:
            for name, corpus in fold_corpora.items():
                tuning[name] += corpus.shortlists(without[name])
                made, twins = copies.get(name, (0, 0))
                if corpus.copies:
                    copies[name] = (made + corpus.copies, twins + corpus.copies_with_twins)
                if corpus.unserved:
                    unserved[name] = unserved.get(name, 0) + len(corpus.unserved)
    finally:
        for fold_corpora in corpora:
            for corpus in fold_corpora.values():
                corpus.close()
    items = [item for name in TUNING_SETS for item in tuning[name]]
    stage, point, curve = fit_stage(items, ALL_COLUMNS)
    return Training(
        stage=replace(stage, adapter=adapter),
        point=point,
        curve=curve,
        tuning=tuning,
        adapter_check={},
        copies=copies,
        unserved=unserved,
        encoder=f"{embedder.model_id} (features: {', '.join(e.model_id for e in folds)})",
    )
