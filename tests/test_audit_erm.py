"""Audits of dp_causal_nb.erm (output and objective perturbation) with the library's auditor on adversarial
replace-one neighbours: the replaced record sits at the corner of the feature domain and its label (outcome) is
flipped to the opposite extreme. Each claimed ε must not be refuted; broken-on-purpose controls must be."""
import numpy as np, pytest
from dp_causal_nb.erm import (solve_logistic, solve_ridge, erm_sensitivity, ridge_lipschitz, output_perturbation_noise,
                              objective_perturbation_params, NoiseSpec, DPLogisticRegression,
                              perturb_output, objective_plan, objective_release, OBJECTIVE_FP_SHARE)
from dp_causal_nb.features import StandardizeToBounds
from dp_causal_nb.core import reproducible_noise
from dp_causal_nb.secure_noise import noise_rng
from dp_causal_nb.audit import audit_mechanism, continuous_reference_noise

EPS = (0.5, 1.0, 4.0)

def corner_pair(n=10, seed=0, label=(1.0, 0.0)):
    "1-d features φ = x ∈ [-1, 1] (R = 1, no bias); record 0 at the corner x = 1 with label label[0] in D0, label[1] in D1."
    rng = np.random.default_rng(seed)
    x = rng.uniform(-1, 1, n); y = (rng.uniform(size=n) < 0.5).astype(float)
    x[0] = 1.0; y[0] = label[0]; y1 = y.copy(); y1[0] = label[1]
    return x[:, None], y, y1

def output_mech(theta0, theta1, spec):
    thetas = {0: theta0, 1: theta1}
    return lambda which, size, rng: perturb_output(thetas[which], spec, rng, size)

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

def gaussian_plan(eps, delta, n, d, lam, sigma_factor=1.0):
    "Theorem 3's public plan; sigma_factor < 1 under-states σ (a broken control)."
    plan = objective_plan(eps, delta, n=n, d=d, lam=lam, calibrate=lambda e1, d1: objective_perturbation_params(e1, d1, n=n, lam=lam))
    noise = plan.params.noise._replace(scale=plan.params.noise.scale * sigma_factor)
    return plan._replace(params=plan.params._replace(noise=noise))

def objective_mech(Phi, ys, eps, delta, lam, G_factor=1.0):
    """δ > 0: the library's release (Theorem 3: fine Gaussian b, certified solve, offset grid). δ = 0: Theorem 2 in
    exact arithmetic (continuous b; no release uses it, the estimators switch to output perturbation at δ = 0)."""
    n = len(Phi)
    if delta > 0:
        plan = gaussian_plan(eps, delta, n, Phi.shape[1], lam, G_factor)
        return lambda which, rng: objective_release(Phi, ys[which], None, plan, rng)
    op = objective_perturbation_params(eps, delta, n=n, lam=lam)
    spec = NoiseSpec(op.noise.kind, op.noise.scale * G_factor)
    def mech(which, rng):
        return solve_logistic(Phi, ys[which], lam + op.Delta, linear=continuous_reference_noise(spec.kind, spec.scale, Phi.shape[1], rng) / n)[0]
    return mech

@pytest.mark.parametrize("eps", EPS)
def test_objective_perturbation_audit_pure(eps):
    Phi, y0, y1 = corner_pair(10)
    res = audit_mechanism(objective_mech(Phi, {0: y0, 1: y1}, eps, 0.0, 0.05), 0, 1, n_runs=3000, batch=False,
                          random_state=3, progress=False)
    print(eps, res)
    assert res.epsilon_lower <= eps

# Gaussian objective perturbation is audited at δ = 0.05 (σ recomputed for that δ), where a few thousand runs give the
# auditor power; at δ = 1e-5 it cannot see the tail events and returned 0 even for broken mechanisms.
# On the label-flip pair b(θ; D') − b(θ; D) = φ_j is constant and the Jacobians are equal, so the output's privacy
# curve on this pair is *exactly* that of a Gaussian shift with μ = ‖φ_j‖/σ = 1/σ: gdp_epsilon(1/σ, δ) is the true ε
# on this pair, the ceiling of any sound audit (the tight calibration is conservative here: μ = 0.12 at ε = 1).
GAUSS_DELTA = 0.05

