"""The private Horvitz–Thompson estimate (notebook 10d) and DPATE's routes to it (notebook 11).

What must hold: the released vector's sensitivity is 2R = (b − a)/min(p, 1 − p), checked by brute force over every
replace-one change of one record (outcome on a grid, both arms) for p in {0.1, 0.3, 0.5, 0.8}; the estimate is
unbiased and its interval covers on simulated Bernoulli(p) trials; refusals of public inputs come before any charge;
ε = ∞ is the exact estimate, charged (∞, 0)."""
import numpy as np
import pytest

from dp_causal_nb.accounting import PrivacyAccountant
from dp_causal_nb.ate import DPATE
from dp_causal_nb.core import reproducible_noise
from dp_causal_nb.ht import DPHorvitzThompson, ht_sensitivity, ht_statistics, prefers_ht


@pytest.mark.parametrize("p", [0.1, 0.3, 0.5, 0.8])
def test_sensitivity_by_brute_force(p):
    r, ob = np.random.default_rng(7), (-1.0, 3.0)
    Y, T = r.uniform(*ob, 12), r.integers(0, 2, 12)
    grid, worst = np.linspace(*ob, 61), 0.0
    for j in (0, 5):                                    # two records, each moved everywhere (outcome and arm)
        for t0 in (0, 1):
            for y0 in grid:
                Y0, T0 = Y.copy(), T.copy()
                Y0[j], T0[j] = y0, t0
                v0 = ht_statistics(Y0, T0, ob, p)
                for t1 in (0, 1):
                    Y1, T1 = Y0.copy(), T0.copy()
                    T1[j] = t1
                    for y1 in grid:
                        Y1[j] = y1
                        worst = max(worst, float(np.linalg.norm(v0 - ht_statistics(Y1, T1, ob, p))))
    claim = max(4 / p, 4 / (1 - p), 2 / p + 2 / (1 - p))     # b − a = 4, h = 2
    assert ht_sensitivity(ob, p) == pytest.approx(claim, rel=1e-12)
    assert worst == pytest.approx(claim, rel=1e-9)         # attained, never exceeded


def _trial(seed, p, n=600, tau=0.4):
    r = np.random.default_rng(seed)
    T = (r.uniform(size=n) < p).astype(int)
    return np.clip(0.3 + tau * T + r.normal(0, 1, n), -3, 3), T


@pytest.mark.parametrize("p", [0.3, 0.5])
def test_unbiased_and_covers(p):
    reps, truth = 400, 0.4            # the clip at ±3 moves the truth by < 1e-3 (3 sd away)
    est, cover = [], []
    for s in range(reps):
        Y, T = _trial(s, p)
        exact = DPHorvitzThompson(epsilon=np.inf, outcome_bounds=(-3, 3), assignment_probability=p,
                                  accountant=PrivacyAccountant()).fit(Y, T)
        with reproducible_noise():
            m = DPHorvitzThompson(epsilon=1.0, delta=1e-6, outcome_bounds=(-3, 3), assignment_probability=p,
                                  accountant=PrivacyAccountant(), random_state=s).fit(Y, T)
        est.append((exact.ate_, m.ate_))
        cover.append((exact.conf_int_[0] <= truth <= exact.conf_int_[1], m.conf_int_[0] <= truth <= m.conf_int_[1]))
    est, cover = np.array(est), np.array(cover, float)
    for k in (0, 1):                 # both unbiased: mean error within 4 standard errors of the mean
        assert abs(est[:, k].mean() - truth) < 4 * est[:, k].std() / np.sqrt(reps)
        assert cover[:, k].mean() >= 0.95 - 3 * np.sqrt(0.95 * 0.05 / reps)


@pytest.mark.parametrize("bad", [0.0, 1.0, -0.2, 1.5, np.nan, "half"])
def test_probability_outside_the_unit_interval_is_refused_before_any_charge(bad):
    Y, T = _trial(0, 0.5)
    acc = PrivacyAccountant(epsilon=5.0, delta=1e-3)
    with pytest.raises((ValueError, TypeError), match="assignment_probability"):
        DPHorvitzThompson(epsilon=1.0, delta=1e-6, outcome_bounds=(-3, 3), assignment_probability=bad,
                          accountant=acc).fit(Y, T)
    with pytest.raises((ValueError, TypeError), match="assignment_probability"):
        DPATE("ht", epsilon=1.0, delta=1e-6, outcome_bounds=(-3, 3), randomized=True, assignment_probability=bad,
              accountant=acc).fit(Y, T)
    assert acc.ledger == [] or len(acc.ledger) == 0


@pytest.mark.parametrize("kw, message", [
    (dict(estimator="ht", randomized=True), "assignment_probability"),
    (dict(estimator="ht", assignment_probability=0.5), "requires randomized=True"),
    (dict(assignment_probability=0.5), "requires randomized=True"),
    (dict(estimator="ht", randomized=True, assignment_probability=0.5, estimand="att"), "estimand='ate'"),
    (dict(estimator="ht", randomized=True, assignment_probability=0.5, design="split"), "leave design='auto'"),
])
def test_dpate_refusals_before_any_charge(kw, message):
    Y, T = _trial(1, 0.5)
    acc = PrivacyAccountant(epsilon=5.0, delta=1e-3)
    with pytest.raises(ValueError, match=message):
        DPATE(epsilon=1.0, delta=1e-6, outcome_bounds=(-3, 3), accountant=acc, **kw).fit(Y, T)
    assert len(acc.ledger) == 0


