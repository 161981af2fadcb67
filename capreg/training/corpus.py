"""The shortlists the learned stage is fitted on, collected through the registry's own search
path.

Each labeled set is registered in an in-process registry (the same one `capreg eval` uses),
and each request goes through the serving pipeline's first stage and shortlist step
(`indexer.retrieval.pipeline.learned_inputs`), so the ranker learns from exactly what serving
computes. Each answerable request also gets an unanswerable copy on sets of many catalogs: the
same request with its gold tools' catalogs left out (a view without those rows), which is what
weak_match must recognise. Leaving a catalog out does not make a request unanswerable when
another catalog holds a tool of the same name (StableToolBench has many copies of one API
under different names): those twins are left out with it.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from capreg.evaluation.runner import DEFAULT_WORKDIR, load_catalogs
from capreg.training.adapting import AdapterSet
from capreg.training.encoder import fold_of
from capreg.training.learning import Shortlisted
from indexer.embedding import Embedder
from indexer.evaluation.datasets import load_dataset
from indexer.retrieval.adapter import QueryAdapter
from indexer.retrieval.features import words_of
from indexer.retrieval.first_stage import Request, first_stage
from indexer.retrieval.fusion import split_intents
from indexer.retrieval.pipeline import learned_inputs
from indexer.retrieval.tool_index import Eligible
from registry.config import SearchSettings
from registry.core import Registry
from registry.store import SqliteStore

# The parts of a request the first stage blends on their own (a bench may try others).
Intents = Callable[[str], list[str]]


def name_key(name: str) -> str:
    """A tool name's words, lower-case and sorted, camelCase and snake_case split:
    `DownloadFile`, `download_file` and `Download File` share one key."""
    return " ".join(sorted(words_of(name)))


def left_out_rows(
    catalogs: NDArray[np.str_], names: NDArray[np.str_], relevant: frozenset[str]
) -> tuple[NDArray[np.bool_], bool]:
    """The rows an unanswerable copy of a request leaves out (`catalogs` and `names` per row,
    names as `name_key`s): every tool of its gold tools' catalogs, and every tool of another
    catalog named like a gold tool (its twin would still answer). Also whether any twin was
    left out."""
    gold_catalogs = sorted({i.partition("/")[0] for i in relevant})
    gold_names = sorted({name_key(i.partition("/")[2]) for i in relevant})
    own = np.isin(catalogs, gold_catalogs)
    twins = np.isin(names, gold_names) & ~own
    return own | twins, bool(twins.any())


class Corpus:
    """One labeled set registered in an in-process registry (the one `capreg eval` uses),
    without result cache or learned stage: what the tuning reads from it."""

    def __init__(
        self,
        name: str,
        embedder: Embedder,
        *,
        datasets: Path | None = None,
        workdir: Path = DEFAULT_WORKDIR,
        fold: tuple[int, int] | None = None,
    ) -> None:
        """`fold` (index, count): only the requests of that fold (`encoder.fold_of`), the
        ones `embedder` was fitted without."""
        dataset = load_dataset(name, datasets)
        self.name = name
        requests = [
            q
            for q in dataset.queries
            if not q.steps and (fold is None or fold_of(q.query, fold[1]) == fold[0])
        ]
        self.queries = [q for q in requests if q.relevant]
        # Requests the set itself labels as served by no tool (mcp-agentstyle's `none`): real
        # unanswerable requests, beside the copies made by leaving catalogs out.
        self.unserved = [q for q in requests if not q.relevant]
        self._one_catalog = len(dataset.catalogs) == 1
        # Unanswerable copies made by the last `shortlists`, and how many of them also left
        # out a twin of a gold tool from another catalog.
        self.copies = self.copies_with_twins = 0
        self._store = SqliteStore(workdir / f"{name.split(':')[0]}.db")
        try:
            settings = SearchSettings(
                result_cache_size=0,
                learned_stage=None,
                query_cache_size=max(4_096, 2 * len(self.queries)),
            )
            self._registry = Registry(self._store, embedder, settings=settings)
            self._registry.load()
            load_catalogs(self._registry, dataset.catalogs)
            self._registry.queries.warm([q.query for q in self.queries + self.unserved])
        except BaseException:
            self._store.close()
            raise

    def close(self) -> None:
        self._store.close()

    def adapter_set(self) -> AdapterSet:
        """Each request's own vector, the corpus's tool vectors and the gold rows."""
        index = self._registry.reader.snapshot.index
        row = {entry.id: i for i, entry in enumerate(index.entries)}
        texts = [q.query.strip() for q in self.queries]
        return AdapterSet(
            name=self.name,
            requests=np.stack(self._registry.queries.embed_many(texts)),
            tools=np.asarray(index.vectors.matrix, dtype=np.float32),
            gold=tuple(tuple(sorted(row[i] for i in q.relevant if i in row)) for q in self.queries),
        )

    def shortlists(
        self,
        adapter: QueryAdapter | None = None,
        *,
        unanswerable: bool = True,
        intents: Intents = split_intents,
    ) -> list[Shortlisted]:
        """Every answerable request (and its unanswerable copy), then every request the set
        labels unserved (with `unanswerable`), as the first stage shortlists it. Its vectors
        are mapped by `adapter` as serving maps them (`intents`: the parts of a request
        blended on their own, its clauses as served)."""
        registry = self._registry
        index = registry.reader.snapshot.index
        catalog_of = np.asarray([e.tool.catalog for e in index.entries])
        name_of = np.asarray([name_key(e.tool.name) for e in index.entries])
        items: list[Shortlisted] = []
        self.copies = self.copies_with_twins = 0
        requests = self.queries + (self.unserved if unanswerable else [])
        for query in requests:
            text = query.query.strip()
            texts = [text, *intents(text)]
            vectors = registry.queries.request_vectors(text, texts[1:])
            if adapter is not None:
                vectors = adapter.apply(vectors)
            variants: list[tuple[bool, NDArray[np.bool_] | None]] = [(bool(query.relevant), None)]
            # With one catalog there is nothing to leave out: removing only the gold tools
            # leaves near-twins that do answer (MetaTool's tools overlap in purpose), which
            # would teach weak_match to flag answerable requests.
            if unanswerable and query.relevant and not self._one_catalog:
                absent, twins = left_out_rows(catalog_of, name_of, query.relevant)
                variants.append((False, absent))
                self.copies += 1
                self.copies_with_twins += twins
            request = Request(texts=texts, vectors=vectors)
            for answerable, absent_rows in variants:
                view = index.view() if absent_rows is None else index.view_without(absent_rows)
                # The serving path's own steps, over a view without the left-out rows.
                stage = first_stage(index, request, Eligible.whole(view))
                listed, features = learned_inputs(index, request, stage)
                items.append(
                    Shortlisted(
                        dataset=self.name,
                        query_id=query.id,
                        ids=listed.ids,
                        features=features,
                        front=listed.front,
                        relevant=query.relevant,
                        answerable=answerable,
                    )
                )
        return items


def collect(
    name: str,
    embedder: Embedder,
    *,
    adapter: QueryAdapter | None = None,
    datasets: Path | None = None,
    workdir: Path = DEFAULT_WORKDIR,
    unanswerable: bool = True,
) -> list[Shortlisted]:
    """Every answerable request of `name` (and its unanswerable copy) as the first stage
    shortlists it, with `adapter` applied to its vectors."""
    corpus = Corpus(name, embedder, datasets=datasets, workdir=workdir)
    try:
        return corpus.shortlists(adapter, unanswerable=unanswerable)
    finally:
        corpus.close()
