"""Empirical privacy audits of the foundation mechanisms (dp_causal_nb.mechanisms) with dp_causal_nb.audit.

Every mechanism is audited on adversarial replace-one neighbours (answers exactly one sensitivity apart) and,
as a negative control, with the sensitivity under-declared by a factor 3 (noise scale / 3), which must be caught.
All audits are seeded, so the outcomes are deterministic; the margins below were measured over 20 seeds
(see nbs/03_audit.ipynb).
"""
import time
import numpy as np
import pytest

from dp_causal_nb.audit import audit_mechanism, epsilon_lower_bound, AuditResult
from dp_causal_nb.mechanisms import (gaussian_mechanism, laplace_mechanism, gaussian_sigma, gdp_epsilon,
                                     gdp_sigma)

N_RUNS = 200_000

# the sum of n records in [0, 1]: l1 and l2 sensitivity 1 under replace-one; D1 replaces one record 0 -> 1
D0 = np.zeros(100)
D1 = D0.copy(); D1[0] = 1.0


def gauss(eps, delta, sens, method="analytic"):
    "Batch audit wrapper: `size` copies of f(D), each with its own noise, are `size` independent runs."
    return lambda D, size, rng: gaussian_mechanism(float(D.sum()), sens, eps, delta, size=size, method=method,
                                                   random_state=rng)


def laplace(eps, sens):
    return lambda D, size, rng: laplace_mechanism(float(D.sum()), sens, eps, size=size, random_state=rng)


def audit(mech, delta, seed=0, **kw):
    return audit_mechanism(mech, D0, D1, n_runs=kw.pop("n_runs", N_RUNS), delta=delta, random_state=seed, **kw)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_gaussian_eps1_correct_passes_broken_caught(seed):
    ok = audit(gauss(1.0, 1e-5, 1.0), 1e-5, seed)
    bad = audit(gauss(1.0, 1e-5, 1 / 3), 1e-5, seed)          # sensitivity/3 == sigma/3
    assert isinstance(ok, AuditResult)
    assert ok.epsilon_lower < 1.0, ok
    assert bad.epsilon_lower > 1.0 and bad.violates(1.0), bad


def test_gaussian_classic_eps05():
    ok = audit(gauss(0.5, 1e-5, 1.0, method="classic"), 1e-5)
    bad = audit(gauss(0.5, 1e-5, 1 / 3, method="classic"), 1e-5)
    assert ok.epsilon_lower < 0.5 < bad.epsilon_lower, (ok, bad)


def test_gaussian_vector_output():
    # d = 10 answers whose difference has l2 norm exactly 1 (spread over all coordinates)
    d = 10; f0, f1 = np.zeros(d), np.full(d, 1 / np.sqrt(d))
    mech = lambda s: (lambda f, size, rng: gaussian_mechanism(f, s, 1.0, 1e-5, size=size, random_state=rng))
    ok = audit_mechanism(mech(1.0), f0, f1, n_runs=N_RUNS, delta=1e-5, random_state=0)
    bad = audit_mechanism(mech(1 / 3), f0, f1, n_runs=N_RUNS, delta=1e-5, random_state=0)
    assert ok.epsilon_lower < 1.0 < bad.epsilon_lower, (ok, bad)


def test_laplace_eps1_correct_passes_broken_caught():
    # pure DP: the optimal test attains epsilon exactly, so the audit of the correct mechanism is tight (~0.99);
    # alpha=0.01 keeps the chance that a correct mechanism is flagged <= 1% whatever the random stream.
    ok = audit(laplace(1.0, 1.0), 0.0, alpha=0.01)
    bad = audit(laplace(1.0, 1 / 3), 0.0, alpha=0.01)         # scale/3
    assert ok.epsilon_lower < 1.0, ok
    assert ok.epsilon_lower > 0.9, ok                          # the auditor is nearly tight here
    assert bad.epsilon_lower > 1.0, bad


def test_laplace_vector_l1():
    # l1 sensitivity 1 concentrated on one coordinate (the worst case for the l1 ball), d = 5
    d = 5; f0, f1 = np.zeros(d), np.eye(d)[0]
    mech = lambda s: (lambda f, size, rng: laplace_mechanism(f, s, 1.0, size=size, random_state=rng))
    ok = audit_mechanism(mech(1.0), f0, f1, n_runs=N_RUNS, random_state=0, alpha=0.01)
    bad = audit_mechanism(mech(1 / 3), f0, f1, n_runs=N_RUNS, random_state=0, alpha=0.01)
    assert ok.epsilon_lower < 1.0 < bad.epsilon_lower, (ok, bad)


def test_analytic_gaussian_eps4():
    # sigma = 1.193519 at (4, 1e-6): a regime where the classic formula is invalid
    assert abs(gaussian_sigma(4.0, 1e-6) - 1.193519) < 1e-5
    ok = audit(gauss(4.0, 1e-6, 1.0), 1e-6)
    bad = audit(gauss(4.0, 1e-6, 1 / 3), 1e-6)
    assert ok.epsilon_lower < 4.0 < bad.epsilon_lower, (ok, bad)