def test_not_private_charges_no_delta():
    Y, T = _trial(2, 0.3)
    acc = PrivacyAccountant()
    m = DPHorvitzThompson(epsilon=np.inf, delta=1e-6, outcome_bounds=(-3, 3), assignment_probability=0.3,
                          accountant=acc).fit(Y, T)
    z = np.where(T == 1, Y / 0.3, -Y / 0.7)               # the midpoint is 0
    assert m.ate_ == pytest.approx(z.mean(), rel=1e-12) and m.noise_sd_ == 0.0
    assert (m.epsilon_spent_, m.delta_spent_) == (np.inf, 0.0) and "not private" in acc.ledger[-1].label
    d = DPATE("ht", epsilon=np.inf, outcome_bounds=(-3, 3), randomized=True, assignment_probability=0.3,
              accountant=PrivacyAccountant()).fit(Y, T)
    assert d.ate_ == pytest.approx(z.mean(), rel=1e-12) and d.delta_spent_ == 0.0


def test_auto_rule_is_public_and_chosen():
    "DPATE's default follows prefers_ht (n, ε, δ, p); with covariate bounds the lin rule is asked first."
    Y, T = _trial(3, 0.5, n=2800)
    X = np.random.default_rng(3).uniform(-1, 1, (2800, 3))
    kw = dict(delta=1e-6, outcome_bounds=(-3, 3), randomized=True, assignment_probability=0.5)
    for eps in (1.0, 4.0):
        m = DPATE(epsilon=eps, accountant=PrivacyAccountant(), **kw).fit(Y, T)
        assert m.estimator_ == ("ht" if prefers_ht(2800, eps, 1e-6, 0.5) else "dim")
    assert DPATE(epsilon=1.0, accountant=PrivacyAccountant(), **kw).fit(Y, T).estimator_ == "ht"
    assert DPATE(epsilon=4.0, x_bounds=(-1, 1), accountant=PrivacyAccountant(), **kw).fit(Y, T, X=X).estimator_ == "lin"
    assert DPATE(epsilon=1.0, randomized=True, delta=1e-6, outcome_bounds=(-3, 3),
                 accountant=PrivacyAccountant()).fit(Y, T).estimator_ == "dim"      # nothing declared: unchanged


def test_adjusted_release_sensitivity_by_brute_force():
    "For a slope fixed by the first release, the second statistic moves by at most 2R' = (b − a + 2w)/min(p, 1 − p)."
    from itertools import product
    from dp_causal_nb.lin import adjusted_outcomes, adjusted_range, capped_coefficients, lin_features
    beta = capped_coefficients(np.array([3.0, -2.0, 0.4, 0.1]), 0.25)        # two covariates, arm, bias
    ob = (-3.0, 3.0)
    rb = adjusted_range(ob, beta)
    cells = [(np.array(u), y, t) for u in product((-1.0, 0.0, 1.0), repeat=2) for y in (-3.0, 0.0, 3.0) for t in (0, 1)]
    X, Y, T = np.array([c[0] for c in cells]), np.array([c[1] for c in cells]), np.array([c[2] for c in cells])
    r = adjusted_outcomes(Y, lin_features(X, T, (-1, 1)), beta, ob, rb)
    for p in (0.3, 0.5):
        one = np.array([ht_statistics(r[i:i + 1], T[i:i + 1], rb, p) for i in range(len(r))])
        worst = max(np.linalg.norm(a - b) for a in one for b in one)
        assert worst <= ht_sensitivity(rb, p) * (1 + 1e-12)
        assert worst > ht_sensitivity(ob, p) * 1.01           # the widening matters: b − a alone would under-count


def test_adjusted_estimate_unbiased_and_covers():
    reps, truth, p = 200, 0.4, 0.5
    est, cover = [], []
    for s in range(reps):
        r = np.random.default_rng(100 + s)
        X = r.uniform(-1, 1, (1500, 2))
        T = (r.uniform(size=1500) < p).astype(int)
        Y = np.clip(truth * T + X @ [1.0, 0.5] + r.normal(0, 0.5, 1500), -3, 3)
        with reproducible_noise():
            m = DPHorvitzThompson(epsilon=4.0, delta=1e-6, outcome_bounds=(-3, 3), assignment_probability=p,
                                  x_bounds=(-1, 1), accountant=PrivacyAccountant(), random_state=s).fit(Y, T, X=X)
        est.append(m.ate_)
        cover.append(m.conf_int_[0] <= truth <= m.conf_int_[1])
    est = np.array(est)
    assert abs(est.mean() - truth) < 4 * est.std() / np.sqrt(reps)
    assert np.mean(cover) >= 0.95 - 3 * np.sqrt(0.95 * 0.05 / reps)
