"""The benchmark scripts run as BENCHMARKS.md says, on small sizes: their figures are only worth
reading if the scripts still work, and the concurrent one checks that every answer of many
annotators at once is stored exactly once."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from tests.conftest import REPO


def run_bench(*args: str) -> str:
    done = subprocess.run([sys.executable, *args], capture_output=True, text=True, cwd=REPO, timeout=900)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


@pytest.mark.slow
def test_many_annotators_at_once_store_every_answer_once():
    out = run_bench(
        "bench/bench_annotation.py",
        "--workers",
        "12",
        "--answers",
        "6",
        "--reading",
        "0",
        "--no-browser",
        "--engine-workers",
        "6",
    )
    counts = [tuple(map(int, found)) for found in re.findall(r"labels stored (\d+) of (\d+); errors (\d+)", out)]
    assert counts == [
        (72, 72, 0),
        (36, 36, 0),
        (36, 36, 0),
    ]  # one server; then one SQLite server and two PostgreSQL replicas
    assert "6 annotators, two replicas, PostgreSQL" in out
    assert re.search(r"get-next p50 [\d.]+ ms, p95 [\d.]+ ms", out)


@pytest.mark.slow
def test_scoring_bench_compares_auto_with_the_reference_and_reports_parity():
    out = run_bench("bench/bench_scoring.py", "--items", "14", "--reference-sample", "2")
    assert re.search(r"reference per-item loop \(fp32\): [\d.]+ s", out)
    assert re.search(r"precision auto: auto chose (bf16|fp32)", out)
    assert re.search(r"score fp32 cold: [\d.]+ s -> [\d.]+x faster", out) and "% of the floor's speed" in out
    if "auto chose bf16" in out:
        assert re.search(r"parity bf16 against fp32: \d+ of 14 decisions flip", out)


@pytest.mark.slow
def test_cluster_bench_scores_the_same_items_in_one_process_and_on_one_and_two_actors():
    from foil_studio.analysis.models import DEMO_ARCH

    for model in (("--arch", DEMO_ARCH), ("--family", "blip-itm")):
        out = run_bench("bench/bench_cluster.py", "--items", "4", "--batch-size", "2", *model)
        assert "4 items (8 image-caption pairs)" in out and ("blip-itm (tiny, random) in fp32" in out) == (
            model[0] == "--family"
        )
        assert re.search(r"\| one process \(`foil score`\) \| [\d.]+ \| [\d.]+ \| [\d.]+ \| 1.00 \|", out)
        row = r"\| local Ray cluster, \d actors? x \d CPUs? \| [\d.]+ \| [\d.]+ \| [\d.]+ \| [\d.]+ \|"
        assert len(re.findall(row, out)) == 2


def test_health_bench_times_the_estimates_against_the_budget():
    out = run_bench("bench/bench_health.py", "--items", "3000", "--strata", "3", "--runs", "2", "--n-boot", "50")
    assert "items 3000 decided" in out and "in 3 strata" in out
    assert re.search(r"invalid share: [\d.]+ s .*95% interval [\d.]+ to [\d.]+", out)
    assert re.search(r"accuracy on valid items: [\d.]+ s \(2 runs, 1 paired differences", out)
    assert re.search(r"estimate and bootstrap: [\d.]+ s = \d+% of the 2 s budget \([\d.]+x under it\)", out)


def test_health_coverage_table_prints_every_condition():
    from tests.test_health_coverage import SHARES, SINGLE_SIZES, conditions

    out = run_bench("bench/health_coverage.py", "--reps", "20")
    simulated = re.findall(
        r"^\| (overall share|valid accuracy) \| .+ \| [\d.]+ \| [\d.]+ \| [\d.]+ \| 20 \|", out, re.M
    )
    assert len(simulated) == sum(c.part != "single stratum" for c in conditions())
    # one category's share is computed exactly: a grid of (N, K) rows by n/N, for coverage and for width
    grid_rows = re.findall(r"^\| \d+ \| \d+ \(0\.\d{3}\) \|( [\d.]+\*? \|){12}$", out, re.M)
    assert len(grid_rows) == 2 * len(SINGLE_SIZES) * len(SHARES)
    assert re.search(r"Horvitz-Thompson, 20 Poisson samples .* standard errors off", out)


def test_prediction_powered_coverage_table_prints_every_condition_and_valse_piece():
    from tests.test_prediction_powered import CONDITIONS

    out = run_bench("bench/health_ppi_coverage.py", "--reps", "3")
    grid = re.findall(r"^\| \d+ \| [\d.]+ \| [\d.]+ \| [\d.]+ \| [\d.]+ \| [\d.]+ \| [\d.]+ \| [\d.]+ \|$", out, re.M)
    assert len(grid) == len(CONDITIONS)
    pieces = re.findall(r"^\| ([a-z-]+) \| \d+ \| 0\.\d{3} \| 0\.\d{3} \| [\d.]+ \| [\d.]+ \|$", out, re.M)
    assert len(pieces) == 12 and pieces[-1] == "all"  # VALSE's 11 pieces and the overall share
    budget = re.findall(
        r"^\| (0/1 label|probability) \| [\d.]+ \| 0\.[13] \| 0\.\d{3} \| [\d.]+ \| [\d.]+ \| [\d.]+ \|$", out, re.M
    )
    assert budget == ["0/1 label"] * 4 + ["probability"] * 4
    pairs = re.findall(r"^\| \d+ \| 0\.\d+ \| [\d.]+ \| \d+ \| -?0\.\d{3} \| [\d.]+ \| [\d.]+ \|$", out, re.M)
    assert len(pairs) == 24


@pytest.mark.slow
def test_family_bench_times_each_family_against_its_reference_and_reads_peak_memory():
    out = run_bench("bench/bench_families.py", "--images", "3", "--families", "open_clip", "blip-itm")
    assert re.search(r"set: 3 items, 3 distinct 640x480 JPEGs", out)
    assert re.search(r"precision auto: (this CPU|auto chose)", out) or "native bf16" in out
    for family in ("open_clip \\(ViT-B-32, random weights\\)", "blip-itm \\(tiny random model\\)"):
        assert re.search(family + r": reference [\d.]+ s; cold \((bf16|fp32)\) [\d.]+ s -> [\d.]+x; warm", out)
        assert re.search(r"\| " + family + r" \| [\d.]+ \| [\d.]+ \| [\d.]+ \| [\d.]+x \| [\d,]+x \| \d+ MB", out)
    assert "loader thread off (decoded in turn)" in out and "open_clip cold run's parts" in out
    assert out.count("peak memory (VmHWM, fresh process") == 2


def test_active_sampling_bench_prints_both_designs_for_every_world():
    from bench.health_active import WORLDS

    out = run_bench("bench/health_active.py", "--reps", "3")
    rows = re.findall(r"^\| ([^|]+) \| 0\.[13] \| [\d.]+ \| [\d.]+ \| [\d.]+ \|$", out, re.M)
    assert [name.strip() for name in rows] == [name for name in WORLDS for _ in (0.1, 0.3)]
    refused = subprocess.run(
        [sys.executable, "bench/health_active.py", "--reps", "0"], capture_output=True, text=True, cwd=REPO
    )
    assert refused.returncode == 2 and "--reps must be at least 1 (got 0)" in refused.stderr