def _flip_pair_true_eps(eps, sigma_factor):
    from dp_causal_nb.mechanisms import gdp_epsilon
    sigma = gaussian_plan(eps, GAUSS_DELTA, 10, 1, 0.05, sigma_factor).params.noise.scale
    return float(gdp_epsilon(1.0 / sigma, GAUSS_DELTA))

@pytest.mark.slow      # 2 000 certified releases per neighbour and ε (the exact sampler per release): ~30 s each
@pytest.mark.parametrize("eps", EPS)
def test_objective_perturbation_audit_gaussian(eps):
    Phi, y0, y1 = corner_pair(10)
    res = audit_mechanism(objective_mech(Phi, {0: y0, 1: y1}, eps, GAUSS_DELTA, 0.05), 0, 1, n_runs=2000, batch=False,
                          delta=GAUSS_DELTA, random_state=4, progress=False)
    print(eps, res, "true ε on this pair:", _flip_pair_true_eps(eps, 1.0))
    assert res.epsilon_lower <= eps
    assert res.epsilon_lower <= _flip_pair_true_eps(eps, 1.0) + OBJECTIVE_FP_SHARE * eps   # + the gap's grid release

@pytest.mark.slow      # 4 000 certified releases per neighbour
@pytest.mark.parametrize("eps,sigma_factor", [(1.0, 1 / 16), (4.0, 1 / 8)])
def test_objective_perturbation_gaussian_broken_control(eps, sigma_factor):
    """σ under-stated (σ/16 at ε = 1: true ε 4.07 on this pair; σ/8 at ε = 4: true ε 18.1) must be caught at δ = 0.05.
    σ/4 at ε = 1 is *not* a violation on this pair (true ε 0.45: the calibration's slack; no auditor could catch it);
    σ/4 at ε = 4 is (true ε 5.94) but the auditor only reaches 4.16 (6 000 runs) / 4.00 (10 000 runs): too marginal."""
    assert _flip_pair_true_eps(eps, sigma_factor) > eps
    Phi, y0, y1 = corner_pair(10)
    res = audit_mechanism(objective_mech(Phi, {0: y0, 1: y1}, eps, GAUSS_DELTA, 0.05, G_factor=sigma_factor), 0, 1,
                          n_runs=4000, batch=False, delta=GAUSS_DELTA, random_state=4, progress=False)
    print(eps, sigma_factor, res, "true ε on this pair:", _flip_pair_true_eps(eps, sigma_factor))
    assert eps < res.epsilon_lower <= _flip_pair_true_eps(eps, sigma_factor)

@pytest.mark.parametrize("offset,broken", [(-3.0, False), (2.5, False), (-3.0, True)])
def test_offset_output_perturbation_audit(offset, broken):
    """Output perturbation of the model σ(θφ + o) with a public offset o ≠ 0, on the corner pair: the sensitivity Δ₂
    is unchanged (|ℓ'| ≤ 1 holds for ℓ(z + o)) and the minimiser moves by about half of it (near-tight, as without an
    offset); the release at Δ₂ is not refuted, a control calibrated to Δ₂/4 must be caught."""
    n, lam, eps = 10, 5.0, 1.0
    Phi, y0, y1 = corner_pair(n)
    t0, t1 = (solve_logistic(Phi, y, lam, offset=offset)[0] for y in (y0, y1))
    sens = erm_sensitivity(n, lam)
    assert 0.4 * sens <= np.linalg.norm(t0 - t1) <= sens
    spec = output_perturbation_noise(eps, 0.0, sens / 4 if broken else sens)
    res = audit_mechanism(output_mech(t0, t1, spec), 0, 1, n_runs=200_000, random_state=9)
    print(offset, broken, res)
    assert (res.epsilon_lower > eps) if broken else (res.epsilon_lower <= eps)

