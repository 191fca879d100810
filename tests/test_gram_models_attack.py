"""The score designs' outcome models (Theorem 2f of nbs/11_dp_ate.ipynb) against crafted neighbours and ledgers.

1. Arm changes in the replay: tests/test_neighbour_replay.py changes record 0's outcome or covariate; here record 0
   also changes arm (alone, and with an extreme outcome or covariate), on every split and cross-fitted DPATE entry of
   the registry, under the default and the two strict global settings: exception, warnings, public attribute names
   and ledger must be alike. Negative control: a fit that refuses an odd treated count is reported.
2. Order of charges and draws: every centre and every Gram release of an outcome model is charged to its part before
   its noise is drawn, at OUTCOME_CENTRE_SHARE of the model's (ε, δ) and the rest, in both designs (events recorded
   by wrapping the accountant's block and the two grid releases). Negative control: a draw before its charge fails
   the check.
3. The whole ledger adds up to the declared budget exactly (an accountant with exactly that budget accepts the fit),
   in both designs and for the effect on the treated, at budgets whose shares are not exact binary fractions.
4. Theorem 2f's 3/√2 beyond the corners of d ≤ 4: sign-vector corners at d = 5, 6, 7 (attained at d = 7 ≡ 3 mod 4)
   and a local search over interior records, either arm, never above 3/√2·(1 + FP_MARGIN).
5. At ε = ∞ an outcome model's centre is the exact arm mean even where its square underflows (outcomes of order
   1e-300): the James–Stein factor is not evaluated as 0/0."""
import itertools
import numpy as np
import pytest
from scipy.optimize import minimize

import dp_causal_nb.accounting as accounting
import dp_causal_nb.ate as ate
import dp_causal_nb.dim as dim
from dp_causal_nb.accounting import PrivacyAccountant
from dp_causal_nb.ate import DPATE, OUTCOME_CENTRE_SHARE, _centre_budget, arm_features, arm_gram
from dp_causal_nb.lin import GRAM_SENSITIVITY
from dp_causal_nb.secure_noise import FP_MARGIN
from _registry import CASES, MODES, OUTCOME_BOUNDS, REGISTRY, _records
from test_neighbour_replay import observe

GRAM_CASES = [c for c in REGISTRY if c.name.startswith("DPATE") and ("split" in c.name or "crossfit" in c.name)]


# --- 1. arm changes in the replay ------------------------------------------------------------------------------------
def _arm_neighbours(Y, T, X):
    "Record 0 with its arm flipped: alone, with an extreme outcome, with an extreme covariate."
    for cell, v in (("", None), ("Y", 1e300), ("Y", -np.inf), ("X", np.inf), ("X", -1e300)):
        T1, Y1, X1 = 1 - T[:1], Y.copy(), X.copy()
        if cell == "Y": Y1[0] = v
        if cell == "X": X1[0, 1] = v
        yield f"arm flipped, {cell or 'nothing else'}={v!r}", Y1, np.r_[T1, T[1:]], X1


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", GRAM_CASES, ids=[c.name for c in GRAM_CASES])
def test_arm_change_replays_alike(case, mode):
    Y, T, X = _records()
    ref = observe(case, OUTCOME_BOUNDS[0], Y, T, X, mode)
    assert ref["exception"] is None and ref["ledger"]
    bad = {}
    for name, Y1, T1, X1 in _arm_neighbours(Y, T, X):
        got = observe(case, OUTCOME_BOUNDS[0], Y1, T1, X1, mode)
        if got != ref: bad[name] = {k: got[k] for k in got if got[k] != ref[k]}
    assert not bad, f"{case.name} ({mode}): reference {ref}\ndiffers for {bad}"


def test_the_arm_replay_sees_a_difference():
    "Negative control: a fit refusing an odd treated count (an exact, data-dependent check) is reported."
    def parity(m, Y, T, X):
        if int(np.sum(T)) % 2: raise ValueError("odd number of treated records")
        return m.fit(Y, T, X=X)
    case = CASES["DPATE split"]._replace(fit=parity)
    Y, T, X = _records()
    T = T.copy()
    if T.sum() % 2: T[1] = 1 - T[1]                          # an even count on the reference side
    seen = [observe(case, OUTCOME_BOUNDS[0], Y1, T1, X1, "default") for _, Y1, T1, X1 in _arm_neighbours(Y, T, X)]
    ref = observe(case, OUTCOME_BOUNDS[0], Y, T, X, "default")
    assert ref["exception"] is None and all(s["exception"] is not None for s in seen)


