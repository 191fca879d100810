"""Privacy audit of the Horvitz–Thompson release (the theorem of nbs/10d_dp_ht.ipynb) with the library's auditor, on
neighbours that attain its sensitivity: at p = 0.3, record 0 treated (the arm with the smaller probability) moves from
the upper outcome bound to the lower one, so the first coordinate moves by 2R and the second not at all. The release is
calibrated as DPHorvitzThompson calibrates it (checked against a fit's published noise sd); the claimed ε must not be
refuted and must be approached. Broken-on-purpose control the same audit must catch: the noise calibrated to half the
sensitivity."""
import numpy as np
import pytest

from dp_causal_nb.accounting import PrivacyAccountant
from dp_causal_nb.audit import audit_mechanism
from dp_causal_nb.ht import DPHorvitzThompson, ht_sensitivity, ht_statistics
from dp_causal_nb.mechanisms import gdp_mu, gdp_sigma
from dp_causal_nb.secure_noise import grid_release, plan_gaussian

N, P, EPS, DELTA, RUNS = 20, 0.3, 1.0, 1e-2, 100_000   # δ = 1e-2: where 10⁵ runs give the auditor power
OB = (-1.0, 1.0)


def _pair():
    Y, T = np.linspace(-0.9, 0.9, N), np.arange(N) % 2
    T[0] = 1
    out = []
    for y in (1.0, -1.0):
        Y[0] = y
        out.append(ht_statistics(Y, T, OB, P))
    return out, (Y, T)


def _plan(scale=1.0):
    sens = ht_sensitivity(OB, P)
    return plan_gaussian(gdp_sigma(gdp_mu(EPS, DELTA), sens * scale), sens, 2)


def test_audit_ht_release():
    (V0, V1), (Y, T) = _pair()
    assert np.linalg.norm(V0 - V1) == pytest.approx(ht_sensitivity(OB, P), rel=1e-12)   # the pair attains the bound
    m = DPHorvitzThompson(epsilon=EPS, delta=DELTA, outcome_bounds=OB, assignment_probability=P,
                          accountant=PrivacyAccountant()).fit(Y, T)
    assert m.noise_sd_ == _plan().sd                   # the audited calibration is the estimator's
    ok = audit_mechanism(lambda v, size, rng: grid_release(v, _plan(), rng, size=size), V0, V1, n_runs=RUNS,
                         delta=DELTA, random_state=1)
    assert 0.5 * EPS < ok.epsilon_lower <= EPS, ok       # not refuted, and approached


def test_half_sensitivity_is_caught():
    (V0, V1), _ = _pair()
    bad = audit_mechanism(lambda v, size, rng: grid_release(v, _plan(0.5), rng, size=size), V0, V1, n_runs=RUNS,
                          delta=DELTA, random_state=1)
    assert bad.epsilon_lower > EPS, bad
