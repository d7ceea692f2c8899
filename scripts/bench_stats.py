"""Small statistics helpers for the benchmark."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable


def percentile(values: list[float], p: float) -> float:
    """Linear-interpolated percentile (p in 0..100)."""
    if not values:
        return float("nan")
    s = sorted(values)
    if len(s) == 1:
        return s[0]
    pos = (len(s) - 1) * p / 100.0
    lo = int(pos)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (pos - lo)


def summary(values: list[float]) -> dict:
    if not values:
        return {"n": 0}
    return {"n": len(values), "p50": percentile(values, 50), "p95": percentile(values, 95),
            "mean": sum(values) / len(values), "min": min(values), "max": max(values)}


def time_each(fn: Callable[[object], object], items: Iterable, warmup: int = 5,
              cpu_out: list[float] | None = None) -> list[float]:
    """Milliseconds (wall) of ``fn(item)`` for each item, after calling it on the first ``warmup`` items untimed.
    With ``cpu_out``, the calling thread's CPU milliseconds of each call are appended to it: on a shared machine
    wall time includes waiting for a core, thread CPU time does not."""
    items = list(items)
    for it in items[:warmup]:
        fn(it)
    out = []
    for it in items:
        c0 = time.thread_time()
        t0 = time.perf_counter()
        fn(it)
        out.append((time.perf_counter() - t0) * 1000)
        if cpu_out is not None:
            cpu_out.append((time.thread_time() - c0) * 1000)
    return out