# --- 2. every outcome model's releases charged before their noise ----------------------------------------------------
def _record_events(monkeypatch):
    "Wrap the parallel block's spend and the two grid releases of an outcome model; returns the event list."
    events = []
    spend = accounting._EDBlock.spend
    def logged_spend(self, epsilon, delta=0.0, *, part, label=None):
        events.append(("spend", str(part), label, float(epsilon), float(delta)))
        return spend(self, epsilon, delta, part=part, label=label)
    def logged(release, kind):
        def draw(value, plan, rng, size=None):
            events.append(("draw", kind, int(np.size(value))))
            return release(value, plan, rng, size=size)
        return draw
    monkeypatch.setattr(accounting._EDBlock, "spend", logged_spend)
    monkeypatch.setattr(ate, "grid_release", logged(ate.grid_release, "gram"))
    monkeypatch.setattr(dim, "grid_release", logged(dim.grid_release, "sums"))
    return events


def _check_order(events, eps_n, dlt_n, p):
    """Each draw follows its own charge: the five sums after the centre's charge, the Gram vector after the Gram's
    charge, both in the same part; returns the number of outcome models seen."""
    e_c, d_c, e_m, d_m = _centre_budget(eps_n, dlt_n)
    models, last = 0, None
    for ev in events:
        if ev[0] == "spend": last = ev
        elif ev[1] == "sums":
            assert last is not None and "centre" in last[2] and last[3:] == (e_c, d_c) and ev[2] == 5, (ev, last)
            centre_part, last = last[1], None
        else:
            assert last is not None and "Gram" in last[2] and last[3:] == (e_m, d_m), (ev, last)
            assert last[1] == centre_part and ev[2] == p * (p + 3) // 2, (ev, last)
            models, last = models + 1, None
    assert e_c + e_m == eps_n and d_c + d_m == dlt_n
    assert e_c == pytest.approx(OUTCOME_CENTRE_SHARE * eps_n, rel=1e-12)
    return models


@pytest.mark.parametrize("design,models", [("split", 2), ("crossfit", 4)])
def test_gram_releases_charged_before_their_noise(monkeypatch, design, models):
    Y, T, X = _records()
    events = _record_events(monkeypatch)
    m = DPATE(estimator="g", design=design, epsilon=2.0, delta=1e-5, x_bounds=(-1, 1), outcome_bounds=(0, 4),
              accountant=PrivacyAccountant()).fit(Y, T, X=X)
    eps_n, dlt_n = (2.0, 1e-5) if design == "split" else (1.0, 5e-6)
    assert m.design_ == design
    nuisance = [e for e in events if (e[0] == "spend" and "final" not in e[1]) or e[1] == "sums" or e[2] == 9]
    assert _check_order(nuisance, eps_n, dlt_n, 3) == models     # the final stage's draws (24, 1, 1 values) left out


def test_the_order_check_sees_a_draw_before_its_charge():
    "Negative control: the Gram vector drawn before the Gram's charge (after the centre's) fails the check."
    e_c, d_c, e_m, d_m = _centre_budget(2.0, 1e-5)
    early = [("spend", "outcome0", "arm 0 mean (the outcome model's centre)", e_c, d_c), ("draw", "sums", 5),
             ("draw", "gram", 9), ("spend", "outcome0", "outcome model, arm 0 (its Gram matrix)", e_m, d_m)]
    with pytest.raises(AssertionError): _check_order(early, 2.0, 1e-5, 3)
    _check_order(early[:2] + early[3:] + early[2:3], 2.0, 1e-5, 3)      # the right order passes


# --- 3. the ledger adds up to the declared budget exactly -------------------------------------------------------------
BUDGETS = [(0.7 * 3.1, 1e-5 / 3), (1 / 3 + 2.0, 7.3e-6), (0.1 + 0.2 + 4.0, 3e-7)]


