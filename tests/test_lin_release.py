"""The private regression adjustment (notebook 10c): neighbours behave alike apart from the noise, both released
statistics stay within their derived sensitivities when computed by the implementation, nothing reachable from a
release holds a record, an un-noised number or a random stream, every refusal on public inputs and every overspend
comes before any charge or draw, the noise comes only from the secure release module, ε = ∞ is the least-squares
coefficient of T in the regression of Y on 1, T and X, and
the interval covers on a quick simulation."""
import itertools, re
import numpy as np
import pytest
from dp_causal_nb.accounting import PrivacyAccountant
from dp_causal_nb.core import BudgetError, reproducible_noise
from dp_causal_nb.dim import dim_statistics
from dp_causal_nb.secure_noise import FP_MARGIN
import dp_causal_nb.lin as lin_mod
from dp_causal_nb.lin import (GRAM_SENSITIVITY, DPLinAdjustment, adjusted_outcomes, gram_statistics, lin_features,
                              lin_release)

OB, XB = (-3.0, 3.0), (-1.0, 1.0)


def _data(n=300, q=3, seed=0, tau=0.3):
    r = np.random.default_rng(seed)
    X, T = r.uniform(-1, 1, (n, q)), r.integers(0, 2, n)
    return np.clip(tau * T + X[:, 0] + 0.5 * X[:, -1] + r.normal(0, 0.6, n), *OB), T, X

def _fit(Y, T, X, acc=None, **kw):
    kw = dict(dict(epsilon=1.0, delta=1e-6, random_state=0), **kw)
    acc = PrivacyAccountant() if acc is None else acc
    return DPLinAdjustment(outcome_bounds=OB, x_bounds=XB, accountant=acc, **kw).fit(Y, T, X=X), acc

_mask = lambda s: re.sub(r"-?\d+(\.\d+)?(e[-+]?\d+)?", "#", s)
_ledger = lambda acc: [(r.label, r.cost) for r in acc.ledger]


def _edge_pairs():
    "Replace-one pairs at the edges: an arm switch at the bounds, an empty arm against one record, an infinite cell."
    Y, T, X = _data(200, seed=1)
    Y1, T1, X1 = Y.copy(), T.copy(), X.copy()
    Y1[0], T1[0], X1[0] = -Y[0] if Y[0] else 3.0, 1 - T[0], -X[0]
    T0 = np.zeros_like(T)
    T0b = T0.copy()
    T0b[0] = 1
    Xi = X.copy()
    Xi[0, 0] = np.inf
    Yb = np.full_like(Y, 3.0)
    Yb1 = Yb.copy()
    Yb1[0] = -3.0
    return [((Y, T, X), (Y1, T1, X1)), ((Y, T0, X), (Y, T0b, X)), ((Y, T, X), (Y, T, Xi)), ((Yb, T, X), (Yb1, T, X))]


@pytest.mark.parametrize("pair", range(4))
def test_neighbours_same_ledger_attributes_summary(pair):
    "Edge neighbours: the same ledger, the same attribute names and types, the same summary up to its numbers."
    a_data, b_data = _edge_pairs()[pair]
    with reproducible_noise():
        a, acc_a = _fit(*a_data)
        b, acc_b = _fit(*b_data)
    assert _ledger(acc_a) == _ledger(acc_b) == [("DPLinAdjustment", (1.0, 1e-6))]
    assert {k: type(v) for k, v in vars(a).items()} == {k: type(v) for k, v in vars(b).items()}
    assert _mask(a.summary()) == _mask(b.summary())
    assert a._released.gram.shape == b._released.gram.shape and a._released.sums.shape == b._released.sums.shape


