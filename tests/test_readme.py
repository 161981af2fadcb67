"""The README runs as written. Its shell and Python blocks run in order against `make serve`,
started the way the README starts it, and each command's output is checked against the `#`
lines the README shows under it; every other block carries a marker that says why it is not
run (tests/support/readme.py has the rules)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from capreg.cli import build_parser
from tests.conftest import ROOT
from tests.support.readme import (
    Block,
    Command,
    first_unshown,
    python_shown,
    readme_blocks,
    shell_commands,
    unrunnable,
)
from tests.support.server_process import free_port, wait_serving

README = ROOT / "README.md"
# The addresses the README names, which `make serve` listens on by default; the test's server
# listens on free ports, put in their place in each block and in CAPREG_SERVER.
README_GRPC, README_HTTP = "127.0.0.1:50051", "127.0.0.1:8080"
# The server follows its keys file at most once a second, so a key added by one command may be
# refused by a command the same second. A reader pasting block after block leaves that much;
# so does the test, between blocks.
PASTE_PAUSE_SECONDS = 1.1
STARTUP_SECONDS = 300.0
RUN_SECONDS = 300.0
# What would make the README's commands reach something other than the test's server.
# And what an outer `make test` passes down, which would reach the inner make.
INHERITED_OUT = frozenset(
    {"CAPREG_API_KEY", "CAPREG_SERVER", "CAPREG_KEYS"}
    | {"MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEOVERRIDES"}
)


def blocks() -> list[Block]:
    found, problems = readme_blocks(README.read_text(encoding="utf-8"))
    assert problems == []
    return found


def runnable_blocks() -> list[Block]:
    return [block for block in blocks() if block.marker is None]


def test_every_readme_block_runs_or_says_why_not() -> None:
    found = blocks()
    assert [problem for block in found if (problem := unrunnable(block))] == []
    # The README's tour is what runs, not a corner of it.
    assert len([block for block in found if block.marker is None]) >= 8


def test_a_block_neither_runnable_nor_marked_fails_the_check() -> None:
    text = "\n".join(
        [
            "```yaml",
            "name: x",
            "```",
            "<!-- readme-test: skip: -->",
            "```sh",
            "make serve",
            "```",
            "<!-- readme-test: client-config -->",
            "```sh",
            "true",
            "```",
            "<!-- readme-test: skip: runs until Ctrl-C -->",
            "",
            "```sh",
            "make serve",
            "```",
            "<!-- readme-test: skip: stray -->",
            "prose",
        ]
    )
    found, problems = readme_blocks(text)
    assert [bool(unrunnable(block)) for block in found] == [True, True, True, False]
    assert problems == ["README.md:17: marker with no block under it"]


def test_shown_output_is_an_ordered_subset_with_placeholders() -> None:
    [search, quiet] = shell_commands(
        "# explains, not shown\n"
        ".venv/bin/capreg search x \\\n    --limit 2\n"
        "# 1. support/<tool>  (<score>)\n"
        "# ...\n"
        "# 2. support/<tool>  (<score>)\n"
        "\n"
        "# explains the next one\n"
        "HR_KEY=$(true)\n"
    )
    assert search.text == ".venv/bin/capreg search x \\\n    --limit 2"
    assert quiet == Command("HR_KEY=$(true)", ())
    output = ["1. support/a  (2.1)", "   summary", "2. support/b\t(-0.3)"]
    assert first_unshown(search.shown, output) is None
    assert first_unshown(search.shown, list(reversed(output))) == "2. support/<tool>  (<score>)"
    assert first_unshown(["1. hr/<tool>  (<score>)"], output) == "1. hr/<tool>  (<score>)"
    assert python_shown("print(1)\n# ['a']\n# b  c\n") == ("['a']", "b  c")


def test_the_readme_client_configurations_start_the_bridge_the_cli_accepts() -> None:
    configs = [block for block in blocks() if block.marker == "client-config"]
    assert {"mcpServers", "servers"} <= {key for block in configs for key in json.loads(block.text)}
    for block in configs:
        document = json.loads(block.text)
        for server in (document.get("mcpServers") or document["servers"]).values():
            assert server["command"].endswith("/.venv/bin/capreg"), block.line
            assert "CAPREG_API_KEY" in server["env"], block.line
            args = build_parser(server["args"]).parse_args(server["args"])
            assert (args.command, args.registry) == ("bridge", README_GRPC), block.line


@dataclass(frozen=True)
class Step:
    block: Block
    command: str  # as the test's shell runs it
    shown: tuple[str, ...]


def steps(folder: Path, grpc: str, http: str) -> list[Step]:
    """Every command of the runnable blocks, in order, addressed to the test's server; a
    Python block is saved beside the checkout and run with the venv's Python, as the README
    says."""
    found: list[Step] = []
    for block in runnable_blocks():
        text = block.text.replace(README_GRPC, grpc).replace(README_HTTP, http)
        if block.lang == "python":
            program = folder / f"readme-line-{block.line}.py"
            program.write_text(text + "\n", encoding="utf-8")
            found.append(Step(block, f".venv/bin/python {program.name}", python_shown(text)))
        else:
            found += [Step(block, c.text, c.shown) for c in shell_commands(text)]
    return found


def shell_script(found: list[Step], token: str) -> str:
    """One shell for every step, as one terminal: a variable one block sets, the next reads.
    Each step is framed by lines naming it and its exit status."""
    lines: list[str] = []
    previous: Block | None = None
    for number, step in enumerate(found):
        if previous is not None and step.block is not previous:
            lines.append(f"sleep {PASTE_PAUSE_SECONDS}")
        previous = step.block
        lines.append(f"printf '\\n{token} start %d\\n' {number}")
        lines.append(step.command)
        lines.append(f"printf '\\n{token} end %d %d\\n' {number} \"$?\"")
    return "\n".join(lines) + "\n"


def outputs(transcript: str, token: str) -> dict[int, tuple[int, list[str]]]:
    """Each step's exit status and output lines, by step number."""
    found: dict[int, tuple[int, list[str]]] = {}
    current: list[str] = []
    for line in transcript.splitlines():
        if line.startswith(f"{token} start "):
            current = []
        elif line.startswith(f"{token} end "):
            number, status = (int(word) for word in line.split()[2:4])
            found[number] = (status, current)
        else:
            current.append(line)
    return found


