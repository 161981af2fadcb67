"""The fast tier (`make test-fast`) leaves out every test that needs the model, PostgreSQL,
chromium, the npm Inspector or the labeled datasets, and the heavy fixtures mark their tests.

The checks collect the real suite in a subprocess with `-p tests.test_tiers`, which loads this
module as a plugin as well: its two hooks report each collected test's fixtures (the transitive
closure) and markers, and whether the Makefile's `-m` expression kept it.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass

import pytest

from tests.conftest import ROOT, TIER_FIXTURES

REPORT = "tiers: "
DESELECTED: list[pytest.Item] = []


def pytest_deselected(items: Sequence[pytest.Item]) -> None:
    DESELECTED.extend(items)


def pytest_report_collectionfinish(items: Sequence[pytest.Item]) -> list[str]:
    def described(item: pytest.Item, selected: bool) -> dict[str, object]:
        return {
            "id": item.nodeid,
            "selected": selected,
            "fixtures": sorted(getattr(item, "fixturenames", ())),
            "markers": sorted({mark.name for mark in item.iter_markers()}),
        }

    tests = [described(i, True) for i in items] + [described(i, False) for i in DESELECTED]
    return [REPORT + json.dumps(tests)]


@dataclass(frozen=True)
class Collected:
    id: str
    selected: bool
    fixtures: frozenset[str]
    markers: frozenset[str]


def fast_expression() -> str:
    found = re.search(r"^FAST_TESTS := (.+)$", (ROOT / "Makefile").read_text(), re.MULTILINE)
    assert found, "the Makefile defines FAST_TESTS"
    return found.group(1)


def tier_markers() -> set[str]:
    options = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]
    return {line.partition(":")[0] for line in options["ini_options"]["markers"]}


@pytest.fixture(scope="module")
def collected() -> list[Collected]:
    """The whole suite as the fast tier collects it, kept and left out alike."""
    command = [sys.executable, "-m", "pytest", "-p", "tests.test_tiers", "--collect-only", "-q"]
    command += ["-p", "no:cacheprovider", "-m", fast_expression()]
    run = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    [report] = [line for line in run.stdout.splitlines() if line.startswith(REPORT)]
    return [
        Collected(t["id"], t["selected"], frozenset(t["fixtures"]), frozenset(t["markers"]))
        for t in json.loads(report.removeprefix(REPORT))
    ]


def test_the_fast_tier_leaves_out_every_registered_marker() -> None:
    terms = fast_expression().split(" and ")
    assert all(term.startswith("not ") for term in terms), terms
    assert {term.removeprefix("not ") for term in terms} == tier_markers()
    assert set(TIER_FIXTURES.values()) <= tier_markers()


def test_no_test_in_the_fast_tier_reaches_a_heavy_fixture_or_carries_a_tier_marker(
    collected: list[Collected],
) -> None:
    fast = [test for test in collected if test.selected]
    assert len(fast) > len(collected) / 2  # the fast tier is most of the suite, not a corner
    heavy, tiers = set(TIER_FIXTURES), tier_markers()
    assert {t.id: sorted(t.fixtures & heavy) for t in fast if t.fixtures & heavy} == {}
    assert {t.id: sorted(t.markers & tiers) for t in fast if t.markers & tiers} == {}


def test_each_heavy_fixture_is_reached_and_marks_every_test_that_reaches_it(
    collected: list[Collected],
) -> None:
    for fixture, marker in TIER_FIXTURES.items():
        reaching = [test for test in collected if fixture in test.fixtures]
        assert reaching, f"no test reaches {fixture}: renamed? update TIER_FIXTURES"
        assert [t.id for t in reaching if marker not in t.markers] == []
        assert not any(t.selected for t in reaching)
