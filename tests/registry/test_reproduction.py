"""When a refit of the learned stage counts as reproducing the committed one."""

from __future__ import annotations

import pytest

from registry.training import MAX_METRIC_GAP_POINTS, MIN_TOP1_AGREEMENT, Reproduction


def refit(
    *, same_inputs: bool, identical: bool, agreement: float = 1.0, gap: float = 0.0
) -> Reproduction:
    return Reproduction(
        same_inputs=same_inputs,
        identical=identical,
        agreement={"seal-tools:dev": 1.0, "metatool:tuning": agreement},
        gap={"seal-tools:dev": 0.0, "metatool:tuning": gap},
    )


def test_on_the_same_inputs_only_the_same_bytes_reproduce() -> None:
    assert refit(same_inputs=True, identical=True).holds
    # Ranking alike is not enough when nothing the fit saw changed.
    assert not refit(same_inputs=True, identical=False).holds
    assert "different model" in refit(same_inputs=True, identical=False).describe()


@pytest.mark.parametrize(
    ("agreement", "gap", "holds"),
    [
        (MIN_TOP1_AGREEMENT, MAX_METRIC_GAP_POINTS, True),
        (0.98, 0.1, True),
        (MIN_TOP1_AGREEMENT - 0.01, 0.0, False),
        (1.0, MAX_METRIC_GAP_POINTS + 0.01, False),
    ],
)
def test_on_other_inputs_the_refit_must_rank_alike_on_every_tuning_set(
    agreement: float, gap: float, holds: bool
) -> None:
    check = refit(same_inputs=False, identical=False, agreement=agreement, gap=gap)
    assert check.holds is holds
    assert "metatool:tuning" in check.describe()