def test_gdp_mu1():
    # mu-GDP Gaussian mechanism (sigma = Delta/mu) at mu = 1 is (4.377178, 1e-5)-DP
    eps = gdp_epsilon(1.0, 1e-5)
    assert abs(eps - 4.377178) < 1e-5
    mech = lambda s: (lambda D, size, rng: D.sum() + s * rng.standard_normal(size))
    ok = audit(mech(gdp_sigma(1.0, 1.0)), 1e-5)
    bad = audit(mech(gdp_sigma(1.0, 1.0) / 3), 1e-5)
    assert ok.epsilon_lower < eps < bad.epsilon_lower, (ok, bad)


def test_non_private_hits_ceiling():
    # epsilon = inf: no noise, the two outputs never overlap; the audit reports its ceiling ln(m / ln(2/alpha))
    r = audit(gauss(np.inf, 1e-5, 1.0), 1e-5, n_runs=100_000)
    assert r.fpr == 0.0 and r.fnr == 0.0
    assert r.epsilon_lower == pytest.approx(epsilon_lower_bound(0.0, 0.0, 50_000, 50_000, delta=1e-5))
    assert r.epsilon_lower > 9


@pytest.mark.slow      # 10 000 scalar releases, each drawing the exact sampler's candidate pool: about a minute
def test_non_batch_library_mechanism():
    # the per-run API (as for objective perturbation), here with the library's scalar Gaussian mechanism
    mech = lambda D, rng: gaussian_mechanism(D.sum(), 1 / 3, 1.0, 1e-5, random_state=rng)
    r = audit_mechanism(mech, D0, D1, n_runs=5_000, batch=False, delta=1e-5, random_state=0)
    assert r.epsilon_lower > 1.0, r


def test_runtime_1e5_scalar_runs_in_seconds():
    t = time.perf_counter()
    r = audit(gauss(1.0, 1e-5, 1.0), 1e-5, n_runs=100_000)
    elapsed = time.perf_counter() - t
    assert r.seconds <= elapsed + 1e-6
    assert elapsed < 10.0, elapsed


def test_epsilon_lower_bound_counts():
    assert epsilon_lower_bound(0.0, 0.0, 1000, 1000) > 0                   # zero counts: finite and positive
    assert np.isfinite(epsilon_lower_bound(0.0, 0.0, 1000, 1000))
    assert epsilon_lower_bound(0.3, 0.3, 1000, 1000, delta=0.75) == 0.0     # delta >= 1 - FPR_hi, 1 - FNR_hi
    # more runs with the same rates -> tighter (larger) bound
    assert epsilon_lower_bound(0.01, 0.5, 10_000, 10_000) > epsilon_lower_bound(0.01, 0.5, 1_000, 1_000)


ok_mech = gauss(1.0, 1e-5, 1.0)


@pytest.mark.parametrize("kwargs, exc, match", [
    (dict(n_runs=10), ValueError, "n_runs must be >= 100"),
    (dict(n_runs=1000.0), TypeError, "n_runs must be an int"),
    (dict(alpha=0.0), ValueError, r"alpha must lie in \(0, 1\)"),
    (dict(alpha=1.0), ValueError, r"alpha must lie in \(0, 1\)"),
    (dict(alpha=-0.1), ValueError, "alpha"),
    (dict(delta=1.0), ValueError, r"delta must lie in \[0, 1\)"),
    (dict(delta=-1e-9), ValueError, "delta"),
    (dict(delta=float("nan")), ValueError, "delta must not be NaN"),
    (dict(direction="both"), ValueError, "direction must be"),
])
def test_bad_parameters(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        audit_mechanism(ok_mech, D0, D1, **kwargs)


@pytest.mark.parametrize("mech, batch, match", [
    (lambda D, size, rng: np.zeros(size + 1), True, r"shape \(201,\)"),
    (lambda D, size, rng: np.zeros((size, 2, 3)), True, r"\(size,\) or \(size, d\)"),
    (lambda D, size, rng: 1.0, True, r"shape \(\)"),
    (lambda D, size, rng: np.full(size, np.inf), True, "NaN or infinite"),
    (lambda D, size, rng: np.zeros((size, 1 + int(D[0]))), True, "differ in shape"),
    (lambda D, rng: np.zeros((2, 2)), False, "scalar or a 1-d array"),
])
def test_wrong_mechanism_shapes(mech, batch, match):
    with pytest.raises(ValueError, match=match):
        audit_mechanism(mech, D0, D1, n_runs=200, batch=batch, random_state=0)


def test_not_callable():
    with pytest.raises(TypeError, match="mechanism must be callable"):
        audit_mechanism(None, D0, D1)


@pytest.mark.parametrize("seed", [0, 1])
def test_gaussian_whole_profile_catches_20pct_sigma_error(seed):
    """Sharper check: a Gaussian calibrated for (1, 1e-5) has a known whole privacy profile, so audit it at
    δ = 1e-2, where the auditor is nearly tight, against the exact ε(1e-2) of that calibration (≈ 0.396).
    A σ that is 20 % too small must be caught; the correct σ must not."""
    sigma = gaussian_sigma(1.0, 1e-5)
    eps_at = gdp_epsilon(1.0 / sigma, 1e-2)
    ok = audit(gauss(1.0, 1e-5, 1.0), 1e-2, seed)
    bad = audit(gauss(1.0, 1e-5, 0.8), 1e-2, seed)          # sensitivity*0.8 == sigma*0.8
    assert ok.epsilon_lower <= eps_at, (ok, eps_at)
    assert bad.epsilon_lower > eps_at, (bad, eps_at)
