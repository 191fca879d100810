"Audits of the functional release (dp_causal_nb.functional) with dp_causal_nb.audit on adversarial neighbours."
import math, warnings
import numpy as np
import pytest
from dp_causal_nb.core import PrivacyLeakWarning
from dp_causal_nb.audit import audit_mechanism
from dp_causal_nb.rkhs import AbsoluteLoss, unnormalised_kernel
from dp_causal_nb.functional import PrivateCATEFunction, private_kernel_function, release_shareable_function
from dp_causal_nb.features import fourier_features as _features, fourier_frequencies

EPS, DELTA = 1.0, 1e-5

def _pair(q=8, n=10, seed=0):
    "Neighbours: record 0 (x0, +1) replaced by (corner, -1); q=8, h=1 is where the paper's Lemma 1 fails 39.5x."
    rng = np.random.default_rng(seed)
    X = rng.uniform(0, 1, (n, q)); y = rng.uniform(-1, 1, n); y[0] = 1.0
    X1, y1 = X.copy(), y.copy(); X1[0], y1[0] = np.ones(q), -1.0
    return X, y, X1, y1, np.vstack([X[0], np.ones(q), X[1:4]])

def _fits(noise, q=8, h=1.0, lam=1.0):
    X, y, X1, y1, Q = _pair(q)
    kw = dict(bandwidth=h, lam=lam, loss=AbsoluteLoss(), x_bounds=(np.zeros(q), np.ones(q)), epsilon=EPS, delta=DELTA,
              noise=noise)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        return private_kernel_function(X, y, **kw), private_kernel_function(X1, y1, **kw), Q

def _vectorised_audit(noise, n_runs):
    f0, f1, Q = _fits(noise)
    g0, g1 = f0._fit.predict(Q), f1._fit.predict(Q)
    kx = unnormalised_kernel(Q, Q, 1.0) + f0.jitter * np.eye(len(Q))
    Lk = np.linalg.cholesky(kx); amp = f0.noise_scale * math.exp(0.5 * f0._fit.log_kappa)
    w = np.linalg.solve(kx, g1 - g0)                   # likelihood-ratio direction
    mech = lambda g, size, rng: g + amp * rng.standard_normal((size, len(g))) @ Lk.T
    return audit_mechanism(mech, g0, g1, n_runs=n_runs, delta=DELTA, statistic=lambda Y: Y @ w, random_state=1)

def test_strict_passes_audit():
    assert _vectorised_audit("strict", 200_000).epsilon_lower <= EPS

def test_paper_mode_fails_audit_where_lemma_is_violated():
    assert _vectorised_audit("paper", 200_000).epsilon_lower > EPS

@pytest.mark.slow      # 8 000 fresh function objects, each drawing its own noise in two rounds: about a minute
def test_strict_audit_with_real_objects():
    "Non-vectorised: each run is a fresh PrivateCATEFunction (its own incremental draws), queried in two rounds."
    f0, f1, Q = _fits("strict")
    def mech(fit, rng):
        f = PrivateCATEFunction(fit, f0.noise_scale, x_bounds=f0.x_bounds, random_state=rng)
        return np.concatenate([f(Q[:2]), f(Q[2:])])
    res = audit_mechanism(mech, f0._fit, f1._fit, n_runs=4000, delta=DELTA, batch=False, random_state=2, progress=False)
    assert res.epsilon_lower <= EPS

def test_shareable_release_audit():
    "Gaussian mechanism on the RFF parameter: adversarial neighbours, vectorised on the parameter's noise."
    q = 2; X, y, X1, y1, _ = _pair(q, n=12)
    kw = dict(bandwidth=1.0, lam=1.0, loss=AbsoluteLoss(), x_bounds=(np.zeros(q), np.ones(q)), epsilon=EPS,
              delta=DELTA, n_components=30, feature_seed=3)
    s0 = release_shareable_function(X, y, **(kw | dict(epsilon=np.inf)))
    s1 = release_shareable_function(X1, y1, **(kw | dict(epsilon=np.inf)))
    sp = release_shareable_function(X, y, random_state=0, **kw)
    amp = sp.info["sigma"] * math.exp(0.5 * math.log((math.sqrt(2 * math.pi) * 1.0) ** -q))
    mech = lambda c, size, rng: c + amp * rng.standard_normal((size, len(c)))
    res = audit_mechanism(mech, s0.coef, s1.coef, n_runs=200_000, delta=DELTA, random_state=4)
    assert res.epsilon_lower <= EPS