@pytest.mark.parametrize("offset,G_factor", [(-3.0, 1.0), (-3.0, 1 / 8)])
def test_offset_objective_perturbation_audit(offset, G_factor):
    """Objective perturbation (Theorem 2, exact arithmetic, pure ε = 1) with a public offset on the corner pair: the
    calibration without the offset holds; the gradient sensitivity under-stated 8-fold must be caught."""
    Phi, ys = corner_pair(10)[0], dict(zip((0, 1), corner_pair(10)[1:]))
    n, lam = 10, 0.05
    op = objective_perturbation_params(1.0, 0.0, n=n, lam=lam)
    spec = NoiseSpec(op.noise.kind, op.noise.scale * G_factor)
    def mech(which, rng):
        b = continuous_reference_noise(spec.kind, spec.scale, 1, rng)
        return solve_logistic(Phi, ys[which], lam + op.Delta, linear=b / n, offset=offset)[0]
    res = audit_mechanism(mech, 0, 1, n_runs=3000, batch=False, random_state=10, progress=False)
    print(offset, G_factor, res)
    assert (res.epsilon_lower > 1.0) if G_factor < 1 else (res.epsilon_lower <= 1.0)

def orthogonal_pair(n=4, seed=7):
    "2-d features in the unit disc; record 0 is φ = (1, 0), y = 1 in D0 and φ' = (0, 1), y' = 0 in D1 (Jacobian term ≠ 0)."
    rng = np.random.default_rng(seed)
    P = rng.uniform(-1, 1, (n, 2)) / np.sqrt(2); y = (rng.uniform(size=n) < 0.5).astype(float)
    P[0], y[0] = (1.0, 0.0), 1.0
    P_nb, y_nb = P.copy(), y.copy(); P_nb[0], y_nb[0] = (0.0, 1.0), 0.0
    return (P, y), (P_nb, y_nb)

@pytest.mark.parametrize("eps", (1.0, 4.0))
def test_objective_perturbation_audit_orthogonal(eps):
    """A pair whose replaced feature vector changes (φ_j ⊥ φ'_j), so the Jacobian term of the privacy loss is exercised.
    Black-box power is low here (0.00 at ε = 0.5 and 1); the sharp check of the Jacobian term is the exact supremum of
    the privacy loss over θ in nbs/04_dp_erm.ipynb, which catches a Jacobian-ignoring control."""
    (P, y), (P_nb, y_nb) = orthogonal_pair()
    n, lam = len(y), 0.05
    op = objective_perturbation_params(eps, 0.0, n=n, lam=lam)
    data = {0: (P, y), 1: (P_nb, y_nb)}
    def mech(which, rng):
        P, y = data[which]
        return solve_logistic(P, y, lam + op.Delta, linear=continuous_reference_noise(op.noise.kind, op.noise.scale, 2, rng) / n)[0]
    res = audit_mechanism(mech, 0, 1, n_runs=2000, batch=False, random_state=8, progress=False)
    print(eps, res)
    assert res.epsilon_lower <= eps

def test_objective_perturbation_broken_control():
    "Objective perturbation with the gradient sensitivity under-stated 8-fold must be caught."
    Phi, y0, y1 = corner_pair(10)
    res = audit_mechanism(objective_mech(Phi, {0: y0, 1: y1}, 1.0, 0.0, 0.05, G_factor=1 / 8), 0, 1, n_runs=3000,
                          batch=False, random_state=5, progress=False)
    assert res.epsilon_lower > 1.0

@pytest.mark.parametrize("offset", [0.0, -3.0])
def test_estimator_end_to_end_audit(offset):
    "The public estimator (default settings; with and without a public offset) on the corner pair, ε = 1."
    X, y0, y1 = corner_pair(10)
    fm = StandardizeToBounds(x_bounds=(-1, 1), bias=False)
    ys = {0: y0, 1: y1}
    from dp_causal_nb.accounting import PrivacyAccountant     # a fresh ledger per run: the audit is about the mechanism
    mech = lambda which, rng: DPLogisticRegression(epsilon=1.0, lam=0.05, feature_map=fm, random_state=rng, offset=offset,
                                                   accountant=PrivacyAccountant()).fit(X, ys[which]).coef_
    res = audit_mechanism(mech, 0, 1, n_runs=1000, batch=False, random_state=6, progress=False)
    assert res.epsilon_lower <= 1.0


