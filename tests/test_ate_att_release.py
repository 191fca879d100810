"""The effect on the treated (DPATE Theorem 2d), the centred outcome models of the split and cross-fitted designs, and
DPATE.sensitivity(): neighbours behave alike apart from the noise, the released statistic stays within its
sensitivity, nothing reachable holds a record or a noise state, every refusal on public inputs comes before any charge
or draw, the ledger totals the declared budget, and the post-processing neither crashes on noisy values nor
understates the standard error."""
import math, re, warnings
import numpy as np
import pytest
from dp_causal_nb import DPATE
from dp_causal_nb.accounting import PrivacyAccountant
from dp_causal_nb.core import reproducible_noise
from dp_causal_nb.dim import dim_statistics
from dp_causal_nb.secure_noise import FP_MARGIN
from dp_causal_nb.sensitivity import stderr_from_interval
import dp_causal_nb.ate as ate_mod

def _data(n=300, d=2, p=0.2, seed=0):
    r = np.random.default_rng(seed)
    X = r.uniform(0, 1, (n, d)); T = (r.uniform(size=n) < p).astype(int)
    return np.clip(40 + 30 * X[:, 0] + 5 * T + r.normal(0, 5, n), 0, 100), T, X

def _fit(Y, T, X, acc=None, **kw):
    kw.setdefault("epsilon", 1.0); kw.setdefault("delta", 1e-6)
    if kw.get("estimand") == "att": kw.setdefault("nuisance_lam", 0.01)   # a model that can adjust at this small n
    acc = PrivacyAccountant() if acc is None else acc
    return DPATE(outcome_bounds=(0, 100), x_bounds=(0, 1), accountant=acc, **kw).fit(Y, T, X=X), acc

_mask = lambda s: re.sub(r"-?\d+(\.\d+)?(e[-+]?\d+)?", "#", s)

def _ledger(acc):
    return [(r.label, r.cost, {p: [(i.label, i.cost) for i in s.items] for p, s in (r.parts or {}).items()})
            for r in acc.ledger]

DESIGNS = [dict(estimand="att", design="split"), dict(estimand="att", design="crossfit"),
           dict(design="split"), dict(design="crossfit")]


@pytest.mark.parametrize("kw", DESIGNS)
def test_neighbours_same_structure_and_ledger(kw):
    "Edge neighbours (no treated vs one, all controls at a bound vs one flipped): same ledger, attribute set, notes."
    Y, T, X = _data(200, p=0.05, seed=1)
    T0 = np.zeros_like(T); T1 = T0.copy(); T1[0] = 1
    Yb = np.zeros_like(Y); Yb1 = Yb.copy(); Yb1[0] = 100
    for (Ya, Ta), (Yc, Tc) in (((Y, T0), (Y, T1)), ((Yb, T0), (Yb1, T0))):
        with reproducible_noise():
            a, acc_a = _fit(Ya, Ta, X, random_state=0, epsilon=0.5, **kw)
            b, acc_b = _fit(Yc, Tc, X, random_state=0, epsilon=0.5, **kw)
        assert _ledger(acc_a) == _ledger(acc_b)
        assert set(vars(a)) == set(vars(b))
        assert _mask(a.summary()) == _mask(b.summary())

def test_residual_statistic_sensitivity_4B_fp():
    "‖Δ dim_statistics(r, T, (−2B, 2B))‖ ≤ 4B(1 + FP_MARGIN) on adversarial neighbours (arm switches, extremes)."
    rng, worst = np.random.default_rng(0), 0.0
    for B in (50.0, 0.5e100, 5e-101, 1 / 3):
        R = 2 * B
        for trial in range(60):
            n = int(rng.integers(2, 3000))
            u = rng.choice([-R, R, 0.0], n) if trial % 2 else rng.uniform(-R, R, n)
            t, i = rng.integers(0, 2, n), rng.integers(n)
            for y2, t2 in ((-R, 0), (R, 0), (-R, 1), (R, 1), (0.0, 0), (0.0, 1)):
                u2, tt = u.copy(), t.copy(); u2[i], tt[i] = y2, t2
                d = np.linalg.norm(dim_statistics(u, t, (-R, R)) - dim_statistics(u2, tt, (-R, R))) / (2 * R)
                worst = max(worst, d)
    assert worst <= 1 + FP_MARGIN

