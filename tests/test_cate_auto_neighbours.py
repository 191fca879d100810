"""DPCATE's default release, final='auto' (notebook 08a), on replace-one neighbours: the private constant ĉ (the rule's
mode 'constant'), the shape θ̃ fitted to DR pseudo-outcomes clipped to the public ±C (mode 'function', weight 1, noised
for Δ = 2B_f(C + G)/(λn₂), G = B_f·min(Θ, C/√λ)) and the shape fitted to targets centred on the released ĉ.
What must hold (invariant 4: a release differs between neighbours only through its noise):
* the rule and every public attribute (rule_, lam_, target_clip_, release_info_, attribute names, warnings) depend on
  the public inputs only, and `target_clip_` follows the fit's final stage through refits;
* the un-noised ĉ moves by at most 2M/n₂ (M = R/κ, attained) and θ̃ by at most parameter_sensitivity() (near-tight
  when λ is large);
* an exception never depends on the private data: a radius constraint that binds only to rounding (WeightedRidge
  projects onto the ball), a penalty below LAM_FLOOR·B_f² (refused for every dataset) and a user feature map with a
  non-finite row (ClippedFeatures maps it to 0) behave alike on both neighbours;
* a centred release with inconsistent public parameters (centring without DR targets; a target clip above R/κ) is
  refused for every dataset alike, before any noise is drawn.
Neighbours differ in one second-stage record (same n and random_state: same public split, same declared-private
constant nuisances of tests/_fixtures.py); the function mode is forced as in
`test_audit_cate.test_auto_final_shape_near_tight`."""
import warnings
import numpy as np
import pytest
from scipy import linalg
from dp_causal_nb import cate
from dp_causal_nb.cate import DPCATE
from dp_causal_nb.cate_defaults import default_cate_params as RULE, dr_constant_bound, private_constant
from dp_causal_nb.targets import orthogonal_targets
from dp_causal_nb.accounting import PrivacyAccountant
from _fixtures import YB, Linear, fit_dpcate, shape_design, forced_centred

C = YB[1] - YB[0]


class _NaNAtHalf(Linear):            # a user map with a non-finite row at ONE point inside x_bounds
    def __call__(self, X):
        X = np.atleast_2d(X).astype(float)
        F = X.copy()
        F[np.all(X == 0.5, axis=1)] = np.nan
        return F


@pytest.fixture
def function_mode(monkeypatch):
    def forced(n, d, eps, dlt, yb, split=None):
        return RULE(n, d, 1e9, dlt, yb, split=0.8) | dict(mode="function", ate_share=0.2)
    monkeypatch.setattr(cate, "default_cate_params", forced)


def _fit(X, A, Y, **kw):
    "A fit on the near-tight shape design (tests/_fixtures.py), charged to its own ledger."
    return fit_dpcate(X, A, Y, **shape_design(accountant=PrivacyAccountant(), **kw))


def _outcome(X, A, Y, **kw):
    "What an observer sees of a fit: 'ok' or the exception's type (its message quotes nothing)."
    try:
        _fit(X, A, Y, **kw)
        return "ok"
    except Exception as e: return type(e).__name__


def _records(n, seed=0):
    "n records on [-1, 1]², half treated at random, outcomes uniform on (0, 3)."
    r = np.random.default_rng(seed)
    X = r.uniform(-1, 1, (n, 2))
    T = (r.uniform(size=n) < 0.5).astype(int)
    return X, T, r.uniform(0, 3, n)


