"""Replace-one and interval checks of the Horvitz–Thompson release (notebook 10d, DPATE's 'ht' route).

Each test states the property the release should have; the noise is held with ``reproducible_noise()``."""
import numpy as np
import pytest

from dp_causal_nb.accounting import PrivacyAccountant
from dp_causal_nb.ate import DPATE
from dp_causal_nb.core import reproducible_noise
from dp_causal_nb.ht import DPHorvitzThompson, ht_release

T20 = np.r_[np.ones(10), np.zeros(10)]
Y20 = np.full(20, 0.5)


def _ht_fits(seeds=range(200)):
    "DPHorvitzThompson at a small budget on 20 records: the noise dominates, the raw interval often leaves the range."
    with reproducible_noise():
        for s in seeds:
            yield DPHorvitzThompson(epsilon=0.05, delta=1e-6, outcome_bounds=(0, 1), assignment_probability=0.5,
                                    accountant=PrivacyAccountant(), random_state=s).fit(Y20, T20)


def test_conf_int_is_ordered():
    "conf_int_ is an interval: lower <= upper (ht_estimate clamps each end to one side only)."
    bad = [(m.random_state, m.conf_int_) for m in _ht_fits() if m.conf_int_[0] > m.conf_int_[1]]
    assert not bad, f"{len(bad)} of 200 releases publish lower > upper, e.g. {bad[0]}"


def test_conf_int_matches_effect_interval():
    "conf_int_ equals effect_interval(alpha=1 - level): both are post-processing of the same release."
    bad = []
    for m in _ht_fits():
        lo, hi = m.effect_interval(alpha=0.05)
        if not np.allclose((lo[0], hi[0]), m.conf_int_): bad.append((m.random_state, m.conf_int_, (lo[0], hi[0])))
    assert not bad, f"{len(bad)} of 200 differ, e.g. {bad[0]}"


def test_dpate_ht_conf_int_matches_effect_interval():
    "DPATE's 'ht' route: conf_int_ equals effect_interval(alpha=1 - level), and is ordered."
    bad = []
    with reproducible_noise():
        for s in range(200):
            m = DPATE("ht", randomized=True, assignment_probability=0.5, outcome_bounds=(0, 1), epsilon=0.05,
                      delta=1e-6, accountant=PrivacyAccountant(), random_state=s).fit(Y20, T20)
            lo, hi = m.effect_interval(alpha=0.05)
            ci = tuple(m.conf_int_)
            if ci[0] > ci[1] or not np.allclose((np.ravel(lo)[0], np.ravel(hi)[0]), ci): bad.append((s, ci, lo, hi))
    assert not bad, f"{len(bad)} of 200 differ or are inverted, e.g. {bad[0]}"


def test_tiny_probability_refused_before_the_charge():
    "A declared p whose noise variance overflows is a public input: refused (ValueError) before anything is charged."
    acc = PrivacyAccountant()
    with pytest.raises(ValueError):
        ht_release(Y20, T20, outcome_bounds=(0, 1), assignment_probability=1e-160, epsilon=1.0, delta=1e-6,
                   accountant=acc)
    assert not acc.ledger, f"charged before the refusal: {acc.ledger}"


@pytest.mark.xfail(strict=True, reason="a known limit of the normal interval: at eps = inf with n*min(p, 1-p) = 5 the "
                   "scores are too skewed (coverage 0.88 here; 0.93-0.97 at n = 30 and 100, >= 0.94 at eps <= 8); "
                   "the public rule prefers_ht never picks ht at eps = inf")
def test_coverage_hard_bernoulli_trial():
    "95% interval, Bernoulli(0.1) trial of 50 records, every outcome at the top of [0, 1] (ATE 0): coverage >= 90%."
    rng, reps, hits = np.random.default_rng(1), 2000, 0
    for _ in range(reps):
        T = rng.binomial(1, 0.1, 50)
        lo, hi = ht_release(np.ones(50), T, outcome_bounds=(0, 1), assignment_probability=0.1, epsilon=np.inf,
                            delta=1e-6, accountant=PrivacyAccountant())["interval"]
        hits += lo <= 0 <= hi
    assert hits / reps >= 0.90, f"coverage {hits / reps:.3f}"