@pytest.mark.parametrize("q", [1, 2, 3, 4])
def test_gram_sensitivity_brute_force_through_the_implementation(q):
    "‖Δg‖ ≤ 3/√2 (1 + FP_MARGIN) over adversarial replacements, computed by lin_features and gram_statistics."
    rng, worst = np.random.default_rng(q), 0.0
    xb = (np.full(q, -2.0), np.full(q, 5.0))                  # a box other than [-1, 1]: the map is part of the check
    corners = np.array(list(itertools.product((-2.0, 5.0), repeat=q)))
    for trial in range(6 if q < 4 else 1):      # q = 4: 256 corner pairs per dataset already
        n = int(rng.integers(3, 40))
        X, y, T = rng.uniform(-2, 5, (n, q)), rng.uniform(-1, 1, n), rng.integers(0, 2, n)
        for x0, x1 in itertools.product(corners, corners):
            for y0, y1, t0, t1 in itertools.product((-1.0, 1.0), (-1.0, 1.0), (0, 1), (0, 1)):
                Xa, Xb, ya, yb, Ta, Tb = X.copy(), X.copy(), y.copy(), y.copy(), T.copy(), T.copy()
                Xa[0], Xb[0], ya[0], yb[0], Ta[0], Tb[0] = x0, x1, y0, y1, t0, t1
                d = gram_statistics(lin_features(Xa, Ta, xb), ya) - gram_statistics(lin_features(Xb, Tb, xb), yb)
                worst = max(worst, float(np.linalg.norm(d)))
    assert worst <= GRAM_SENSITIVITY * (1 + FP_MARGIN)
    if q == 2: assert worst >= GRAM_SENSITIVITY * (1 - 1e-9)             # attained
    else: assert worst >= 0.9 * GRAM_SENSITIVITY                          # near


def test_adjusted_sums_sensitivity_through_the_estimator(monkeypatch):
    """Given the released slopes (fixed here, as the proof conditions on them), one record's change moves the sums of
    the adjusted outcomes by at most b − a + 2w, the width of the widened range (w the capped adjustment's bound),
    and by more than b − a for slopes whose adjustment pushes outcomes past the declared bounds."""
    cap, width, orig = [], [], lin_mod.dim_release
    def spy(r, T, bounds, sigma, rng):
        cap.append(dim_statistics(r, T, bounds))
        width.append(bounds[1] - bounds[0])
        return orig(r, T, bounds, sigma, rng)
    monkeypatch.setattr(lin_mod, "dim_release", spy)
    beta = np.array([2.0, -1.5, 2.5, 0.7, 0.1])
    monkeypatch.setattr(lin_mod, "gram_coefficients", lambda g, p, sd=0.0: beta)
    Y, T, X = _data(200, seed=3)
    worst = 0.0
    for x0, y0, t0 in itertools.product((np.array([1.0, -1.0, 1.0]), np.array([-1.0, 1.0, -1.0])), (-3.0, 3.0), (0, 1)):
        Ya, Ta, Xa = Y.copy(), T.copy(), X.copy()
        Ya[0], Ta[0], Xa[0] = y0, t0, x0
        cap.clear()
        with reproducible_noise():
            _fit(Y, T, X)
            _fit(Ya, Ta, Xa)
        worst = max(worst, float(np.linalg.norm(cap[0] - cap[1])))
    assert len(set(width)) == 1 and OB[1] - OB[0] < worst <= width[0] * (1 + FP_MARGIN)


def _walk(obj, seen=None):
    "Every object reachable from `obj` through attributes, dataclass fields, mappings and sequences."
    seen = set() if seen is None else seen
    if id(obj) in seen: return
    seen.add(id(obj))
    yield obj
    if isinstance(obj, dict): children = list(obj.values())
    elif isinstance(obj, (list, tuple, set)): children = list(obj)
    elif hasattr(obj, "__dict__") and not isinstance(obj, type) and not callable(obj):
        children = list(vars(obj).values())
    else: children = []
    for c in children: yield from _walk(c, seen)


def test_nothing_reachable_holds_a_record_or_a_random_stream():
    "Neither the estimator nor the returned dict holds a generator, a record-length array or an un-noised number."
    Y, T, X = _data(300)
    exact = lin_release(Y, T, X, outcome_bounds=OB, x_bounds=XB, epsilon=np.inf, delta=1e-6,
                        accountant=PrivacyAccountant())
    m, _ = _fit(Y, T, X)
    out = lin_release(Y, T, X, outcome_bounds=OB, x_bounds=XB, epsilon=1.0, delta=1e-6, accountant=PrivacyAccountant(),
                      random_state=0)
    secret = {exact["ate"], exact["stderr"], float(Y.mean()), float(T.sum())}
    for root in (m, out):
        for o in _walk(root):
            assert not isinstance(o, (np.random.Generator, np.random.SeedSequence, np.random.BitGenerator))
            if isinstance(o, np.ndarray): assert o.size < len(Y) and not np.isin(o, Y).any()
            if isinstance(o, float): assert o not in secret
    assert set(out) >= {"ate", "stderr", "interval", "noise_var", "n"}