# --- the release path that matters: squared loss, R-learner weights, weighted constant M, noise="proof" -------------
def _r_learner_pair(n_search=300):
    "Deterministic search for a near-tight in-bounds R-learner neighbour pair (q=1, n=3, λ≈17, h≈2.67)."
    from dp_causal_nb.rkhs import fit_kernel_regression, SquaredLoss, rkhs_distance, rkhs_sensitivity
    from dp_causal_nb.functional import stage2_constants
    rng = np.random.default_rng(0); R, kp, q, n, lam, h = 1.0, 0.1, 1, 3, 17.0, 2.67
    c = stage2_constants("r", (0.0, R), kp, lam=lam, bandwidth=h, q=q)
    D = rkhs_sensitivity(lipschitz=c["weighted_lipschitz"], lam=lam, n=n, bandwidth=h, q=q)
    def rec(k):
        x = rng.uniform(0, 1, (k, q)); pi = rng.choice([kp, 1 - kp, 0.5], k); a = rng.integers(0, 2, k)
        res = rng.choice([-R, R], k) * np.where(rng.uniform(size=k) < 0.5, 1.0, rng.uniform(size=k))
        return x, (a - pi) ** 2, res / (a - pi)
    best = (0.0, None)
    for _ in range(n_search):
        x, rho, phi = rec(n); xr, rr, pr = rec(1)
        x2, rho2, phi2 = x.copy(), rho.copy(), phi.copy(); x2[0], rho2[0], phi2[0] = xr[0], rr[0], pr[0]
        kw = dict(bandwidth=h, lam=lam, loss=SquaredLoss(c["loss_range"]), rho_max=c["rho_max"])
        ratio = rkhs_distance(fit_kernel_regression(x, phi, weights=rho, **kw),
                              fit_kernel_regression(x2, phi2, weights=rho2, **kw)) / D
        if ratio > best[0]: best = (ratio, (x, rho, phi, x2, rho2, phi2))
    return best, c, dict(q=q, lam=lam, h=h)

def _squared_path_audit(scale=1.0, n_runs=200_000):
    from dp_causal_nb.rkhs import SquaredLoss
    (ratio, (x, rho, phi, x2, rho2, phi2)), c, p = _r_learner_pair()
    kw = dict(bandwidth=p["h"], lam=p["lam"], loss=SquaredLoss(c["loss_range"]), x_bounds=(np.zeros(1), np.ones(1)),
              epsilon=EPS, delta=DELTA, rho_max=c["rho_max"], weighted_lipschitz=c["weighted_lipschitz"], noise="proof")
    f0 = private_kernel_function(x, phi, weights=rho, **kw); f1 = private_kernel_function(x2, phi2, weights=rho2, **kw)
    Q = np.unique(np.vstack([x, x2]), axis=0)              # all centres: the whitened sensitivity is ||f_D - f_D'||_H
    g0, g1 = f0._fit.predict(Q), f1._fit.predict(Q)
    kx = unnormalised_kernel(Q, Q, p["h"]) + f0.jitter * np.eye(len(Q))
    Lk = np.linalg.cholesky(kx); amp = scale * f0.noise_scale * math.exp(0.5 * f0._fit.log_kappa)
    w = np.linalg.solve(kx, g1 - g0)
    mech = lambda g, size, rng: g + amp * rng.standard_normal((size, len(g))) @ Lk.T
    res = audit_mechanism(mech, g0, g1, n_runs=n_runs, delta=DELTA, statistic=lambda Y: Y @ w, random_state=5)
    return res, ratio, math.sqrt((g1 - g0) @ w) / amp

def test_proof_mode_squared_loss_r_learner_audit_with_negative_control():
    "noise='proof' on a near-tight R-learner pair passes; the same release with r × 0.1 is caught."
    res, ratio, mu = _squared_path_audit(1.0)
    assert ratio > 0.85                              # the pair is nearly tight for the weighted constant M
    assert res.epsilon_lower <= EPS
    bad, _, mu_bad = _squared_path_audit(0.1)
    assert bad.epsilon_lower > EPS                   # negative control: 10x too little noise is detected
