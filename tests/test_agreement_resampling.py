"""The agreement bootstrap all resamples at once (`annotate/agreement_resampling.py`) against each
coefficient's own function called on every resampled code matrix, the way `agreement.bootstrap`
did it one resample at a time: the same value in every resample, undefined in the same ones."""

from __future__ import annotations

from itertools import combinations

import numpy as np
import pandas as pd
import pytest

from foil_studio.annotate import agreement as a
from foil_studio.annotate import agreement_resampling as resampling


def one_at_a_time(codes: np.ndarray, level: str, n_boot: int, seed: int) -> dict[str, list[float]]:
    """Each coefficient on each resample as `agreement.bootstrap` draws them (nan where undefined)."""
    statistics = {
        "percent_agreement": lambda c: a._percent_from_codes(c)[0],
        "cohen_mean": lambda c: a._mean_or_none(
            [k for i, j in combinations(range(c.shape[1]), 2) if (k := a.cohen_kappa(c[:, i], c[:, j])[0]) is not None]
        ),
        "fleiss": a._fleiss_from_codes,
        "krippendorff_alpha": lambda c: a._alpha_from_codes(c, level),
        "gwet_ac1": a._ac1_from_codes,
    }
    rng = np.random.default_rng(seed)
    draws = [rng.integers(0, len(codes), len(codes)) for _ in range(n_boot)]
    return {key: [np.nan if (v := fn(codes[d])) is None else v for d in draws] for key, fn in statistics.items()}


def code_matrix(rng: np.random.Generator, items: int, raters: int, classes: int, missing: float, fixed: bool):
    codes = rng.integers(0, classes, (items, raters)).astype(float)
    # agreement above chance: most raters copy the first one's code
    codes[:, 1:] = np.where(rng.random((items, raters - 1)) < 0.6, codes[:, :1], codes[:, 1:])
    if fixed:  # every item the same number of raters, whoever they are (Fleiss defined)
        for row in codes:
            row[rng.permutation(raters)[: raters - 3]] = np.nan
    else:
        codes[rng.random(codes.shape) < missing] = np.nan
    return codes


CASES = [
    # items, raters, classes, missing share, fixed raters per item, level
    (40, 3, 3, 0.0, False, "nominal"),
    (60, 6, 3, 0.0, True, "nominal"),
    (50, 5, 2, 0.5, False, "nominal"),
    (30, 4, 5, 0.3, False, "ordinal"),
    (12, 3, 2, 0.4, False, "nominal"),  # small: some resamples leave coefficients undefined
    (25, 4, 4, 0.2, False, "ordinal"),
]


@pytest.mark.parametrize(("items", "raters", "classes", "missing", "fixed", "level"), CASES)
def test_every_resample_matches_the_coefficient_computed_on_it(items, raters, classes, missing, fixed, level):
    rng = np.random.default_rng(items * raters + classes)
    codes = code_matrix(rng, items, raters, classes, missing, fixed)
    n_boot, seed = 60, 7
    expected = one_at_a_time(codes, level, n_boot, seed)
    found = resampling.replicate_values(codes, resampling.resample_counts(len(codes), n_boot, seed), level)
    for key, values in expected.items():
        assert np.isnan(found[key]).tolist() == np.isnan(values).tolist(), key
        assert found[key][~np.isnan(found[key])] == pytest.approx(np.array(values)[~np.isnan(values)], abs=1e-9), key
    if fixed:
        assert not np.isnan(found["fleiss"]).all()


def test_one_class_throughout_leaves_every_chance_corrected_coefficient_undefined():
    codes = np.zeros((10, 3))
    found = resampling.replicate_values(codes, resampling.resample_counts(10, 20, 0), "nominal")
    assert (found["percent_agreement"] == 100).all()
    for key in ("cohen_mean", "fleiss", "krippendorff_alpha", "gwet_ac1"):
        assert np.isnan(found[key]).all(), key


def test_the_report_gives_the_intervals_the_one_at_a_time_bootstrap_gives():
    rng = np.random.default_rng(3)
    codes = code_matrix(rng, 80, 3, 3, 0.1, False)
    table = pd.DataFrame(codes).apply(lambda column: column.map({0.0: "yes", 1.0: "no", 2.0: "unsure"}))
    report = a.agreement_report(table, n_boot=200, seed=5)
    expected = one_at_a_time(a._codes(table).to_numpy(dtype=float), "nominal", 200, 5)
    assert report["intervals"]["fleiss"] is None  # raters per item vary
    for key, values in expected.items():
        defined = np.array(values)[~np.isnan(values)]
        if len(defined) < 100:
            assert report["intervals"][key] is None, key
            continue
        assert report["intervals"][key] == pytest.approx((np.percentile(defined, 2.5), np.percentile(defined, 97.5)))


def test_another_scale_is_resampled_one_at_a_time():
    with pytest.raises(ValueError, match="not 'interval'"):
        resampling.replicate_values(np.zeros((3, 2)), np.ones((2, 3)), "interval")