class _Draws:
    "Counts the calls of the release module's grid sampler made by the estimator."
    def __init__(self, monkeypatch):
        self.calls, orig = [], lin_mod.grid_release
        monkeypatch.setattr(lin_mod, "grid_release", lambda v, plan, rng, **kw: self.calls.append(plan.kind)
                            or orig(v, plan, rng, **kw))
        monkeypatch.setattr(lin_mod, "dim_release", self._dim)
    def _dim(self, Y, T, bounds, sigma, rng):
        from dp_causal_nb.dim import dim_sensitivity
        plan = lin_mod.plan_gaussian(sigma, dim_sensitivity(bounds), 5)
        return lin_mod.grid_release(dim_statistics(Y, T, bounds), plan, rng), plan


def test_noise_only_from_the_release_module(monkeypatch):
    "Two grid releases per fit (Gram, sums), Gaussian when private, none at ε = ∞; the estimate is theirs."
    d = _Draws(monkeypatch)
    Y, T, X = _data(300)
    _fit(Y, T, X)
    assert d.calls == ["gaussian", "gaussian"]
    _fit(Y, T, X, epsilon=np.inf)
    assert d.calls[2:] == ["none", "none"]


def test_refusals_and_overspend_before_any_charge_or_draw(monkeypatch):
    d = _Draws(monkeypatch)
    Y, T, X = _data(300)
    acc = PrivacyAccountant(epsilon=1.0, delta=1e-4)
    bad = [(dict(epsilon=1e-7), "grid"), (dict(level=1.0), "level must lie in"), (dict(delta=0.0), "delta"),
           (dict(epsilon=2.0), "budget")]
    for kw, msg in bad:
        with pytest.raises((ValueError, BudgetError), match=msg): _fit(Y, T, X, acc=acc, **kw)
    with pytest.raises(ValueError, match="x_bounds"):
        DPLinAdjustment(epsilon=1.0, outcome_bounds=OB, x_bounds=((0, 0), (1, 1)), accountant=acc).fit(Y, T, X=X)
    with pytest.raises(ValueError, match="outcome_bounds"):
        DPLinAdjustment(epsilon=1.0, outcome_bounds=(1, 1), x_bounds=XB, accountant=acc).fit(Y, T, X=X)
    with pytest.raises(ValueError, match="X must be given"):
        DPLinAdjustment(epsilon=1.0, outcome_bounds=OB, x_bounds=XB, accountant=acc).fit(Y, T)
    assert acc.ledger == [] and d.calls == []
    _fit(Y, T, X, acc=acc, epsilon=0.6)
    with pytest.raises(BudgetError): _fit(Y, T, X, acc=acc, epsilon=0.6)
    assert len(acc.ledger) == 1 and len(d.calls) == 2


@pytest.mark.parametrize("q,binary", [(1, False), (3, False), (2, True)])
def test_non_private_is_the_regression_coefficient(q, binary):
    "ε = ∞: the coefficient of T in the least-squares regression of Y on 1, T and X, charged (∞, 0)."
    Y, T, X = _data(250, q=q, seed=q)
    if binary: Y = np.where(Y > 0, 3.0, -3.0)
    m, acc = _fit(Y, T, X, epsilon=np.inf)
    D = np.column_stack([np.ones(len(Y)), T, X])
    assert m.ate_ == pytest.approx(np.linalg.lstsq(D, Y, rcond=None)[0][1], abs=1e-9)
    assert m.noise_var_ == 0.0 and acc.ledger[0].cost == (np.inf, 0.0)