def _logit_data(n=200, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, (n, 2)); return X, (rng.uniform(size=n) < 0.5).astype(int)

def test_clone_charges_original_accountant():
    """sklearn.base.clone (used by GridSearchCV, cross_val_score, …) deep-copies parameters; the clone's fit must still
    charge the caller's accountant, or spends would vanish (needs PrivacyAccountant.__deepcopy__ to return self)."""
    from sklearn.base import clone
    from dp_causal_nb.accounting import PrivacyAccountant
    from dp_causal_nb.core import BudgetError
    X, y = _logit_data()
    acc = PrivacyAccountant(epsilon=1.0)
    m = DPLogisticRegression(epsilon=0.4, x_bounds=(-1, 1), accountant=acc, random_state=0)
    c = clone(m).fit(X, y)
    assert c.accountant is acc and len(acc.ledger) == 1 and acc.spent[0] == pytest.approx(0.4)
    clone(m).fit(X, y)
    with pytest.raises(BudgetError):
        clone(m).fit(X, y)                                            # 1.2 > 1: the third clone is refused
    assert acc.spent[0] == pytest.approx(0.8)

@pytest.mark.parametrize("kind", ["logistic-objective", "logistic-output", "ridge"])
def test_refit_budget_error_keeps_state(kind):
    "A refit that hits BudgetError raises and leaves every fitted attribute unchanged."
    from dp_causal_nb.accounting import PrivacyAccountant
    from dp_causal_nb.core import BudgetError
    from dp_causal_nb.erm import DPRidgeRegression
    X, y = _logit_data()
    acc = PrivacyAccountant(epsilon=1.0, delta=1e-5)
    if kind == "ridge":
        m = DPRidgeRegression(epsilon=0.6, delta=1e-6, x_bounds=(-1, 1), outcome_bounds=(0, 1), accountant=acc, random_state=0)
    else:
        m = DPLogisticRegression(epsilon=0.6, delta=1e-6, method=kind.split("-")[1], x_bounds=(-1, 1), accountant=acc, random_state=0)
    m.fit(X, y)
    before = {k: v for k, v in vars(m).items() if k.endswith("_")}
    coef = m.coef_.copy()
    X2, y2 = _logit_data(150, seed=1)
    with pytest.raises(BudgetError):
        m.set_params(x_bounds=(-2, 2), lam=0.5).fit(X2, y2)
    after = {k: v for k, v in vars(m).items() if k.endswith("_")}
    assert after.keys() == before.keys() and all(after[k] is before[k] for k in before)
    np.testing.assert_array_equal(m.coef_, coef)
    assert m.epsilon_spent_ == 0.6 and len(acc.ledger) == 1

def test_sklearn_estimator_types():
    from sklearn.base import is_classifier, is_regressor
    from dp_causal_nb.erm import DPRidgeRegression
    assert is_classifier(DPLogisticRegression(epsilon=1.0)) and not is_regressor(DPLogisticRegression(epsilon=1.0))
    assert is_regressor(DPRidgeRegression(epsilon=1.0)) and not is_classifier(DPRidgeRegression(epsilon=1.0))

@pytest.mark.parametrize("tol", [1e-2, 1e-7, 0.0, -1.0, np.inf])
def test_solver_tolerance_validated(tol):
    "An inexact minimiser must never be released under the full ε claim: tol is restricted to (0, 1e-8]."
    X, y = _logit_data()
    with pytest.raises(ValueError, match=r"tol must"):
        DPLogisticRegression(epsilon=1.0, x_bounds=(-1, 1), tol=tol, random_state=0).fit(X, y)
    DPLogisticRegression(epsilon=1.0, x_bounds=(-1, 1), tol=1e-8, random_state=0).fit(X, y)