@pytest.mark.parametrize("design", ["split", "crossfit"])
def test_final_statistic_sensitivity_through_the_estimator(design, monkeypatch):
    "With the model fixed (same reproducible noise), a final-part record moves the un-noised ATT statistic ≤ 4B."
    cap, orig = [], ate_mod.dim_release
    def spy(Y, T, b, sigma, rng):
        cap.append((b, dim_statistics(Y, T, b))); return orig(Y, T, b, sigma, rng)
    monkeypatch.setattr(ate_mod, "dim_release", spy)
    Y, T, X = _data(200, p=0.2, seed=3)
    part = ate_mod.att_parts(200, design, ate_mod.spawn_generators(0, 4)[0])
    def stat(Yy, Tt):
        cap.clear()
        with reproducible_noise(): _fit(Yy, Tt, X, estimand="att", design=design, random_state=0)
        return cap[-1]
    _, s0 = stat(Y, T)
    for i in np.flatnonzero(part == 1)[:3]:
        for y in (0.0, 100.0):
            for t in (0, 1):
                Y2, T2 = Y.copy(), T.copy(); Y2[i], T2[i] = y, t
                b, s = stat(Y2, T2)
                assert np.linalg.norm(s - s0) <= (b[1] - b[0]) * (1 + FP_MARGIN)

@pytest.mark.os_noise
@pytest.mark.parametrize("kw", DESIGNS)
def test_no_random_state_or_records_reachable(kw):
    "No Generator / SeedSequence / record-sized array reachable from the fitted object or its ledger."
    Y, T, X = _data(300, seed=2)
    m, acc = _fit(Y, T, X, random_state=None, **kw)
    found, seen = [], set()
    def walk(o, path, depth=0):
        if id(o) in seen or depth > 8: return
        seen.add(id(o))
        if isinstance(o, (np.random.Generator, np.random.SeedSequence, np.random.BitGenerator)): found.append(path)
        if isinstance(o, np.ndarray) and o.size >= 50: found.append(path)
        if isinstance(o, (str, int, float, bool, type(None), np.ndarray)): return
        items = (o.items() if isinstance(o, dict) else enumerate(o) if isinstance(o, (list, tuple, set))
                 else vars(o).items() if hasattr(o, "__dict__") else [])
        for k, v in items: walk(v, f"{path}.{k}", depth + 1)
    walk(m, "m"); walk(acc, "acc")
    assert found == []

@pytest.mark.os_noise
@pytest.mark.parametrize("kw", DESIGNS)
def test_default_noise_not_rederivable_from_seed(kw):
    "Same seed, default noise: two fits differ (n and ε large enough that a clamp to a bound, tying both, is rare)."
    Y, T, X = _data(2000, seed=4)
    a, _ = _fit(Y, T, X, random_state=0, epsilon=4.0, **kw)
    b, _ = _fit(Y, T, X, random_state=0, epsilon=4.0, **kw)
    with reproducible_noise(): c, _ = _fit(Y, T, X, random_state=0, epsilon=4.0, **kw)
    assert a.ate_ != b.ate_ and a.ate_ != c.ate_

