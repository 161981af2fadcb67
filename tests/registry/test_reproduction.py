"""When a refit of the learned stage counts as reproducing the committed one."""

from __future__ import annotations

import pytest

from capreg.training.stage import (
    MAX_METRIC_GAP_POINTS,
    MAX_METRIC_GAP_REQUESTS,
    MIN_TOP1_AGREEMENT,
    Reproduction,
)


def refit(
    *,
    same_inputs: bool,
    identical: bool,
    agreement: float = 1.0,
    gap: float = 0.0,
    requests: int = 3995,
) -> Reproduction:
    return Reproduction(
        same_inputs=same_inputs,
        identical=identical,
        agreement={"seal-tools:dev": 1.0, "metatool:tuning": agreement},
        gap={"seal-tools:dev": 0.0, "metatool:tuning": gap},
        requests={"seal-tools:dev": 700, "metatool:tuning": requests},
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


def test_on_a_small_set_the_gap_may_be_a_few_requests_even_when_that_is_more_than_a_point() -> None:
    # 158 requests: one is 0.63 point, so the bound is four requests (2.53 points).
    small = 158
    per_request = 100.0 / small
    assert refit(same_inputs=False, identical=False, gap=3 * per_request, requests=small).holds
    at_bound = MAX_METRIC_GAP_REQUESTS * per_request - 1e-9
    assert refit(same_inputs=False, identical=False, gap=at_bound, requests=small).holds
    assert not refit(
        same_inputs=False,
        identical=False,
        gap=(MAX_METRIC_GAP_REQUESTS + 1) * per_request,
        requests=small,
    ).holds
    # On a large set the point bound is the wider one and stays.
    assert not refit(same_inputs=False, identical=False, gap=1.2, requests=3995).holds
    assert (
        "bound 2.53"
        in refit(same_inputs=False, identical=False, gap=0.0, requests=small).describe()
    )
