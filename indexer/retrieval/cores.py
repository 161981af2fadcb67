"""How query-time and build-time math share the cores: one thread per search while serving,
every core for bulk computations, and which BLAS kernels the vector math runs on."""

from __future__ import annotations

import functools
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import faiss
from threadpoolctl import ThreadpoolController, threadpool_info


def one_thread_per_search() -> None:
    """Query-time math (NumPy's BLAS, FAISS' OpenMP) runs on the calling thread.

    Concurrency comes from requests, and the model has its own thread pool: BLAS or OpenMP
    workers spinning beside it doubled a search's latency here (24 ms against 11 ms at 4k
    tools). Index builds still use every core (see `all_cores`). For serving processes.

    BLAS' limit holds for every thread; FAISS' holds for the calling thread only (OpenMP keeps
    it per thread), so a server's read lanes search on OpenMP's default, one thread per core.
    Limiting them too removed a spinning worker and no measurable time
    (docs/results/served-gap-10k/README.md).
    """
    _threadpools().limit(limits=1)
    faiss.omp_set_num_threads(1)


def blas_kernels() -> str:
    """Each BLAS library loaded so far, by the package that ships it, with the kernel set it
    runs on this CPU (e.g. `numpy: openblas Haswell, faiss_cpu: openblas Haswell`; an
    OPENBLAS_CORETYPE override shows as the kernels it picked). Exact scores, the adapter's
    product and batched FAISS searches are float32 BLAS calls whose last bits follow the
    kernel set, and the learned stage's trees follow those bits (decision 0060): reports name
    it beside their figures. Listed by package name: load order varies from run to run."""
    found = [
        f"{Path(pool['filepath']).parent.name.removesuffix('.libs')}: "
        f"{pool.get('internal_api')} {pool.get('architecture', '?')}"
        for pool in threadpool_info()
        if pool.get("user_api") == "blas"
    ]
    return ", ".join(sorted(found)) or "unknown"


@functools.cache
def _threadpools() -> ThreadpoolController:
    # Inspecting the loaded libraries costs ~0.25 s: once per process.
    return ThreadpoolController()


@contextmanager
def all_cores() -> Iterator[None]:
    """Every core for a bulk computation (training, assignment, moments), then back."""
    cores = os.cpu_count() or 1
    before = faiss.omp_get_max_threads()
    faiss.omp_set_num_threads(cores)
    try:
        with _threadpools().limit(limits=cores):
            yield
    finally:
        faiss.omp_set_num_threads(before)