@pytest.mark.parametrize("kw", DESIGNS)
def test_overspend_refused_before_any_draw(kw, monkeypatch):
    import dp_causal_nb.secure_noise as sn
    draws = []
    orig = sn._SAMPLERS["gaussian"]
    monkeypatch.setitem(sn._SAMPLERS, "gaussian", lambda *a, **k: draws.append(1) or orig(*a, **k))
    Y, T, X = _data(300, seed=5)
    m, _ = _fit(Y, T, X, **kw)
    before = dict(vars(m))
    acc = PrivacyAccountant(1.0 * (1 - 1e-9), 1e-6)
    m.set_params(accountant=acc); before["accountant"] = acc
    draws.clear()
    with pytest.raises(Exception, match="budget"): m.fit(Y, T, X=X)
    assert draws == [] and acc.ledger == [] and vars(m).keys() == before.keys()
    assert all(before[k] is v or np.array_equal(before[k], v) if isinstance(v, np.ndarray) else before[k] == v
               for k, v in vars(m).items())


@pytest.mark.parametrize("estimator", ["g", "aipw"])
def test_centre_plan_refused_before_any_charge(estimator):
    Y, T, X = _data(600, p=0.3, seed=1)
    acc = PrivacyAccountant()
    with pytest.raises(ValueError, match="grid steps"):
        _fit(Y, T, X, acc=acc, estimator=estimator, design="split", epsilon=0.005)
    assert acc.ledger == []

@pytest.mark.parametrize("kw", [dict(estimand="att"), dict(design="split", estimator="g")])
def test_ridge_refusal_before_any_charge(kw):
    Y, T, X = _data(300, seed=1)
    acc = PrivacyAccountant()
    with pytest.raises(ValueError, match="lam must be"):
        _fit(Y, T, X, acc=acc, nuisance_lam=1e-14, **kw)
    assert acc.ledger == []

def test_wide_declared_bounds_refused_before_any_charge():
    "A centred ridge's bounds stay within ±2B: declared bounds wider than MAX_BOUND are refused before any charge."
    r = np.random.default_rng(0); n = 1000
    X = r.uniform(0, 1, (n, 2)); T = (r.uniform(size=n) < 0.3).astype(int); Y = np.full(n, 0.9e100)
    for kw in (dict(estimand="att", design="split"), dict(design="split"), dict(design="crossfit")):
        acc = PrivacyAccountant()
        with pytest.raises(ValueError, match="rescale the outcome"):
            DPATE(outcome_bounds=(-1e100, 1e100), x_bounds=(0, 1), epsilon=1.0, delta=1e-6, accountant=acc,
                  random_state=0, **kw).fit(Y, T, X=X)
        assert acc.ledger == []

def test_summary_never_raises_on_noisy_estimate():
    Y, T, X = _data(300, p=0.5, seed=3)
    for s in (1, 9, 11):      # seeds whose noise puts |ate_raw_| above ~780 B
        m = DPATE("g", design="fold", n_folds=3, mu=0.002, outcome_bounds=(0, 100), accountant=PrivacyAccountant(),
                  random_state=s)
        with reproducible_noise(): m.fit(Y, T, X=X)
        m.summary()

def test_sensitivity_uses_the_released_stderr():
    "The robustness value's t is the released estimate over the released standard error (not a clamped interval's)."
    Y, T, X = _data(20000, p=0.3, seed=1)
    with reproducible_noise(): m, _ = _fit(Y, T, X, estimand="att", random_state=2, epsilon=8.0)
    assert not m.clamped_                               # a clamped release has no sensitivity analysis
    t = m.sensitivity().to_dict()["robustness"]["t_value"]
    assert math.isclose(abs(t), abs(m.ate_) / m.stderr_, rel_tol=1e-6)

def test_ledger_total_is_the_declared_budget():
    e = 2.7202958016479495
    Y, T, X = _data(300, seed=1)
    m, acc = _fit(Y, T, X, estimand="att", epsilon=e)
    assert acc.spent[0] <= e

def test_conf_int_types_stable():
    Y, T, X = _data(200, p=0.05, seed=1)
    T1 = np.zeros_like(T); T1[0] = 1
    with reproducible_noise(): m, _ = _fit(Y, T1, X, estimand="att", epsilon=8.0, random_state=0)
    assert all(type(v) is float for v in m.conf_int_)
