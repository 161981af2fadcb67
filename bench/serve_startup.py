"""A `capreg serve` process's start-up over a store that holds its catalogs, comparable
across versions of the code.

Usage: python bench/serve_startup.py --db STORE [--repeats 5]

Starts `capreg serve --db STORE` `--repeats` times and prints, for each start, the seconds
from the process' start until its health service says SERVING (what `make bench`'s start-up
column measures) and the server's own figure from its log (after its imports). The same file
measures an older commit from a worktree of it, back to back (this machine's speed moves from
day to day; compare runs made together):

    git worktree add /tmp/base HEAD~1
    (cd /tmp/base && PYTHONPATH=/tmp/base python "$OLDPWD/bench/serve_startup.py" --db STORE)
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import tempfile
import time
from pathlib import Path

from tests.support.server_process import serving_process


def start_once(db: Path, log: Path) -> tuple[float, float | None]:
    started = time.perf_counter()
    with serving_process(db, log):
        seconds = time.perf_counter() - started
    found = re.search(r"ready in ([0-9.]+)s", log.read_text())
    return seconds, float(found.group(1)) if found else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--db", required=True, type=Path, help="a SQLite store file")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        log = Path(scratch) / "serve.log"
        starts = [start_once(args.db, log) for _ in range(args.repeats)]
    walls = [wall for wall, _ in starts]
    own = [mine for _, mine in starts if mine is not None]
    print(
        json.dumps(
            {
                "starts_s": [round(wall, 2) for wall in walls],
                "own_s": own,
                "median_s": round(statistics.median(walls), 2),
            }
        )
    )


if __name__ == "__main__":
    main()
