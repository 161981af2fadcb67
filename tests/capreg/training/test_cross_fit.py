from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from capreg.training.adapting import AdapterSet
from capreg.training.cross_fit import cross_fitted_adapters


def _set(
    name: str, seed: int, requests: int = 12, tools: int = 6, dimension: int = 8
) -> AdapterSet:
    rng = np.random.default_rng(seed)

    def unit(rows: int) -> NDArray[np.float32]:
        vectors: NDArray[np.float32] = rng.normal(size=(rows, dimension)).astype(np.float32)
        unit_rows: NDArray[np.float32] = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
        return unit_rows

    return AdapterSet(
        name=name,
        requests=unit(requests),
        tools=unit(tools),
        gold=tuple((i % tools,) for i in range(requests)),
    )


def test_each_sets_adapter_is_fitted_without_any_of_its_folds() -> None:
    # Two folds of two sets, each fold from another encoder: the sets share names across folds.
    sets = [_set("a", 1), _set("b", 2), _set("a", 3), _set("b", 4)]
    served, without = cross_fitted_adapters(sets, "model")
    assert set(without) == {"a", "b"}
    assert served.model == without["a"].model == "model"
    # Changing set a's requests in either fold leaves the adapter a is mapped by as it was,
    # and moves the served one and b's (both fitted on a).
    changed = [_set("a", 5), sets[1], sets[2], sets[3]]
    served_after, without_after = cross_fitted_adapters(changed, "model")
    np.testing.assert_array_equal(without_after["a"].matrix, without["a"].matrix)
    assert not np.array_equal(without_after["b"].matrix, without["b"].matrix)
    assert not np.array_equal(served_after.matrix, served.matrix)
    # The fit moves requests toward their gold tools: not the identity.
    assert not np.allclose(served.matrix, np.eye(8))
