"""Privacy audits of DPATE (Lebeda et al. fold ensemble) with the library's auditor on adversarial neighbours.

The estimator is deterministic given the (public) folds and seeded models, so τ̂ and √V̂ are computed once on each
dataset of an adversarial replace-one pair; the audit then runs the noise addition exactly as DPATE does it
(σ₁, σ₂ read from a fitted DPATE), vectorised over 100 000 runs per dataset."""
import warnings
import numpy as np
import pytest
from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor

from dp_causal_nb.ate import DPATE, cross_fit_ate, make_folds, ate_sensitivity
from dp_causal_nb.audit import audit_mechanism
from dp_causal_nb.mechanisms import gdp_epsilon

N, K, BOUNDS, CLIP, MU, DELTA = 30, 3, (-1.0, 1.0), 0.1, 1.0, 1e-5
PM, OM = DecisionTreeClassifier(random_state=0), DecisionTreeRegressor(random_state=0)
FOLDS = make_folds(N, K, random_state=0)


def _data():
    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, (N, 1)); T = np.tile([0, 1], N // 2); Y = rng.choice([-1.0, 1.0], N)
    return X, T, Y


def _fit(est, X, T, Y):
    r = cross_fit_ate(Y, T, X=X, estimator=est, n_folds=K, outcome_bounds=BOUNDS, propensity_clip=CLIP,
                      propensity_model=PM, outcome_model=OM, folds=FOLDS)
    return r.ate, r.stderr


def _adversarial_pair(est):
    "Brute force: the replace-one neighbour (over extreme replacement records) that moves τ̂ the most."
    X, T, Y = _data()
    t0, s0 = _fit(est, X, T, Y)
    best = (-1.0, None)
    for i in range(N):
        for x in (-1.0, 0.0, 1.0):
            for a in (0, 1):
                for y in (-1.0, 1.0):
                    X1, T1, Y1 = X.copy(), T.copy(), Y.copy(); X1[i], T1[i], Y1[i] = x, a, y
                    t1, s1 = _fit(est, X1, T1, Y1)
                    if abs(t1 - t0) > best[0]: best = (abs(t1 - t0), (t1, s1))
    return (X, T, Y), (t0, s0), best[1], best[0]


@pytest.fixture(scope="module", params=["g", "ipw", "aipw"])
def pair(request):
    est = request.param
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        data, f0, f1, gap = _adversarial_pair(est)
    assert gap <= ate_sensitivity(est, N, K, 1.0, CLIP)          # the brute force respects Theorem 1
    X, T, Y = data
    m = DPATE(est, n_folds=K, mu=MU, delta=DELTA, outcome_bounds=BOUNDS, propensity_clip=CLIP, propensity_model=PM,
              outcome_model=OM, random_state=7).fit(Y, T, X=X, folds=FOLDS)
    # DPATE adds exactly σ₁·z₁ (and σ₂·z₂) with z from its random_state: the audited mechanism is the real one
    z1, z2 = np.random.default_rng(7).standard_normal(2)
    assert m.ate_ == f0[0] + m.sigma1_ * z1
    return est, f0, f1, gap, m


def test_audit_point_estimate(pair):
    est, f0, f1, gap, m = pair
    mech = lambda tau, size, rng: tau + m.sigma1_ * rng.standard_normal(size)
    res = audit_mechanism(mech, f0[0], f1[0], n_runs=100_000, delta=DELTA, random_state=1)
    claimed = gdp_epsilon(m.mu1_, DELTA)
    print(f"{est}: |Δτ| = {gap:.4f} (bound {ate_sensitivity(est, N, K, 1.0, CLIP):.4f}); "
          f"empirical ε ≥ {res.epsilon_lower:.3f} vs claimed {claimed:.3f}")
    assert res.epsilon_lower <= claimed


def test_audit_full_release(pair):
    "Estimate and standard error released together: claimed ε is that of the total μ."
    est, f0, f1, gap, m = pair
    def mech(f, size, rng):
        z = rng.standard_normal((size, 2))
        return np.column_stack([f[0] + m.sigma1_ * z[:, 0], f[1] + m.sigma2_ * z[:, 1]])
    res = audit_mechanism(mech, f0, f1, n_runs=100_000, delta=DELTA, random_state=2)
    claimed = gdp_epsilon(m.mu_spent_, DELTA)
    print(f"{est} (τ, se): empirical ε ≥ {res.epsilon_lower:.3f} vs claimed {claimed:.3f}")
    assert res.epsilon_lower <= claimed


def test_negative_control_broken_calibration(pair):
    """A realistic bug must be caught by the same audit: calibrating to the sensitivity of a plain mean of bounded
    outcomes, (hi - lo)/n, which ignores that one record changes a whole fold's models (and the weights B_π)."""
    est, f0, f1, gap, m = pair
    broken = ((BOUNDS[1] - BOUNDS[0]) / N) / m.mu1_
    mech = lambda tau, size, rng: tau + broken * rng.standard_normal(size)
    res = audit_mechanism(mech, f0[0], f1[0], n_runs=100_000, delta=DELTA, random_state=3)
    claimed = gdp_epsilon(m.mu1_, DELTA)
    print(f"{est} broken: empirical ε ≥ {res.epsilon_lower:.3f} vs claimed {claimed:.3f}")
    assert res.epsilon_lower > claimed
