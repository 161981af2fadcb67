"""`make` alone is the help: one line for every target, and the variables `make serve` takes."""

from __future__ import annotations

import os
import re
import subprocess

from tests.conftest import ROOT

MAKEFILE = ROOT / "Makefile"


def phony_targets() -> list[str]:
    found = re.search(r"^\.PHONY: (.+)$", MAKEFILE.read_text(), re.MULTILINE)
    assert found, "the Makefile declares its targets .PHONY"
    return found.group(1).split()


def make(*args: str) -> str:
    # Without what an outer make passes down, so `make test` runs this as a shell would.
    env = {k: v for k, v in os.environ.items() if k not in {"MAKEFLAGS", "MFLAGS", "MAKELEVEL"}}
    done = subprocess.run(
        ["make", "--no-print-directory", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return done.stdout


def test_bare_make_lists_every_target_on_one_line_and_builds_nothing() -> None:
    listing = make()
    assert listing == make("help")
    lines = {
        target: [line for line in listing.splitlines() if line.split()[:2] == ["make", target]]
        for target in phony_targets()
    }
    assert {target: len(found) for target, found in lines.items()} == dict.fromkeys(lines, 1)
    assert {"serve", "test", "test-fast", "install"} <= set(lines)
    assert all(len(found[0].split()) > 2 for found in lines.values()), "each line says what"
    assert "pip" not in listing


def test_help_and_the_readme_name_the_addresses_make_serve_takes() -> None:
    listing = make("help")
    serve = re.search(r"^serve: .*\n((?:\t.*\n)+)", MAKEFILE.read_text(), re.MULTILINE)
    assert serve, "the Makefile has a serve rule with a recipe"
    variables = set(re.findall(r"\$\((LISTEN|HTTP_LISTEN|DATA)\)", serve.group(1)))
    assert variables == {"LISTEN", "HTTP_LISTEN", "DATA"}
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for variable in variables:
        assert f"{variable}=" in listing
        assert f"{variable}=" in readme
