"""Statistics shared by every report of the scripts (bench, eval, stress): one percentile definition, so "p95"
means the same in each.

The definition is linear interpolation between the two closest order statistics (Hyndman & Fan's type 7): what
``numpy.percentile`` and ``statistics.quantiles(method="inclusive")`` compute by default, so a figure can be
re-checked with either, and its p50 is ``statistics.median``. It is continuous in the sample (one slow run moves
p95 a little, not by a whole gap between runs), which matters for the small samples of cold-process timings
(30-60 runs). Nearest-rank (always an observed value) was the other candidate; it jumps by whole gaps.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable, Sequence
from typing import TypeVar

T = TypeVar("T")


def percentile(values: Sequence[float], p: float) -> float:
    """The ``p``-th percentile (``p`` in 0..100) of ``values`` by linear interpolation: with the values sorted
    ``s[0] ≤ … ≤ s[n-1]`` and ``h = (n − 1)·p/100``, it is ``s[⌊h⌋] + (h − ⌊h⌋)·(s[⌊h⌋+1] − s[⌊h⌋])``.
    NaN for no values.

    >>> percentile([1, 2, 3, 4], 50), percentile([1, 2, 3, 4], 95), percentile([7], 95)
    (2.5, 3.85, 7.0)
    >>> percentile(list(range(1, 101)), 95)
    95.05
    """
    if not 0 <= p <= 100:
        raise ValueError(f"percentile p must be in 0..100, got {p}")
    if not values:
        return float("nan")
    s = sorted(values)
    h = (len(s) - 1) * p / 100
    lo = math.floor(h)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (h - lo)


def summary(values: Sequence[float]) -> dict:
    """n, p50, p95, mean, min and max of ``values`` (``{"n": 0}`` for none)."""
    if not values:
        return {"n": 0}
    return {"n": len(values), "p50": percentile(values, 50), "p95": percentile(values, 95),
            "mean": sum(values) / len(values), "min": min(values), "max": max(values)}


def time_each(fn: Callable[[T], object], items: Iterable[T], warmup: int = 5,
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