# ---------------------------------------------- exceptions do not depend on the data ----------------------------------
def test_radius_binding_only_to_rounding_fits_both_neighbours(function_mode):
    """WeightedRidge.fit decides that the ball ‖θ‖ ≤ Θ binds from the Cholesky solution, then solves ‖(A + νI)⁻¹b‖ = Θ
    by brentq on an eigen-decomposition. When the unconstrained ‖θ‖ lies within rounding of the public Θ
    (= R/B_f, theta_radius='auto') the two norms straddle Θ (nrm(0) < 0): the fit must neither raise on one neighbour
    only nor leave the ball (it projects θ onto the ball). Pair: 40 untreated records, X = |U(-1,1)²| (seed found
    below), Y tuned so that ‖θ_chol‖ > Θ > ‖θ_eig‖; D' = D with one second-stage Y set to 1. Both fit."""
    n, lam = 40, 0.1
    probe = _fit(np.zeros((n, 2)), np.zeros(n), np.zeros(n), lam=lam)
    i2, fm, Theta = probe.split_[1], probe.feature_map_, probe.theta_radius_
    hit = None
    for seed in range(10, 80):
        rng = np.random.default_rng(seed)
        X = np.abs(rng.uniform(-1, 1, (n, 2))); A = np.zeros(n); Y0 = rng.uniform(0.5, 1, n)
        F = fm(X[i2]); m = len(i2); M = (F.T * np.ones(m)) @ F / m + lam * np.eye(2)
        cf = linalg.cho_factor(M); ev, V = np.linalg.eigh(M)
        pi, (m0, m1) = probe.propensity(X[i2]), probe.outcome(X[i2])
        s = (Y0 + 1) / (Y0.max() + 1)
        def norms(t):
            phi, _ = orthogonal_targets((-1 + t * s)[i2], A[i2], pi=pi, mu0=m0, mu1=m1, learner="dr")
            b = F.T @ np.clip(phi, -C, C) / m
            return np.linalg.norm(linalg.cho_solve(cf, b)), np.linalg.norm((V.T @ b) / ev)
        lo, hi = 0.0, float(Y0.max() + 1)
        for _ in range(120):
            mid = (lo + hi) / 2
            lo, hi = (lo, mid) if norms(mid)[0] > Theta else (mid, hi)
        t = lo
        for _ in range(300): t = np.nextafter(t, -1)
        for _ in range(600):
            t = np.nextafter(t, 10); rc, re = norms(t)
            if rc > Theta > re: hit = (X, A, -1 + t * s); break
        if hit is not None: break
    if hit is None: pytest.skip("no rounding window found on this platform")
    X, A, Y = hit
    Y1 = Y.copy(); Y1[i2[0]] = 1.0
    assert _outcome(X, A, Y, lam=lam) == _outcome(X, A, Y1, lam=lam) == "ok"
    th = _fit(X, A, Y, lam=lam).stage_.theta_[1:]
    assert np.linalg.norm(th) <= Theta * (1 + 1e-12)