# ---------------------------------------------------------------------------------------------------------------------
# Bounds inferred from the data cannot certify (ε, δ). The two neighbour pairs: one record moves far away, x₀ → 1e6
# (logistic) and y₀ → 100 (ridge). With bounds inferred from the data and a certified ε = 1, the audits below refute
# that claim (measured with exactly these constructions and seeds: logistic ε ≥ 3.46 (600 runs), 3.85 (1 000),
# 4.52 (2 000); ridge ε ≥ 9.48 (200 000 runs, δ = 1e-5)). So: no bounds → ValueError before anything is charged;
# opt-in → reported as NOT DP (ε = ∞; the audit still shows why); declared bounds → the same pairs pass.
import warnings
from dp_causal_nb.core import PrivacyLeakWarning, BudgetError
from dp_causal_nb.accounting import PrivacyAccountant, default_accountant, set_default_accountant
from dp_causal_nb.erm import DPRidgeRegression
from dp_causal_nb.user_models import private_guarantee, charge_private_model

N_PAIR = 200
def logistic_pair():
    X = np.linspace(0, 1, N_PAIR)[:, None]; y = (np.arange(N_PAIR) % 2).astype(int)
    X1 = X.copy(); X1[0, 0] = 1e6
    return (X, y), (X1, y)

def ridge_pair():
    X = np.linspace(0, 1, N_PAIR)[:, None]; y = np.linspace(0, 1, N_PAIR)
    y1 = y.copy(); y1[0] = 100.0
    return (X, y), (X, y1)

def _quiet_fit(est, D):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        return est.fit(*D)

def test_default_path_refuses_both_pairs():
    acc = default_accountant(); n0 = len(acc.ledger)
    for D in logistic_pair():
        with pytest.raises(ValueError, match=r"declare x_bounds=\(lower, upper\)"):
            DPLogisticRegression(epsilon=1.0).fit(*D)
    for D in ridge_pair():
        with pytest.raises(ValueError, match=r"x_bounds=.* and outcome_bounds=\(lower, upper\)"):
            DPRidgeRegression(epsilon=1.0, delta=1e-5).fit(*D)
        with pytest.raises(ValueError, match=r"declare outcome_bounds"):
            DPRidgeRegression(epsilon=1.0, delta=1e-5, x_bounds=(0, 1)).fit(*D)
    with pytest.raises(ValueError, match=r"declare weight_bound"):
        DPLogisticRegression(epsilon=1.0, x_bounds=(0, 1)).fit(*logistic_pair()[0], sample_weight=np.ones(N_PAIR))
    assert len(acc.ledger) == n0                                       # nothing charged

@pytest.mark.parametrize("kind", ["logistic", "ridge"])
def test_opt_in_path_is_reported_not_dp(kind):
    acc = PrivacyAccountant()
    D = logistic_pair()[1] if kind == "logistic" else ridge_pair()[1]
    est = (DPLogisticRegression(epsilon=1.0, allow_inferred_bounds=True, accountant=acc, random_state=0) if kind == "logistic"
           else DPRidgeRegression(epsilon=1.0, delta=1e-5, allow_inferred_bounds=True, accountant=acc, random_state=0))
    with pytest.warns(PrivacyLeakWarning):
        est.fit(*D)
    assert (est.epsilon_spent_, est.delta_spent_) == (np.inf, 0.0) and "x_bounds" in est.bounds_inferred_
    assert acc.ledger[-1].cost == (np.inf, 0.0) and "NOT DP: bounds inferred from the data" in acc.ledger[-1].label
    eps, dlt, src = private_guarantee(est, return_source=True)
    assert (eps, dlt) == (np.inf, 0.0) and src.startswith("not DP: bounds inferred")
    with pytest.raises(BudgetError):                                   # refused as a private nuisance by any finite budget
        charge_private_model(est, PrivacyAccountant(epsilon=100.0, delta=0.1), label="nuisance")
    finite = PrivacyAccountant(epsilon=100.0, delta=0.1); g = np.random.default_rng(0); state = g.bit_generator.state
    with pytest.raises(BudgetError):                                   # … and refused before any noise is drawn
        _quiet_fit(clone_with(est, accountant=finite, random_state=g), D)
    assert g.bit_generator.state == state and len(finite.ledger) == 0

