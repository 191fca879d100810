"Audits of the functional release (dp_causal_nb.functional) with dp_causal_nb.audit on adversarial neighbours."
import math, warnings
import numpy as np
from dp_causal_nb.core import PrivacyLeakWarning
from dp_causal_nb.audit import audit_mechanism
from dp_causal_nb.rkhs import AbsoluteLoss, unnormalised_kernel
from dp_causal_nb.functional import (PrivateCATEFunction, private_kernel_function, release_shareable_function,
                                     _features, fourier_frequencies)

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
              delta=DELTA, n_features=30, feature_seed=3)
    s0 = release_shareable_function(X, y, **(kw | dict(epsilon=np.inf)))
    s1 = release_shareable_function(X1, y1, **(kw | dict(epsilon=np.inf)))
    sp = release_shareable_function(X, y, random_state=0, **kw)
    amp = sp.info["sigma"] * math.exp(0.5 * math.log((math.sqrt(2 * math.pi) * 1.0) ** -q))
    mech = lambda c, size, rng: c + amp * rng.standard_normal((size, len(c)))
    res = audit_mechanism(mech, s0.coef, s1.coef, n_runs=200_000, delta=DELTA, random_state=4)
    assert res.epsilon_lower <= EPS