def test_interval_covers_on_a_quick_simulation():
    "Private 95 % intervals on 100 small trials cover the effect at least 85 % of the time (expected ≈ 95 %)."
    hits = []
    for s in range(100):
        Y, T, X = _data(1000, seed=100 + s)
        with reproducible_noise():
            m, _ = _fit(Y, T, X, random_state=s, epsilon=2.0)
        hits.append(m.conf_int_[0] <= 0.3 <= m.conf_int_[1])
        assert m.conf_int_[0] <= m.ate_ <= m.conf_int_[1]
        assert -6.0 <= m.conf_int_[0] and m.conf_int_[1] <= 6.0
    assert np.mean(hits) >= 0.85


def test_adjusted_outcomes_stay_in_the_declared_range():
    "A private release clips the adjusted outcomes to the outcome bounds, whatever the slopes."
    Y, T, X = _data(100)
    Z = lin_features(X, T, XB)
    r = adjusted_outcomes(Y, Z, np.r_[np.full(3, 10.0), -10.0, 10.0], OB, OB)
    assert r.min() >= OB[0] and r.max() <= OB[1]


def test_dpate_lin_is_lin_release_under_dpate_policies():
    """DPATE(estimator='lin') releases exactly `lin_release` on the checked, centred data, refuses what it cannot use
    before any charge (no covariate bounds, a design, the ATT), and keeps DPATE's input policy (an outcome outside the
    bounds raises unless out_of_bounds='clip')."""
    from dp_causal_nb import DPATE
    from dp_causal_nb.core import reproducible_noise
    from dp_causal_nb.lin import lin_release
    r = np.random.default_rng(2)
    X, T = r.uniform(-1, 1, (1500, 3)), r.integers(0, 2, 1500)
    Y = np.clip(0.3 * T + X[:, 0] + r.normal(0, 0.6, 1500), -3, 3)
    acc = PrivacyAccountant()
    kw = dict(epsilon=2.0, delta=1e-6, outcome_bounds=(-3, 3), randomized=True, random_state=1)
    with reproducible_noise():
        m = DPATE("lin", x_bounds=(-1, 1), accountant=acc, **kw).fit(Y, T, X=X)
        ref = lin_release(Y, T, X, outcome_bounds=(-3, 3), x_bounds=(-1, 1), epsilon=2.0, delta=1e-6,
                          accountant=PrivacyAccountant(), random_state=1)
    assert abs(m.ate_ - ref["ate"]) < 1e-9 and abs(m.stderr_ - ref["stderr"]) < 1e-9
    assert [(e.label, e.epsilon) for e in acc.ledger] == [("DPATE(lin)", 2.0)]
    acc2 = PrivacyAccountant()
    for bad, msg in ((dict(), "x_bounds"), (dict(x_bounds=(-1, 1), design="split"), "leave design='auto'"),
                     (dict(x_bounds=(-1, 1), estimand="att"), "estimand='ate'")):
        with pytest.raises(ValueError, match=msg):
            DPATE("lin", accountant=acc2, **kw, **bad).fit(Y, T, X=X)
    Y2 = Y.copy()
    Y2[0] = 4.0
    with pytest.raises(ValueError, match="outside"):
        DPATE("lin", x_bounds=(-1, 1), accountant=acc2, **kw).fit(Y2, T, X=X)
    assert acc2.ledger == []


@pytest.mark.parametrize("estimator", ["lin", "dim"])
def test_bad_random_state_refused_before_any_charge(estimator):
    from dp_causal_nb import DPATE
    r = np.random.default_rng(3)
    X, T = r.uniform(-1, 1, (300, 2)), r.integers(0, 2, 300)
    Y = np.clip(T + X[:, 0] + r.normal(0, 0.5, 300), -3, 3)
    for bad in ("seed", -1, 1.5):
        acc = PrivacyAccountant()
        with pytest.raises((TypeError, ValueError), match="random_state"):
            DPATE(estimator, epsilon=1.0, delta=1e-6, outcome_bounds=(-3, 3), x_bounds=(-1, 1), randomized=True,
                  accountant=acc, random_state=bad).fit(Y, T, X=X)
        assert acc.ledger == []