def test_tiny_lam_behaves_alike_on_neighbours(function_mode):
    """A user lam ≲ 1e-16·B_f²: A_ = FᵀF/n + λI is then not numerically positive definite when every second-stage
    record sits at x = (1, 1) (FᵀF of rank 1), and is when ONE record moves to (1, −1) (rank 2). λ below the public
    floor LAM_FLOOR·B_f² is refused as a parameter error, the same for every dataset (also for final='ridge')."""
    n, lam = 40, 1e-17
    X = np.tile([1.0, 1.0], (n, 1)); A = np.tile([0.0, 1.0], n // 2); Y = np.where(A == 1, 1.0, -1.0)
    i = _fit(X, A, Y, lam=1.0).split_[1][0]
    X1 = X.copy(); X1[i] = [1.0, -1.0]
    assert _outcome(X, A, Y, lam=lam) == _outcome(X1, A, Y, lam=lam)


def test_nonfinite_feature_row_behaves_alike_on_neighbours(function_mode):
    """A user feature_map with a non-finite value at one point of the box: ClippedFeatures clips each row's norm ("a
    wrong declared bound cannot break Δθ") and maps a non-finite row to 0 (a public constant; ‖f‖ ≤ B_f still holds,
    so Δ is unchanged), so a second-stage record at that point fits like any other. D: all records at (1, 1);
    D': one second-stage record at (0.5, 0.5). Same for final='ridge'."""
    n = 40
    X = np.tile([1.0, 1.0], (n, 1)); A = np.tile([0.0, 1.0], n // 2); Y = np.where(A == 1, 1.0, -1.0)
    i = _fit(X, A, Y, lam=1.0).split_[1][0]
    X1 = X.copy(); X1[i] = [0.5, 0.5]
    assert _outcome(X, A, Y, lam=1.0, feature_map=_NaNAtHalf()) == _outcome(X1, A, Y, lam=1.0, feature_map=_NaNAtHalf())


# ---------------------------------------------- sensitivity, public rule, target_clip_ --------------------------------
@pytest.mark.parametrize("lam, radius, learner", [(1e-3, "auto", "r"), (0.1, "auto", "dr"), (0.1, None, "r"),
                                                  (1000.0, "auto", "r"), (1000.0, 0.5, "dr")])
def test_shape_sensitivity_holds(function_mode, lam, radius, learner):
    """‖θ̃(D) − θ̃(D')‖ ≤ parameter_sensitivity() for corner records, arm flips and Y far outside the bounds
    (out_of_bounds='clip'), radius active or not, learner 'r' or 'dr' (the shape always uses the clipped DR targets);
    near-tight (> 0.9) when λ is large."""
    n = 60
    X = np.tile([1.0, 1.0], (n, 1)); A = np.ones(n); Y = np.full(n, 7.0)          # clipped to y_hi
    kw = dict(lam=lam, theta_radius=radius, learner=learner, propensity_clip=0.15)
    e0 = _fit(X, A, Y, **kw); i = e0.split_[1][0]; sens = e0.parameter_sensitivity()
    assert e0.target_clip_ == C
    worst = 0.0
    for x1 in ([1.0, 1.0], [-1.0, -1.0], [3.0, -3.0]):
        for a1 in (0.0, 1.0):
            for y1 in (-9.0, 9.0):
                X1, A1, Y1 = X.copy(), A.copy(), Y.copy(); X1[i], A1[i], Y1[i] = x1, a1, y1
                e1 = _fit(X1, A1, Y1, **kw)
                worst = max(worst, float(np.linalg.norm(e1.stage_.theta_[1:] - e0.stage_.theta_[1:])) / sens)
                assert e1.release_info_ == e0.release_info_ and e1.target_clip_ == e0.target_clip_
    assert worst <= 1.0 + 1e-9
    if lam == 1000.0: assert worst > 0.9


def test_rule_public_and_target_clip_lifecycle():
    """The unpatched rule (n = 1200, d = 2, ε = 4; at ε = 1 the scale-free rule gives this n the constant) is in mode
    'function' with target_clip = R and λ from (n, d, ε, δ, bounds) only: two different datasets of the same size get
    identical rule_, lam_, target_clip_, release_info_; refits with ε = ∞ / final='ridge' reset target_clip_ to None and
    the sensitivity to the learner's."""
    n, xb = 1200, ([0.0, 0.0], [1.0, 1.0])
    def data(seed):
        rng = np.random.default_rng(seed); X = rng.uniform(0, 1, (n, 2)); A = rng.integers(0, 2, n).astype(float)
        return X, A, np.clip(X[:, 0] * A + 0.3 * rng.normal(size=n), -1, 1)
    kw = dict(epsilon=4.0, x_bounds=xb, outcome_bounds=YB, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        e0, e1 = [DPCATE(accountant=PrivacyAccountant(), **kw).fit(Y, A, X=X) for X, A, Y in (data(1), data(2))]
        assert e0.rule_ == e1.rule_ == RULE(n, 2, 4.0, 1e-5, YB)
        assert e0.rule_["mode"] == "function" and e0.target_clip_ == e1.target_clip_ == C
        assert e0.lam_ == e1.lam_ and e0.release_info_ == e1.release_info_
        s_auto = e0.parameter_sensitivity()
        X, A, Y = data(1)
        e0.set_params(epsilon=np.inf).fit(Y, A, X=X); assert e0.target_clip_ is None
        e0.set_params(epsilon=4.0, final="ridge").fit(Y, A, X=X); assert e0.target_clip_ is None
        assert e0.parameter_sensitivity() != s_auto
        e0.set_params(final="auto").fit(Y, A, X=X)
        assert e0.target_clip_ == C and e0.parameter_sensitivity() == s_auto


# ---------------------------------------------- the private constant ĉ and the public rule ----------------------------
def test_auto_rule_reads_only_public_inputs():
    "default_cate_params is a function of (n, d, ε, δ, bounds, split): the mode can flip only with public inputs."
    a = RULE(2000, 2, 1.0, 1e-5, (0, 3))
    b = RULE(2000, 2, 1.0, 1e-5, (0, 3))
    assert a == b and a["mode"] in ("constant", "function")


def test_private_constant_sensitivity_tight_and_respected():
    "|φ_DR| ≤ R/κ is attained (tight), and the clipped mean moves by at most 2M/n₂ between extreme neighbours."
    R, k = 3.0, 0.15; M = dr_constant_bound((0, 3), k)
    # extreme records: (Y, A, π, μ0, μ1) giving +M and −M
    hi = orthogonal_targets(np.array([3.0]), np.array([1.0]), pi=np.array([k]), mu0=np.array([0.0]),
                            mu1=np.array([0.0]), learner="dr")[0][0]
    lo = orthogonal_targets(np.array([0.0]), np.array([1.0]), pi=np.array([k]), mu0=np.array([3.0]),
                            mu1=np.array([3.0]), learner="dr")[0][0]
    assert np.isclose(hi, M) and np.isclose(lo, -M) and np.isclose(M, R / k)
    rest = np.random.default_rng(0).uniform(-M, M, 99)
    v1, s = private_constant(np.r_[rest, 1e9], bound=M, epsilon=1.0, delta=1e-5, rng=np.random.default_rng(1))
    v2, _ = private_constant(np.r_[rest, -1e9], bound=M, epsilon=1.0, delta=1e-5, rng=np.random.default_rng(1))
    from dp_causal_nb.secure_noise import plan_gaussian
    step = plan_gaussian(s, 2 * M / 100).step          # the same noise draw; the grid rounds each mean once
    assert abs(v1 - v2) <= 2 * M / 100 * (1 + 1e-12) + step


def _dpcate_fingerprint(Y, T, X, **kw):
    m = DPCATE(epsilon=1.0, delta=1e-5, x_bounds=(-1, 1), outcome_bounds=(0, 3), out_of_bounds="clip",
               accountant=PrivacyAccountant(), random_state=0, **kw)
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always"); m.fit(Y, T, X=X)
        q = np.random.default_rng(5).uniform(-1, 1, (7, 2))
        s = m.summary(q); m.effect_interval(q); m.ate_interval(q)
    names = sorted(k for k in vars(m) if k.endswith("_"))
    public = {k: repr(getattr(m, k)) for k in ("rule_", "lam_", "propensity_clip_", "n_stage2_", "constant_bound_", "final_")}
    info = {k: (v if k not in ("sensitivity", "sigma", "sensitivity_constant", "sigma_constant") else repr(v))
            for k, v in m.release_info_.items()}
    return names, public, repr(info), sorted({r.category.__name__ for r in rec}), np.shape(m.theta_private_), \
        s.label, s.n_points, bool(s.note)


@pytest.mark.parametrize("n", [200, 2000])          # the rule's mode 'constant' and mode 'function' at d = 2
def test_dpcate_auto_structure_same_on_extreme_neighbours(n):
    "final='auto': attribute names, rule_, release_info_ and warnings are identical on extreme neighbours."
    X, T, Y = _records(n)
    base = _dpcate_fingerprint(Y, T, X)
    for y, t, x in [(3.0, 1, (1.0, 1.0)), (0.0, 0, (-1.0, -1.0)), (1e300, 1, (5.0, -5.0))]:
        Y2, T2, X2 = Y.copy(), T.copy(), X.copy(); Y2[0], T2[0], X2[0] = y, t, x
        assert _dpcate_fingerprint(Y2, T2, X2) == base


@pytest.mark.parametrize("n,kappa,split", [(200, 0.45, None), (200, 0.02, 0.9), (2000, 0.45, 0.3)])
def test_dpcate_auto_constant_moves_within_its_sensitivity(n, kappa, split):
    "Extreme second-stage neighbours (same seed, same nuisances): the un-noised ĉ moves by at most 2M/n₂ (M = R/κ)."
    X, T, Y = _records(n)
    def fit(Y, T):
        m = DPCATE(epsilon=1.0, delta=1e-5, x_bounds=(-1, 1), outcome_bounds=(0, 3), propensity_clip=kappa, split=split,
                   out_of_bounds="clip", accountant=PrivacyAccountant(), random_state=1)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore"); return m.fit(Y, T, X=X)
    m0 = fit(Y, T); i = int(m0.split_[1][0]); bound = 2 * m0.constant_bound_ / m0.n_stage2_
    assert np.isclose(m0.release_info_["sensitivity_constant"], bound) and np.isclose(m0.constant_bound_, 3 / kappa)
    for y1, t1, y2, t2 in [(3, 1, 0, 1), (3, 0, 0, 0), (3, 1, 0, 0)]:
        Ya, Ta, Yb, Tb = Y.copy(), T.copy(), Y.copy(), T.copy(); Ya[i], Ta[i], Yb[i], Tb[i] = y1, t1, y2, t2
        assert abs(fit(Ya, Ta).stage_.theta_[0] - fit(Yb, Tb).stage_.theta_[0]) <= bound * (1 + 1e-9)


# ---------------------------------------------- the centred shape: inconsistent public parameters ---------------------
def test_centring_without_dr_targets_is_refused(monkeypatch):
    "`center_targets` without `shape_learner='dr'` would publish the un-noised ĉ: refused for every dataset alike."
    monkeypatch.setattr(cate, "default_cate_params", forced_centred(RULE, shape_learner="r"))
    X, A, Y = np.tile([1.0, 1.0], (60, 1)), np.ones(60), np.full(60, YB[1])
    with pytest.raises(ValueError, match="center_targets needs shape_learner='dr'"):
        fit_dpcate(X, A, Y, **shape_design(lam=1000.0, propensity_clip=0.15))


def test_centred_clip_above_R_over_kappa_is_refused(monkeypatch):
    """Δ_shape bounds a target by min(R/κ, C) while a centred target can reach R/κ + R: a centred release with
    target_clip C > R/κ is refused for every dataset alike (a near-tight pair would exceed parameter_sensitivity());
    the shipped level C = R fits."""
    monkeypatch.setattr(cate, "default_cate_params", forced_centred(RULE, target_clip=100 * C))
    X, A, Y = np.tile([1.0, 1.0], (60, 1)), np.ones(60), np.full(60, YB[1])
    kw = shape_design(lam=1000.0, propensity_clip=0.15)
    with pytest.raises(ValueError, match="exceeds R/κ"):
        fit_dpcate(X, A, Y, **kw)
    monkeypatch.setattr(cate, "default_cate_params", forced_centred(RULE, target_clip=C))
    e = fit_dpcate(X, A, Y, **kw)
    assert e.stage_.noised == 1 and e.target_clip_ == C