def clone_with(est, **kw):
    from sklearn.base import clone
    return clone(est).set_params(**kw)

def logistic_mech(**kw):
    def mech(D, rng):
        return _quiet_fit(DPLogisticRegression(epsilon=1.0, delta=1e-5, random_state=rng, accountant=PrivacyAccountant(), **kw), D).coef_
    return mech

def ridge_batched_mech(**kw):
    """DPRidgeRegression(epsilon=1, delta=1e-5, **kw) batched: the exact fit at epsilon=inf plus the ε = 1 fit's noise law
    (checked to reproduce the estimator's output exactly)."""
    cache = {}
    def fitted(D, eps, rs=0):
        return _quiet_fit(DPRidgeRegression(epsilon=eps, delta=1e-5, random_state=rs, accountant=PrivacyAccountant(), **kw), D)
    def mech(D, size, rng):
        if id(D) not in cache:
            with reproducible_noise():
                m1, m0 = fitted(D, 1.0, 7), fitted(D, np.inf)
                np.testing.assert_array_equal(m1.coef_, perturb_output(m0.coef_, m1.noise_, noise_rng(7, "output perturbation")))
            cache[id(D)] = (m0.coef_, m1.noise_)
        th, spec = cache[id(D)]
        return perturb_output(th, spec, rng, size)
    return mech

@pytest.mark.slow      # 1 200 estimator fits (each a certified release)
def test_declared_bounds_pass_audit_logistic():
    "The x₀ → 1e6 pair with declared x_bounds: the outlier is clipped, the claim ε = 1 stands."
    D0, D1 = logistic_pair()
    res = audit_mechanism(logistic_mech(x_bounds=(0, 1)), D0, D1, n_runs=600, batch=False, random_state=9, progress=False)
    print("declared", res)
    assert res.epsilon_lower <= 1.0

@pytest.mark.slow      # 1 200 estimator fits
def test_inferred_bounds_audit_logistic():
    "The same pair with inferred bounds is far from ε = 1 — why such a fit is reported as ε = ∞."
    D0, D1 = logistic_pair()
    res = audit_mechanism(logistic_mech(allow_inferred_bounds=True), D0, D1, n_runs=600, batch=False, random_state=9,
                          progress=False)
    print("inferred", res)
    assert res.epsilon_lower > 1.0

@pytest.mark.parametrize("declared", [True, False])
def test_ridge_pair_audit(declared):
    D0, D1 = ridge_pair()
    kw = dict(x_bounds=(0, 1), outcome_bounds=(0, 1)) if declared else dict(allow_inferred_bounds=True)
    res = audit_mechanism(ridge_batched_mech(**kw), D0, D1, n_runs=200_000, delta=1e-5, random_state=10)
    print("declared" if declared else "inferred", res)
    assert (res.epsilon_lower <= 1.0) if declared else (res.epsilon_lower > 1.0)


# Item 2 of the assignment: the library-wide default accountant.
@pytest.mark.parametrize("kind", ["logistic-objective", "logistic-output", "ridge"])
def test_default_accountant_charged_and_finite_budget_refuses(kind):
    X, y = _logit_data()
    old = set_default_accountant(PrivacyAccountant(epsilon=1.0, delta=1e-5))
    try:
        g = np.random.default_rng(3)
        m = (DPRidgeRegression(epsilon=0.6, delta=1e-6, x_bounds=(-1, 1), outcome_bounds=(0, 1), random_state=g) if kind == "ridge"
             else DPLogisticRegression(epsilon=0.6, delta=1e-6, method=kind.split("-")[1], x_bounds=(-1, 1),
                                       random_state=g))
        m.fit(X, y)
        acc = default_accountant()
        assert m.charged_to_ is acc and len(acc.ledger) == 1 and acc.spent[0] == pytest.approx(0.6)
        before = {k: v for k, v in vars(m).items() if k.endswith("_")}; state = g.bit_generator.state
        with pytest.raises(BudgetError):
            m.fit(X, y)                                                 # 1.2 > 1: refused
        assert g.bit_generator.state == state                           # before any noise
        assert all(vars(m)[k] is v for k, v in before.items()) and len(acc.ledger) == 1
        with pytest.raises(ValueError, match="already charged"):        # no double charge to the default accountant
            charge_private_model(m, acc, label="again")
    finally:
        set_default_accountant(old)