def scratch_checkout(folder: Path) -> None:
    """The checkout as its README expects it, in a scratch folder: every top-level entry
    linked (the README's commands only read them; the venv is the repository's) but the data
    folder `make serve` writes."""
    for entry in ROOT.iterdir():
        if entry.name not in {".git", ".capreg"}:
            (folder / entry.name).symlink_to(entry)


@contextmanager
def make_serve(folder: Path, env: dict[str, str], grpc: str, http: str) -> Iterator[Path]:
    """`make serve` on the given addresses in `folder`, until SERVING; yields its log. The
    install stamp is taken as made (`-o`): the test never installs."""
    log = folder / "make-serve.log"
    command = ["make", "--no-print-directory", "-o", ".venv/.installed", "serve"]
    command += [f"LISTEN={grpc}", f"HTTP_LISTEN={http}"]
    with log.open("wb") as sink:
        process = subprocess.Popen(
            command, cwd=folder, env=env, stdout=sink, stderr=sink, start_new_session=True
        )
        try:
            wait_serving(grpc, process, seconds=STARTUP_SECONDS, log=log)
            yield log
        finally:
            # make and the server it started share a process group of their own.
            os.killpg(process.pid, signal.SIGTERM)
            process.wait(timeout=60)


@pytest.mark.model  # `make serve` loads the model in its own process
def test_the_readme_runs_as_written_against_make_serve(sample_db: Path, tmp_path: Path) -> None:
    scratch_checkout(tmp_path)
    # The store `make serve` would fill from catalogs/, filled already by this session with the
    # same model: the server starts in seconds and its registration at start finds every
    # catalog unchanged, as a second `make serve` does.
    data = tmp_path / ".capreg"
    data.mkdir()
    shutil.copy(sample_db, data / "registry.db")
    (data / "registry.db").chmod(0o600)
    grpc, http = f"127.0.0.1:{free_port()}", f"127.0.0.1:{free_port()}"
    env = {k: v for k, v in os.environ.items() if k not in INHERITED_OUT}
    env |= {"CAPREG_SERVER": grpc, "PYTHONUNBUFFERED": "1"}
    found = steps(tmp_path, grpc, http)
    token = f"@@readme-{uuid.uuid4().hex}"
    script = tmp_path / "readme.sh"
    script.write_text(shell_script(found, token), encoding="utf-8")

    with make_serve(tmp_path, env, grpc, http) as log:
        run = subprocess.run(
            ["bash", "--noprofile", "--norc", str(script)],
            cwd=tmp_path,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            timeout=RUN_SECONDS,
            check=False,
        )
    assert "source .capreg/dev-keys.env" in log.read_text(), log.read_text()
    results = outputs(run.stdout, token)
    failures: list[str] = []
    for number, step in enumerate(found):
        where = f"README.md:{step.block.line} `{step.command}`"
        if number not in results:
            failures.append(f"{where}: did not finish\n{run.stdout[-3000:]}")
            break
        status, output = results[number]
        missing = first_unshown(step.shown, output)
        if status != 0 or missing is not None:
            problem = f"exit status {status}" if status else f"no line like {missing!r}"
            shown = "\n".join(output).strip("\n")
            failures.append(f"{where}: {problem}; its output:\n{shown}")
    assert failures == [], "\n\n".join(failures)
