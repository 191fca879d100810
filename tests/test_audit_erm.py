"""Audits of dp_causal_nb.erm (output and objective perturbation) with the library's auditor on adversarial
replace-one neighbours: the replaced record sits at the corner of the feature domain and its label (outcome) is
flipped to the opposite extreme. Each claimed ε must not be refuted; broken-on-purpose controls must be."""
import numpy as np, pytest
from dp_causal_nb.erm import (solve_logistic, solve_ridge, erm_sensitivity, ridge_lipschitz, output_perturbation_noise,
                              draw_noise, objective_perturbation_params, NoiseSpec, DPLogisticRegression,
                              StandardizeToBounds)
from dp_causal_nb.audit import audit_mechanism

EPS = (0.5, 1.0, 4.0)

def corner_pair(n=10, seed=0, label=(1.0, 0.0)):
    "1-d features φ = x ∈ [-1, 1] (R = 1, no bias); record 0 at the corner x = 1 with label label[0] in D0, label[1] in D1."
    rng = np.random.default_rng(seed)
    x = rng.uniform(-1, 1, n); y = (rng.uniform(size=n) < 0.5).astype(float)
    x[0] = 1.0; y[0] = label[0]; y1 = y.copy(); y1[0] = label[1]
    return x[:, None], y, y1

def output_mech(theta0, theta1, spec):
    thetas = {0: theta0, 1: theta1}
    return lambda which, size, rng: thetas[which] + draw_noise(spec, len(theta0), size, rng)

@pytest.mark.parametrize("eps", EPS)
@pytest.mark.parametrize("loss,delta", [("logistic", 0.0), ("logistic", 1e-5), ("ridge", 0.0), ("ridge", 1e-5)])
def test_output_perturbation_audit(eps, loss, delta):
    n, lam = 10, 5.0       # large Λ: the minimiser moves by close to the bound (ridge ≈ 0.9·Δ₂, logistic ≈ 0.5·Δ₂)
    if loss == "logistic":
        Phi, y0, y1 = corner_pair(n)
        t0, t1 = solve_logistic(Phi, y0, lam)[0], solve_logistic(Phi, y1, lam)[0]; L = 1.0
    else:
        Phi, y0, y1 = corner_pair(n, label=(1.0, -1.0)); y0 = y0 * 2 - 1; y1[1:] = y0[1:]
        t0, t1 = solve_ridge(Phi, y0, lam)[0], solve_ridge(Phi, y1, lam)[0]; L = ridge_lipschitz(1.0, lam)
    sens = erm_sensitivity(n, lam, lipschitz=L)
    assert np.linalg.norm(t0 - t1) <= sens
    spec = output_perturbation_noise(eps, delta, sens)
    res = audit_mechanism(output_mech(t0, t1, spec), 0, 1, n_runs=200_000, delta=delta, random_state=1)
    print(loss, eps, delta, res)
    assert res.epsilon_lower <= eps

def test_output_perturbation_broken_control():
    "Noise calibrated to a quarter of the sensitivity must be caught."
    n, lam = 10, 5.0
    Phi, y0, y1 = corner_pair(n, label=(1.0, -1.0)); y0 = y0 * 2 - 1; y1[1:] = y0[1:]
    t0, t1 = solve_ridge(Phi, y0, lam)[0], solve_ridge(Phi, y1, lam)[0]
    sens = erm_sensitivity(n, lam, lipschitz=ridge_lipschitz(1.0, lam))
    res = audit_mechanism(output_mech(t0, t1, output_perturbation_noise(1.0, 0.0, sens / 4)), 0, 1,
                          n_runs=200_000, random_state=2)
    assert res.epsilon_lower > 1.0

def objective_mech(Phi, ys, eps, delta, lam, G_factor=1.0):
    n = len(Phi)
    op = objective_perturbation_params(eps, delta, n=n, lam=lam)
    spec = NoiseSpec(op.noise.kind, op.noise.scale * G_factor)
    def mech(which, rng):
        b = draw_noise(spec, Phi.shape[1], random_state=rng)
        return solve_logistic(Phi, ys[which], lam + op.Delta, linear=b / n)[0]
    return mech

@pytest.mark.parametrize("eps", EPS)
def test_objective_perturbation_audit_pure(eps):
    Phi, y0, y1 = corner_pair(10)
    res = audit_mechanism(objective_mech(Phi, {0: y0, 1: y1}, eps, 0.0, 0.05), 0, 1, n_runs=3000, batch=False,
                          random_state=3, progress=False)
    print(eps, res)
    assert res.epsilon_lower <= eps

@pytest.mark.parametrize("eps", EPS)
def test_objective_perturbation_audit_gaussian(eps):
    Phi, y0, y1 = corner_pair(10)
    res = audit_mechanism(objective_mech(Phi, {0: y0, 1: y1}, eps, 1e-5, 0.05), 0, 1, n_runs=2000, batch=False,
                          delta=1e-5, random_state=4, progress=False)
    print(eps, res)
    assert res.epsilon_lower <= eps

def test_objective_perturbation_broken_control():
    "Objective perturbation with the gradient sensitivity under-stated 8-fold must be caught."
    Phi, y0, y1 = corner_pair(10)
    res = audit_mechanism(objective_mech(Phi, {0: y0, 1: y1}, 1.0, 0.0, 0.05, G_factor=1 / 8), 0, 1, n_runs=3000,
                          batch=False, random_state=5, progress=False)
    assert res.epsilon_lower > 1.0

def test_estimator_end_to_end_audit():
    "The public estimator (objective perturbation, default settings) on the corner pair, ε = 1."
    X, y0, y1 = corner_pair(10)
    fm = StandardizeToBounds(x_bounds=(-1, 1), bias=False)
    ys = {0: y0, 1: y1}
    mech = lambda which, rng: DPLogisticRegression(epsilon=1.0, lam=0.05, feature_map=fm, random_state=rng).fit(X, ys[which]).coef_
    res = audit_mechanism(mech, 0, 1, n_runs=1000, batch=False, random_state=6, progress=False)
    assert res.epsilon_lower <= 1.0
