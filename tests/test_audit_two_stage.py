"""Audits of DP-2ERM (dp_causal_nb.two_stage) with the library's auditor on adversarial replace-one neighbours: a single
treated record at the corner x = 1 with label 1 is replaced by a control at x = -1 with label 0, the balancing weights are
re-solved exactly on both datasets. The claimed ε = 1 must not be refuted — for the release (notebook 04, Theorem 3, at
δ = 0.05 where the auditor has power) and for Theorem T's pure-ε mechanism in exact arithmetic — and the broken controls
(noise calibrated for record-local weights, W = 1 or ½: the weight movement ignored) must be."""
import numpy as np, pytest
from dp_causal_nb.erm import solve_logistic, objective_plan, objective_release
from dp_causal_nb.features import StandardizeToBounds
from dp_causal_nb.weights import BalancingWeights, WeightCertificate
from dp_causal_nb.two_stage import dp2erm_params
from dp_causal_nb.audit import audit_mechanism, continuous_reference_noise

SETTINGS = {"ipw_estimated": dict(propensity_lam=0.01, propensity_clip=0.02),
            "entropy": dict(weight_cap=50.0, ridge=0.02), "mmd": dict(weight_cap=50.0, ridge=0.02, n_components=10)}
N, LAM, RUNS = 30, 0.05, 1000

def pair(method):
    "ipw: treated iff x < 0, except record 0 (treated at x = 1, an extreme propensity); others: record 0 the only treated."
    r = np.random.default_rng(0); X = r.uniform(-1, 1, (N, 1)); T = np.zeros(N, int); T[0] = 1
    if method == "ipw_estimated": T = (X[:, 0] < 0).astype(int); T[0] = 1
    X[0] = 1.0; y = (r.uniform(size=N) < 0.5).astype(float); y[0] = 1.0
    X2, T2, y2 = X.copy(), T.copy(), y.copy(); X2[0] = -1.0; T2[0] = 0; y2[0] = 0.0
    bw = BalancingWeights(method, x_bounds=(-1, 1), **SETTINGS[method])
    (w, c), (w2, _) = bw.compute(T, X), bw.compute(T2, X2); fm = StandardizeToBounds((-1, 1))
    return [(fm.transform(X), y, w), (fm.transform(X2), y2, w2)], c

def mechanism(D, eps, delta, cert):
    "δ > 0: the library's release (Theorem 3 of notebook 04); δ = 0: Theorem T in exact arithmetic (continuous b)."
    W = max(cert.weight_bound, max(w.max() for _, _, w in D))
    if delta > 0:
        plan = objective_plan(eps, delta, n=N, d=2, lam=LAM, weight_bound=W,
                              calibrate=lambda e1, d1: dp2erm_params(e1, d1, n=N, lam=LAM, d=2, certificate=cert))
        return lambda which, rng: objective_release(*D[which], plan, rng, weight_bound=W)
    op = dp2erm_params(eps, delta, n=N, lam=LAM, d=2, certificate=cert)
    def mech(which, rng):
        P, y, w = D[which]
        b = continuous_reference_noise(op.noise.kind, op.noise.scale, 2, rng)
        return solve_logistic(P, y, LAM + op.Delta, w, linear=b / N, norm_bound=1.0, weight_bound=W)[0]
    return mech

@pytest.mark.parametrize("method", list(SETTINGS))
def test_dp2erm_audit_and_broken_control(method):
    D, cert = pair(method)
    ok = audit_mechanism(mechanism(D, 1.0, 0.0, cert), 0, 1, n_runs=RUNS, batch=False, random_state=1, progress=False)
    bad = audit_mechanism(mechanism(D, 1.0, 0.0, WeightCertificate(0.0, 1.0, "naive")), 0, 1, n_runs=RUNS, batch=False,
                          random_state=1, progress=False)
    assert ok.epsilon_lower <= 1.0, ok
    assert bad.epsilon_lower > 1.2, bad        # caught with a margin (the measured S is far above 2)

@pytest.mark.parametrize("method", [m if m == "ipw_estimated" else pytest.param(m, marks=pytest.mark.slow)
                                    for m in SETTINGS])   # entropy, mmd: 20-25 s each of per-run releases
def test_dp2erm_release_audit_and_broken_control(method):
    D, cert = pair(method)
    ok = audit_mechanism(mechanism(D, 1.0, 0.05, cert), 0, 1, n_runs=RUNS, delta=0.05, batch=False, random_state=2,
                         progress=False)
    bad = audit_mechanism(mechanism(D, 1.0, 0.05, WeightCertificate(0.0, 0.5, "naive")), 0, 1, n_runs=RUNS, delta=0.05,
                          batch=False, random_state=2, progress=False)
    assert ok.epsilon_lower <= 1.0, ok
    assert bad.epsilon_lower > 1.0, bad