# Item 3: messages carry no count or value; clipping and the solver create no data-dependent event.
def _msg(f):
    with pytest.raises(ValueError) as e:
        f()
    return str(e.value)

def test_messages_do_not_depend_on_counts_or_values():
    X, y = _logit_data(); m = lambda **kw: DPLogisticRegression(x_bounds=(-1, 1), random_state=0, **kw)
    y1, y3 = y.astype(float), y.astype(float); y1[0] = 0.37; y3[:3] = 5.0
    assert _msg(lambda: m().fit(X, y1)) == _msg(lambda: m().fit(X, y3)) and "0.37" not in _msg(lambda: m().fit(X, y1))
    w1, w3 = np.ones(len(y)), np.ones(len(y)); w1[0] = 1.5; w3[:3] = 123.456
    assert _msg(lambda: m(weight_bound=1.0).fit(X, y, sample_weight=w1)) == _msg(lambda: m(weight_bound=1.0).fit(X, y, sample_weight=w3))
    w1[0] = -1.0; w3[:3] = -0.5
    assert _msg(lambda: m(weight_bound=1.0).fit(X, y, sample_weight=w1)) == _msg(lambda: m(weight_bound=1.0).fit(X, y, sample_weight=w3))

@pytest.mark.parametrize("kind", ["logistic", "ridge"])
def test_clipped_neighbour_emits_same_warnings(kind):
    X, y = _logit_data(); Xo, yo = X.copy(), y.astype(float); Xo[0] = (50.0, -7.0); yo[0] = 1.0 if kind == "logistic" else 40.0
    def run(Xd, yd):
        with warnings.catch_warnings(record=True) as ws:
            warnings.simplefilter("always")
            (DPLogisticRegression(epsilon=1.0, x_bounds=(-1, 1), random_state=0) if kind == "logistic"
             else DPRidgeRegression(epsilon=1.0, x_bounds=(-1, 1), outcome_bounds=(0, 1), delta=1e-6, random_state=0)).fit(Xd, yd)
        return [(w.category, str(w.message)) for w in ws]
    assert run(X, y) == run(Xo, yo) == []

def test_solver_returns_on_both_neighbours_at_the_floating_point_floor():
    """Λ = 1e-8, ε = 100, n = 2, d = 21: a line-search Newton (max_iter = 100, absolute tol 1e-10) raises on such
    inputs (floating-point floor above tol); the damped Newton with a proven step bound returns on both neighbours."""
    rng = np.random.default_rng(0)
    for trial in range(30):
        P = rng.normal(size=(2, 21)); P /= np.linalg.norm(P, axis=1, keepdims=True)
        y0 = np.array([1.0, 0.0]); P_nb, y_nb = P.copy(), y0.copy(); P_nb[0] = -P[0]; y_nb[0] = 0.0
        op = objective_perturbation_params(100.0, n=2, lam=1e-8, weight_bound=3.0)
        b = continuous_reference_noise(op.noise.kind, op.noise.scale, 21, np.random.default_rng(trial))
        for PP, yy in ((P, y0), (P_nb, y_nb)):
            th, info = solve_logistic(PP, yy, 1e-8 + op.Delta, np.full(2, 3.0), linear=b / 2, norm_bound=1.0, weight_bound=3.0)
            assert np.isfinite(th).all() and info["grad_norm"] <= info["tol"]
    assert "max_iter" not in DPLogisticRegression(epsilon=1.0).get_params()