def test_outcome_scaling_stays_within_the_unit_range():
    "Narrow bounds far from zero: the scaled outcomes of the Gram release stay in [−1, 1] (the clip undoes rounding)."
    lo = 1e6
    hi = lo + 3 * np.spacing(lo)
    r = np.random.default_rng(0)
    X, T = r.uniform(-1, 1, (200, 2)), r.integers(0, 2, 200)
    Y = np.where(r.uniform(size=200) < 0.5, lo, hi)
    captured = []
    orig = lin_mod.gram_statistics
    def spy(Z, y):
        captured.append(np.abs(y).max())
        return orig(Z, y)
    lin_mod.gram_statistics = spy
    try: lin_mod.lin_release(Y, T, X, outcome_bounds=(lo, hi), x_bounds=(-1, 1), epsilon=1.0, delta=1e-6,
                             accountant=PrivacyAccountant(), random_state=0)
    finally: lin_mod.gram_statistics = orig
    assert captured and max(captured) <= 1.0

def test_dpate_lin_warns_once_about_a_large_delta():
    "DPATE's lin rule reads the budget once: a delta >= 1/n is reported once, not by every stage."
    import warnings
    from dp_causal_nb.ate import DPATE
    from dp_causal_nb.core import PrivacyLeakWarning
    Y, T, X = _data(n=1200)                 # n·ε/(d + 1)² = 600: the rule picks 'lin'
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        m = DPATE(epsilon=8.0, delta=0.01, outcome_bounds=(-3, 3), x_bounds=(-1, 1), randomized=True,
                  accountant=PrivacyAccountant(), random_state=0).fit(Y, T, X=X)
    assert m.estimator_ == "lin"
    assert sum(issubclass(w.category, PrivacyLeakWarning) and "1/n" in str(w.message) for w in got) == 1


def test_noise_calibrated_to_the_callers_mu():
    """DPATE with a μ budget (reported as the ε it implies) draws the lin release's noise for that μ exactly, not for
    gdp_mu(gdp_epsilon(μ, δ), δ): σ₁ = (3/√2)/(μ√GRAM_SHARE) and σ₂ = (b − a)/(μ√(1 − GRAM_SHARE)) per b − a."""
    from dp_causal_nb.accounting import GDPAccountant
    from dp_causal_nb.ate import DPATE
    from dp_causal_nb.mechanisms import gdp_epsilon, gdp_sigma
    mu, dlt = 0.7, 1e-6
    sig = lin_mod.lin_sigmas(gdp_epsilon(mu, dlt), dlt, OB, 5, mu=mu)
    assert sig == (gdp_sigma(mu * np.sqrt(lin_mod.GRAM_SHARE), GRAM_SENSITIVITY),
                   gdp_sigma(mu * np.sqrt(1 - lin_mod.GRAM_SHARE), OB[1] - OB[0]))
    Y, T, X = _data(400)
    got = {}
    real = lin_mod.lin_draw
    def spy(*a, **kw):
        got["sigmas"] = a[4]
        return real(*a, **kw)
    lin_mod.lin_draw = spy
    try:
        with reproducible_noise():
            m = DPATE("lin", randomized=True, mu=mu, delta=dlt, outcome_bounds=OB, x_bounds=XB,
                      accountant=GDPAccountant(mu=1.0), random_state=0).fit(Y, T, X=X)
    finally: lin_mod.lin_draw = real
    assert got["sigmas"] == sig and m.mu_spent_ == mu


def test_dpate_lin_effect_interval_is_the_release_at_any_level():
    "DPATE's 'lin' intervals at any level are `lin_estimate` of its release (the t quantile), the fitted one conf_int_."
    from dp_causal_nb.ate import DPATE
    Y, T, X = _data(60, q=10)
    with reproducible_noise():
        m = DPATE("lin", randomized=True, epsilon=np.inf, outcome_bounds=OB, x_bounds=XB,
                  accountant=PrivacyAccountant()).fit(Y, T, X=X)
    assert m.effect_interval(alpha=0.05) == pytest.approx(m.conf_int_, abs=1e-12)
    lo, hi = m.effect_interval(alpha=0.2)
    assert (lo, hi) == lin_mod.lin_estimate(m._lin_release, 0.8)["interval"]
    t = lin_mod.stdtrit(60 - 12, 0.9)                                   # ε = ∞: t on n − p = 48 dof
    assert hi - lo == pytest.approx(2 * t * m.stderr_, rel=1e-12)