@pytest.mark.parametrize("kw", [dict(design="split"), dict(design="crossfit"), dict(design="split", estimator="g"),
                                dict(design="split", estimand="att", nuisance_lam=0.01),
                                dict(design="crossfit", estimand="att", nuisance_lam=0.01)],
                         ids=["split", "crossfit", "split g", "att split", "att crossfit"])
def test_ledger_sums_to_the_declared_budget(kw):
    Y, T, X = _records()
    for eps, dlt in BUDGETS:
        acc = PrivacyAccountant(epsilon=eps, delta=dlt)         # exactly the budget: an excess would be refused
        m = DPATE(epsilon=eps, delta=dlt, x_bounds=(-1, 1), outcome_bounds=(0, 4), accountant=acc, **kw)
        m.fit(Y, T, X=X)
        assert m.design_ == kw["design"]
        assert tuple(acc.spent) == (eps, dlt) and (m.epsilon_spent_, m.delta_spent_) == (eps, dlt)


# --- 4. Theorem 2f beyond the corners of d ≤ 4 ------------------------------------------------------------------------
def _w(u, y, t):
    "One record's contribution to arm 1's statistic."
    return arm_gram(arm_features(np.atleast_2d(u), (-1, 1)), np.array([y]), np.array([t]), 1)


@pytest.mark.parametrize("d", [5, 6, 7])
def test_sensitivity_corners_and_interior(d):
    S = np.array(list(itertools.product((-1.0, 1.0), repeat=d)))
    W = np.array([_w(s, y, t) for s in S for y in (-1.0, 1.0) for t in (0, 1)])
    sq = (W ** 2).sum(1)
    corners = float(np.sqrt(np.maximum(sq[:, None] + sq[None, :] - 2 * W @ W.T, 0).max()))
    r = np.random.default_rng(d)
    def gap(v, t0, t1):
        return -np.linalg.norm(_w(np.clip(v[:d], -1, 1), np.clip(v[d], -1, 1), t0)
                               - _w(np.clip(v[d + 1:2 * d + 1], -1, 1), np.clip(v[-1], -1, 1), t1))
    interior = max(-minimize(gap, r.uniform(-1, 1, 2 * d + 2), args=(t0, t1), method="Nelder-Mead",
                             options=dict(maxiter=3000)).fun
                   for t0, t1 in ((1, 1), (1, 0)) for _ in range(12))
    assert max(corners, interior) <= GRAM_SENSITIVITY * (1 + FP_MARGIN)
    if d == 7: assert corners == pytest.approx(GRAM_SENSITIVITY, rel=1e-12)          # attained: d ≡ 3 mod 4
    else: assert corners < GRAM_SENSITIVITY * (1 - 1e-4)


# --- 5. the centre at ε = ∞ when the arm mean's square underflows ------------------------------------------------------
@pytest.mark.parametrize("kw", [dict(design="split"), dict(design="crossfit"), dict(design="split", estimator="g"),
                                dict(design="split", estimand="att")], ids=["split", "crossfit", "split g", "att"])
def test_non_private_fit_of_outcomes_near_zero(kw):
    "Outcomes of order 1e-300 (normal floats; ȳ² underflows to 0): the exact centre, as for outcomes exactly 0."
    _, T, X = _records()
    fits = [DPATE(epsilon=np.inf, x_bounds=(-1, 1), outcome_bounds=(-1, 1), accountant=PrivacyAccountant(), **kw)
            .fit(np.full(len(T), y), T, X=X) for y in (1e-300, 0.0)]
    assert all(f.design_ == kw["design"] for f in fits) and fits[1].ate_ == 0.0
    assert abs(fits[0].ate_) <= 1e-290 and fits[0].conf_int_[0] <= fits[0].ate_ <= fits[0].conf_int_[1]


def test_non_private_centre_is_the_exact_mean():
    r = np.random.default_rng(5)
    Yc, t = r.uniform(1.0, 2.0, 40) * 1e-300, np.arange(40) % 2
    with PrivacyAccountant().parallel("m") as blk:
        c = ate._arm_centre(Yc, t, np.ones(40, bool), 1, eps=np.inf, dlt=0.0, B=1.0, part=blk.part("a"),
                            rng=np.random.default_rng(0))
    assert c == pytest.approx(Yc[t == 1].mean(), rel=1e-9) and c > 0
