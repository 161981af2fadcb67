"""The fast tier (`make test-fast`) leaves out every test that needs the model, PostgreSQL,
chromium, the npm Inspector or the labeled datasets, and the heavy fixtures mark their tests.

The checks collect the real suite with the Makefile's `-m` expression through pytester, in
this process: the test modules are imported already when the suite runs, so collecting costs
about a second, where a subprocess would import them all again.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass

import pytest

from tests.conftest import ROOT, TIER_FIXTURES

pytest_plugins = ["pytester"]


@dataclass(frozen=True)
class Tiers:
    fast: list[pytest.Item]
    left_out: list[pytest.Item]


def fast_expression() -> str:
    found = re.search(r"^FAST_TESTS := (.+)$", (ROOT / "Makefile").read_text(), re.MULTILINE)
    assert found, "the Makefile defines FAST_TESTS"
    return found.group(1)


def tier_markers() -> set[str]:
    options = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]
    return {line.partition(":")[0] for line in options["ini_options"]["markers"]}


def markers(item: pytest.Item) -> set[str]:
    return {mark.name for mark in item.iter_markers()}


def fixtures(item: pytest.Item) -> set[str]:
    """Every fixture the test reaches (the transitive closure), as the marking hook sees it."""
    return set(getattr(item, "fixturenames", ()))


@pytest.fixture
def tiers(pytester: pytest.Pytester) -> Tiers:
    """The whole suite as `make test-fast` collects it: what it keeps and what it leaves out."""
    items, recorder = pytester.inline_genitems(
        str(ROOT / "tests"), "-m", fast_expression(), "-p", "no:cacheprovider"
    )
    left_out = [item for call in recorder.getcalls("pytest_deselected") for item in call.items]
    ids = {item.nodeid for item in left_out}
    return Tiers([item for item in items if item.nodeid not in ids], left_out)


def test_the_fast_tier_leaves_out_every_registered_marker() -> None:
    terms = fast_expression().split(" and ")
    assert all(term.startswith("not ") for term in terms), terms
    assert {term.removeprefix("not ") for term in terms} == tier_markers()
    assert set(TIER_FIXTURES.values()) <= tier_markers()


def test_no_test_in_the_fast_tier_reaches_a_heavy_fixture_or_carries_a_tier_marker(
    tiers: Tiers,
) -> None:
    # The fast tier is most of the suite, not a corner of it.
    assert len(tiers.fast) > len(tiers.left_out) > 0
    heavy, tiered = set(TIER_FIXTURES), tier_markers()
    reaching = {t.nodeid: sorted(heavy & fixtures(t)) for t in tiers.fast}
    assert {test: found for test, found in reaching.items() if found} == {}
    marked = {t.nodeid: sorted(markers(t) & tiered) for t in tiers.fast}
    assert {test: found for test, found in marked.items() if found} == {}


def test_each_heavy_fixture_is_reached_and_marks_every_test_that_reaches_it(
    tiers: Tiers,
) -> None:
    for fixture, marker in TIER_FIXTURES.items():
        reaching = [t for t in [*tiers.fast, *tiers.left_out] if fixture in fixtures(t)]
        assert reaching, f"no test reaches {fixture}: renamed? update TIER_FIXTURES"
        assert [t.nodeid for t in reaching if marker not in markers(t)] == []
