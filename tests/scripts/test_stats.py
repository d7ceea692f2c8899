"""scripts/stats.py: the one percentile definition every report of the scripts uses; and the scripts run as
modules of the ``scripts`` package (no ``sys.path`` tricks)."""

from __future__ import annotations

import math
import statistics
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, strategies as st

from conftest import REPO
from scripts.stats import percentile, summary


def test_percentile_interpolates_between_the_two_nearest_ordered_values():
    # h = (n - 1) * p / 100 over the sorted values [10, 20, 30, 40, 50]
    values = [50, 10, 40, 20, 30]
    assert percentile(values, 0) == 10
    assert percentile(values, 100) == 50
    assert percentile(values, 50) == 30  # h = 2
    assert percentile(values, 95) == pytest.approx(48.0)  # h = 3.8: 40 + 0.8 * 10
    assert percentile(values, 10) == pytest.approx(14.0)  # h = 0.4: 10 + 0.4 * 10
    assert percentile([3.5], 99) == 3.5
    assert math.isnan(percentile([], 50))
    with pytest.raises(ValueError, match="0..100"):
        percentile(values, 950)


@given(st.lists(st.floats(-1e6, 1e6, allow_nan=False), min_size=1, max_size=60), st.floats(0, 100))
def test_percentile_is_numpys_default_and_its_median_is_statistics_median(values, p):
    assert percentile(values, p) == pytest.approx(float(np.percentile(values, p)), rel=1e-9, abs=1e-6)
    assert percentile(values, 50) == pytest.approx(statistics.median(values), rel=1e-9, abs=1e-6)


def test_summary_reports_the_same_percentiles():
    s = summary([4.0, 1.0, 3.0, 2.0])
    assert (s["n"], s["p50"], s["p95"], s["min"], s["max"], s["mean"]) == (4, 2.5, pytest.approx(3.85), 1.0, 4.0, 2.5)
    assert summary([]) == {"n": 0}


@pytest.mark.parametrize("module", ["bench", "eval", "bench_hook", "bench_privacy", "privacy_audit", "stress_load",
                                    "stress_crash"])
def test_each_script_runs_as_a_module_of_the_scripts_package(module):
    proc = subprocess.run([sys.executable, "-m", f"scripts.{module}", "--help"], cwd=REPO, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("usage:")


def test_no_script_edits_sys_path():
    offenders = [p.name for p in (REPO / "scripts").glob("*.py") if "sys.path.insert" in p.read_text()]
    assert offenders == []
