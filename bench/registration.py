"""Registration at scale: `capreg serve --catalogs DIR` from an empty store to serving, and a
restart, for a thousand-plus catalog files, for 10k tools split 100 / 1,000 / 5,000 ways, and
for 300 files made by copying the bundled catalogs/*.json 100 times each (rich schemas, every
one repeated: what registration costs per tool beyond the mirrors' small schemas).

Usage: python -m bench.registration [--tools 10000] [--splits 100,1000,5000] [--copies 100]
[--repeats 3] [--out FILE.md] (`--splits ""` and `--copies 0` leave those rows out)
(`make bench` runs it after bench.performance). Embeddings are cached, as the issue's
setting says: every tool's vector is put in the store before the timed start (the first run
embeds what the cache lacks, untimed). Each timed figure is a real `capreg serve` process,
from its start until the health service says SERVING, so it includes the interpreter and
the model loading (`floor` below: the same process with an empty folder).

The report replaces the "Registration at scale" section of docs/results/performance.md.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import sqlite3
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from capreg.evaluation.sampler import PoolTool, catalog_sources, load_pool, with_variants
from indexer.embedding import load_embedder
from indexer.formats import parse_catalog
from indexer.retrieval.document import document_hash, document_text
from registry.ingest.catalog_dir import request_name
from registry.store import SqliteStore
from tests.support.server_process import serving_process

ROOT = Path(__file__).resolve().parent.parent
WORKDIR = ROOT / ".capreg" / "bench" / "registration"
CACHE = ROOT / ".capreg" / "bench" / "bench.db"
SECTION = "## Registration at scale"
# Targets for the mirrors' rows, by tool count: from an empty store with embeddings stored,
# and a restart (issue 36: a million tools served in 180 s and restarted in 20 s).
SERVE_TARGETS = {10_000: 30.0, 1_000_000: 180.0}
RESTART_TARGETS = {10_000: 3.0, 1_000_000: 20.0}
COPIES_TARGET = 10.0
# Each start is timed this many times by default; the report gives the median (this machine
# is shared: single runs moved by a second or more).
REPEATS = 3
# What `make bench` runs: --tools, --splits, --copies, --repeats.
MAKE_BENCH = (10_000, "100,1000,5000", 100, REPEATS)


def split_sources(tools: Sequence[PoolTool], catalogs: int) -> list[tuple[str, str]]:
    """`tools` in `catalogs` contiguous groups under one title, so the document texts (and
    cached embeddings) are the same however the tools are split."""
    sources = []
    size = -(-len(tools) // catalogs)
    for index in range(catalogs):
        chunk = tools[index * size : (index + 1) * size]
        if not chunk:
            break
        seen: set[str] = set()
        entries = []
        for offset, item in enumerate(chunk):
            name = item.tool.name
            if name in seen:  # the same tool name from two servers: keep both, apart
                name = f"{name[:100]}-{index * size + offset}"
            seen.add(name)
            entries.append(
                {
                    "name": name,
                    "description": item.tool.description,
                    "input_schema": item.tool.input_schema,
                }
            )
        name = f"split{catalogs}-{index:05}"
        document = {
            "capreg": 1,
            "name": name,
            "title": "Mirror",
            "description": f"Tools {index * size} to {index * size + len(chunk) - 1} of the pool.",
            "tools": entries,
        }
        sources.append((name, json.dumps(document, ensure_ascii=False)))
    return sources


def bundled_copies(times: int) -> list[tuple[str, str]]:
    """Each bundled catalogs/*.json file `times` times, as files `<stem>-<copy>.json`: the
    MCP files name their catalog after the file, so every copy is a catalog of its own."""
    return [
        (f"{path.stem}-{copy:03}", path.read_text())
        for path in sorted((ROOT / "catalogs").glob("*.json"))
        for copy in range(times)
    ]


def write_folder(folder: Path, sources: Sequence[tuple[str, str]]) -> None:
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    for name, content in sources:
        (folder / f"{name}.json").write_text(content)


def ensure_cached(sources: Sequence[tuple[str, str]]) -> int:
    """Puts every tool's vector in the cache store; returns how many had to be embedded."""
    embedder = load_embedder()
    texts: dict[str, str] = {}
    for name, content in sources:
        catalog = parse_catalog(content, name=request_name(Path(f"{name}.json"), content))
        for tool in catalog.tools:
            text = document_text(tool, catalog.title)
            texts[document_hash(text)] = text
    store = SqliteStore(CACHE)
    try:
        have = store.embeddings(embedder.model_id, list(texts))
        missing = [h for h in texts if h not in have]
        if missing:
            vectors = embedder.encode([texts[h] for h in missing], progress=True)
            store.put_embeddings(embedder.model_id, dict(zip(missing, vectors, strict=True)))
        return len(missing)
    finally:
        store.close()


def seeded_store(path: Path) -> None:
    """A new store holding only the cache's embeddings (and IVF partitions)."""
    for suffix in ("", "-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    SqliteStore(path).close()
    with sqlite3.connect(path) as db:
        db.execute("ATTACH DATABASE ? AS cache", (str(CACHE),))
        db.execute("INSERT INTO embeddings SELECT * FROM cache.embeddings")
        db.execute("INSERT INTO partitions SELECT * FROM cache.partitions")
        db.commit()
        db.execute("DETACH DATABASE cache")


def time_to_serving(db: Path, folder: Path, log: Path) -> tuple[float, float | None]:
    """Seconds from starting `capreg serve --catalogs folder` until SERVING, and the
    server's own figure from its log (its start-up after imports)."""
    started = time.perf_counter()
    with serving_process(db, log, ["--catalogs", str(folder)]):
        seconds = time.perf_counter() - started
    found = re.search(r"ready in ([0-9.]+)s", log.read_text())
    return seconds, float(found.group(1)) if found else None


def measure(
    label: str, sources: Sequence[tuple[str, str]], tools: int, repeats: int = REPEATS
) -> dict[str, Any]:
    work = WORKDIR / label
    folder = work / "catalogs"
    write_folder(folder, sources)
    embedded = ensure_cached(sources)
    db = work / "registry.db"
    serves, restarts = [], []
    for _ in range(repeats):
        seeded_store(db)
        serves.append(time_to_serving(db, folder, work / "serve.log"))
    for _ in range(repeats):
        restarts.append(time_to_serving(db, folder, work / "restart.log"))
    serve_s, serve_own = _median(serves)
    restart_s, restart_own = _median(restarts)
    row = {
        "label": label,
        "catalogs": len(sources),
        "tools": tools,
        "serve_s": serve_s,
        "serve_own_s": serve_own,
        "restart_s": restart_s,
        "restart_own_s": restart_own,
        "embedded_untimed": embedded,
    }
    print(row, flush=True)
    return row


def _tool_count(sources: Sequence[tuple[str, str]]) -> int:
    return sum(
        len(parse_catalog(content, name=request_name(Path(f"{name}.json"), content)).tools)
        for name, content in sources
    )


def _median(runs: list[tuple[float, float | None]]) -> tuple[float, float | None]:
    """The run with the median wall time (its own figure beside it)."""
    return sorted(runs, key=lambda run: run[0])[len(runs) // 2]


def floor_s(repeats: int = REPEATS) -> float:
    """The same process with an empty folder and store: interpreter, model, listener."""
    work = WORKDIR / "floor"
    write_folder(work / "catalogs", [])
    db = work / "registry.db"
    seeded_store(db)
    return _median(
        [time_to_serving(db, work / "catalogs", work / "serve.log") for _ in range(repeats)]
    )[0]


def report_lines(rows: list[dict[str, Any]], floor: float, args: argparse.Namespace) -> list[str]:
    made_by = (args.tools, args.splits, args.copies, args.repeats) == MAKE_BENCH
    splits = args.splits or '""'
    lines = [
        SECTION,
        "",
        f"Command: `python -m bench.registration --tools {args.tools} --splits "
        f"{splits} --copies {args.copies} --repeats {args.repeats}`"
        f"{' (`make bench`)' if made_by else ''}. Each figure is a real `capreg serve --db DB "
        "--catalogs DIR` process timed from its start until its health service says SERVING "
        f"(data calls are refused until then), the median of {args.repeats} starts; "
        "embeddings cached in the store beforehand, nothing else. Floor (same process, empty "
        f"folder): {floor:.1f} s. Within the split series (the same {args.tools:,} tools), "
        "'ms per added catalog' is the "
        "difference from the row before divided by the catalogs added: start-up is linear in "
        "the number of catalogs when it stays flat; single starts on this shared machine "
        "vary by a few hundred milliseconds.",
        "",
        "| catalog files | tools | empty store -> serving s | ms per added catalog "
        "| restart s | ms per added catalog | server's own figures s (serve / restart) |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    previous: dict[str, Any] | None = None
    for r in rows:
        own = f"{r['serve_own_s'] or 0:.1f} / {r['restart_own_s'] or 0:.1f}"
        # Within the split series (same tools), the cost of each catalog beyond the row
        # before: constant when start-up grows linearly with the number of catalogs.
        serve_slope = restart_slope = "-"
        if previous is not None and r["label"].endswith("split"):
            more = r["catalogs"] - previous["catalogs"]
            serve_slope = f"{(r['serve_s'] - previous['serve_s']) / more * 1000:.2f}"
            restart_slope = f"{(r['restart_s'] - previous['restart_s']) / more * 1000:.2f}"
        lines.append(
            f"| {r['catalogs']:,} ({r['label']}) | {r['tools']:,} | {r['serve_s']:.1f} | "
            f"{serve_slope} | {r['restart_s']:.1f} | {restart_slope} | {own} |"
        )
        previous = r if r["label"].endswith("split") else None
    mirrors = rows[0]
    copies = [r for r in rows if r["label"] == "bundled copies"]
    serve, restart = SERVE_TARGETS.get(mirrors["tools"]), RESTART_TARGETS.get(mirrors["tools"])
    if serve is None and restart is None and not copies:
        return [*lines, ""]
    lines += ["", "| target | measured | met |", "| --- | --- | --- |"]
    if serve is not None:
        lines.append(
            f"| {mirrors['catalogs']:,} catalogs / {mirrors['tools']:,} tools, serve --catalogs "
            f"from empty <= {serve:g} s | {mirrors['serve_s']:.1f} s | "
            f"{'yes' if mirrors['serve_s'] <= serve else 'no'} |"
        )
    if restart is not None:
        lines.append(
            f"| restart at {mirrors['tools']:,} tools in {mirrors['catalogs']:,} catalogs <= "
            f"{restart:g} s | {mirrors['restart_s']:.1f} s | "
            f"{'yes' if mirrors['restart_s'] <= restart else 'no'} |"
        )
    lines += [
        f"| {r['catalogs']:,} copies of the bundled catalogs / {r['tools']:,} tools, serve "
        f"--catalogs from empty <= {COPIES_TARGET:g} s | {r['serve_s']:.1f} s | "
        f"{'yes' if r['serve_s'] <= COPIES_TARGET else 'no'} |"
        for r in copies
    ]
    lines.append("")
    return lines


def write_section(path: Path, lines: list[str]) -> None:
    """Replaces this benchmark's section of `path` (or adds it at the end)."""
    text = path.read_text() if path.exists() else "# Performance\n"
    start = text.find(SECTION)
    if start >= 0:
        following = text.find("\n## ", start + len(SECTION))
        rest = text[following + 1 :] if following >= 0 else ""
        text = text[:start] + "\n".join(lines) + ("\n" + rest if rest else "")
    else:
        text = text.rstrip("\n") + "\n\n" + "\n".join(lines)
    path.write_text(text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--tools", type=int, default=10_000)
    parser.add_argument("--splits", default="100,1000,5000")
    parser.add_argument("--copies", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=REPEATS)
    parser.add_argument("--datasets", default=None)
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "results" / "performance.md")
    args = parser.parse_args()
    WORKDIR.mkdir(parents=True, exist_ok=True)
    pool, _ = load_pool(args.datasets)
    tools = with_variants(pool, args.tools)[: args.tools]
    rows = [measure("server mirrors", catalog_sources(tools), len(tools), args.repeats)]
    for count in (int(s) for s in args.splits.split(",") if s):
        rows.append(
            measure(f"{count:,} split", split_sources(tools, count), len(tools), args.repeats)
        )
    if args.copies:
        copies = bundled_copies(args.copies)
        rows.append(measure("bundled copies", copies, _tool_count(copies), args.repeats))
    floor = floor_s(args.repeats)
    lines = report_lines(rows, floor, args)
    print("\n".join(lines))
    write_section(args.out, lines)


if __name__ == "__main__":
    main()
