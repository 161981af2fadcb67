"""Figures the benchmarks share: nearest-rank percentiles and a process's resident memory."""

from __future__ import annotations

from pathlib import Path


def percentile(samples: list[float], q: float) -> float:
    """The nearest-rank `q` quantile of `samples` (NaN when there are none)."""
    if not samples:
        return float("nan")
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def rss_mb(pid: int) -> float:
    """Resident memory of process `pid` in MiB, from /proc (NaN where it is not readable)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")
