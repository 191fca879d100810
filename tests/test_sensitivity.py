"""Sensitivity summaries of a release (dp_causal_nb.sensitivity): the published worked examples, the closed forms
against a brute-force search over the confounder's parameters, the edge cases (estimate at the null, an interval
containing it, negative effects), conservativeness of the public substitutes, and clear errors for bad inputs."""
import json, math
import numpy as np, pytest
from scipy import stats
from dp_causal_nb.sensitivity import (EValue, RobustnessValue, SensitivitySummary, e_value, e_value_rr,
                                      robustness_value, sensitivity_summary, stderr_from_interval)


def test_published_e_values():
    "VanderWeele & Ding (RR 3.9, lower limit 1.8) and the EValue documentation's smoking example."
    ev = e_value(3.9, 1.8, 8.7, ratio=True)
    assert ev.e_value == pytest.approx(7.26, abs=5e-3) and ev.e_value_limit == pytest.approx(3.0, abs=1e-12)
    ev = e_value(10.73, 8.02, 14.36, ratio=True)
    assert ev.e_value == pytest.approx(20.95, abs=5e-3) and ev.e_value_limit == pytest.approx(15.52, abs=5e-3)


def test_published_robustness_values():
    "Cinelli & Hazlett's Darfur example: partial R² 0.02187, RV 0.13878, RV_α 0.07626."
    rv = robustness_value(0.09732, 0.02326, 783)
    assert (rv.partial_r2, rv.rv_q, rv.rv_q_alpha) == pytest.approx((0.02187, 0.13878, 0.07626), abs=5e-5)


def _rv_grid(t, dof, q, alpha, m=1501):
    "Smallest max(R²_Y, R²_D) on a grid that overturns the bias-adjusted test (alpha None: the estimate)."
    fq = q * abs(t) / np.sqrt(dof)
    fs = 0.0 if alpha is None else stats.t.ppf(1 - alpha / 2, dof - 1) / np.sqrt(dof - 1)
    g = np.linspace(0, 1 - 1e-9, m)
    ry, rd = np.meshgrid(g, g)
    ok = fq <= (np.sqrt(ry * rd) + fs * np.sqrt(1 - ry)) / np.sqrt(1 - rd)
    return np.maximum(ry, rd)[ok].min()


@pytest.mark.parametrize("t,dof,q", [(4.2, 783, 1.0), (2.5, 50, 0.5), (40.0, 10, 1.0), (8.0, 5, 1.0), (1.0, 200, 1.0)])
def test_robustness_value_matches_brute_force(t, dof, q):
    rv = robustness_value(t, 1.0, dof, q=q, alpha=0.05)
    assert rv.rv_q == pytest.approx(_rv_grid(t, dof, q, None), abs=3e-3)
    assert rv.rv_q_alpha == pytest.approx(_rv_grid(t, dof, q, 0.05), abs=3e-3)


def test_e_value_is_the_smallest_confounding_that_explains_away():
    "Bounding factor RR_EU·RR_UD/(RR_EU + RR_UD − 1) reaches RR at E on the diagonal, and never with both below E."
    for rr in (1.1, 2.0, 7.5):
        e = e_value_rr(rr)
        assert e * e / (2 * e - 1) == pytest.approx(rr, rel=1e-12)
        a, b = np.meshgrid(*[np.linspace(1, e * (1 - 1e-6), 400)] * 2)
        assert (a * b / (a + b - 1) < rr).all()


def test_edge_cases():
    assert e_value(0.0, outcome_bounds=(0, 1)).e_value == 1.0                        # estimate at the null
    assert e_value(1.0, 0.8, 1.3, ratio=True).e_value == 1.0
    crossing = e_value(0.2, -0.1, 0.5, outcome_bounds=(-1, 1))
    assert crossing.e_value_limit == 1.0 and crossing.limit_rr == 1.0 and crossing.e_value > 1
    pos, neg = e_value(0.3, 0.1, 0.5, outcome_bounds=(-1, 1)), e_value(-0.3, -0.5, -0.1, outcome_bounds=(-1, 1))
    assert (neg.e_value, neg.e_value_limit) == pytest.approx((pos.e_value, pos.e_value_limit), rel=1e-12)
    assert e_value(1 / 3.9, 1 / 8.7, 1 / 1.8, ratio=True).e_value_limit == pytest.approx(3.0, abs=1e-12)
    assert e_value(1.0, 0.5, 1.0, binary=True).e_value == math.inf                  # a risk difference of 1
    assert robustness_value(0.0, 1.0, 100).rv_q == 0.0
    assert robustness_value(0.1, 1.0, 100).rv_q_alpha == 0.0                       # not significant


def test_public_substitutes_are_conservative():
    "The SD bound (b − a)/2 and the risk-difference bound give smaller E-values than the true SD or the arm means."
    for sd in (0.3, 1.0, 2.9):
        assert e_value(0.5, 0.2, 0.8, outcome_bounds=(-3, 3)).e_value <= e_value(0.5, 0.2, 0.8, outcome_sd=sd).e_value
    for p0 in (0.05, 0.3, 0.6):
        bound, exact = e_value(0.2, 0.1, 0.3, binary=True), e_value(0.2, 0.1, 0.3, binary=True, arm_means=(p0, p0 + 0.2))
        assert bound.e_value <= exact.e_value and bound.e_value_limit <= exact.e_value_limit


def test_privacy_noise_makes_robustness_values_smaller():
    "A standard error that includes privacy noise gives smaller robustness values for the same estimate."
    base = robustness_value(0.3, 0.05, 1998)
    for noise in (0.01, 0.05, 0.2):
        rv = robustness_value(0.3, math.hypot(0.05, noise), 1998)
        assert rv.rv_q < base.rv_q and rv.rv_q_alpha <= base.rv_q_alpha


def test_summary_of_a_release():
    s = sensitivity_summary(0.42, 0.21, 0.63, n=4000, n_covariates=5, outcome_bounds=(-3, 3))
    assert isinstance(s, SensitivitySummary) and isinstance(s.e_value, EValue)
    assert isinstance(s.robustness, RobustnessValue) and s.robustness.dof == 3993
    assert s.robustness.t_value == pytest.approx(0.42 / stderr_from_interval(0.21, 0.63))
    text = str(s)
    assert "E-value" in text and "robustness value" in text and "no privacy cost" in text
    d = json.loads(json.dumps(s.to_dict()))
    assert d["e_value"]["e_value"] == pytest.approx(s.e_value.e_value) and d["robustness"]["dof"] == 3993


def test_summary_without_a_sampling_interval():
    "A privacy-noise-only interval (DPCATE) or no interval: the point E-value only, with a note saying why."
    p = sensitivity_summary(0.42, 0.21, 0.63, outcome_bounds=(-3, 3), interval_covers_sampling=False)   # n unused
    assert p.robustness is None and p.e_value.e_value_limit is None and "privacy noise only" in str(p)
    assert sensitivity_summary(0.42, n=4000, outcome_bounds=(-3, 3)).robustness is None
    r = sensitivity_summary(3.9, 1.8, 8.7, n=500, ratio=True)
    assert r.robustness is None and r.e_value.e_value_limit == pytest.approx(3.0)


@pytest.mark.parametrize("call,word", [
    (lambda: e_value(0.4, 0.2, 0.6), "outcome_bounds"),
    (lambda: e_value(0.4, 0.2, 0.6, outcome_bounds=(1, 1)), "outcome_bounds"),
    (lambda: e_value(0.4, 0.5, 0.6, outcome_bounds=(0, 1)), "contain the estimate"),
    (lambda: e_value(0.4, 0.2, None, outcome_bounds=(0, 1)), "both lo and hi"),
    (lambda: e_value(-1.0, ratio=True), "estimate"),
    (lambda: e_value(0.1, binary=True, arm_means=(0.0, 0.1)), "arm_means"),
    (lambda: e_value(0.1, binary=True, ratio=True), "ratio"),
    (lambda: robustness_value(0.1, -1.0, 100), "stderr"),
    (lambda: robustness_value(0.1, 1.0, 1.5), "dof"),
    (lambda: robustness_value(0.1, 1.0, 100, q=0), "q"),
    (lambda: stderr_from_interval(0.3, 0.2), "lo < hi"),
    (lambda: sensitivity_summary(0.1, 0.0, 0.2, n=5, n_covariates=3, outcome_bounds=(0, 1)), "n must"),
    (lambda: sensitivity_summary(0.1, 0.0, 0.2, n=100, n_covariates=-1, outcome_bounds=(0, 1)), "n_covariates"),
    (lambda: sensitivity_summary(0.1, 0.0, 0.2, outcome_bounds=(0, 1)), "n \\(the public number of records\\)"),
])
def test_bad_inputs_name_the_parameter(call, word):
    with pytest.raises((ValueError, TypeError), match=word): call()


def test_calls_from_fitted_estimators():
    "The calls an estimator's summary() makes: DPATE (sampling + privacy interval) and DPCATE (privacy noise only)."
    from dp_causal_nb import DPATE, DPCATE, PrivacyAccountant
    from dp_causal_nb.datasets import dataset1
    rng = np.random.default_rng(0)
    n = 3000
    X, T = rng.uniform(-1, 1, (n, 3)), rng.binomial(1, 0.5, n)
    Y = np.clip(0.5 * T + X[:, 0] + rng.normal(0, 0.3, n), -3, 3)
    m = DPATE(epsilon=4.0, delta=1e-6, outcome_bounds=(-3, 3), x_bounds=(-1, 1), accountant=PrivacyAccountant(),
              random_state=0).fit(Y, T, X=X)
    s = sensitivity_summary(m.ate_raw_, *m.conf_int_raw_, n=m.n_, level=m.level, n_covariates=X.shape[1],
                            outcome_bounds=m.outcome_bounds)
    assert s.robustness.dof == n - 5 and s.e_value.e_value > 1 and s.robustness.rv_q > s.robustness.rv_q_alpha > 0
    ds = dataset1(1500, random_state=0)
    c = DPCATE(epsilon=1.0, x_bounds=ds.x_bounds, outcome_bounds=ds.outcome_bounds, accountant=PrivacyAccountant(),
               random_state=0).fit(ds.Y, ds.T, X=ds.X)
    Xq = ds.dgp.sample(50, random_state=1).X
    p = sensitivity_summary(c.ate(Xq), *c.ate_interval(Xq), outcome_bounds=c.outcome_bounds_,
                            interval_covers_sampling=False)
    assert p.robustness is None and p.e_value.e_value_limit is None


def test_clamped_dpate_release_has_no_sensitivity_analysis():
    """A DPATE release clamped to the feasible range is noise-dominated: `summary()` gives no E-value or robustness
    value (as DPCATE's summary), and `sensitivity()` raises a ValueError that says why."""
    from dp_causal_nb import DPATE, PrivacyAccountant
    rng = np.random.default_rng(0)
    n = 300
    X = np.c_[rng.uniform(16, 70, n), rng.uniform(0, 60, n)]
    T = (rng.random(n) < 0.1).astype(int)
    Y = np.clip(20000 + 300 * (X[:, 0] - 16) + 3000 * T + rng.normal(0, 1e4, n), 0, 1e5)
    m = DPATE(epsilon=1.0, delta=1e-6, outcome_bounds=(0, 1e5), x_bounds=(0, 70), accountant=PrivacyAccountant(),
              random_state=1).fit(Y, T, X=X)
    assert m.clamped_ and not m.randomized
    s = str(m.summary())
    assert "E-value" not in s and "robustness value" not in s and "no sensitivity analysis" in s
    with pytest.raises(ValueError, match="no sensitivity analysis of a clamped release"):
        m.sensitivity()


@pytest.mark.parametrize("kw, evalue", [(dict(estimator="dim"), True), (dict(randomized=True), False)],
                         ids=["dim", "randomised trial"])     # a declared trial has no unmeasured confounding
def test_clamped_difference_in_means_has_no_sensitivity_analysis(kw, evalue):
    """The difference in means clamps inside its estimate function: a release whose interval reaches the feasible
    range reports `clamped_` (from the released values) and, as the score designs, gives no E-value."""
    from dp_causal_nb import DPATE, PrivacyAccountant
    rng = np.random.default_rng(0)
    n = 300
    T, Y = rng.integers(0, 2, n), rng.uniform(0, 1, n)
    m = DPATE(epsilon=0.05, delta=1e-6, outcome_bounds=(0, 1), accountant=PrivacyAccountant(), random_state=0,
              **kw).fit(Y, T)
    assert tuple(m.conf_int_) == tuple(m.feasible_range_) and m.clamped_
    assert "E-value" not in str(m.summary())
    wide = DPATE(epsilon=50.0, delta=1e-6, outcome_bounds=(0, 1), accountant=PrivacyAccountant(), random_state=0,
                 **kw).fit(Y, T)
    assert not wide.clamped_ and ("E-value" in str(wide.summary())) == evalue
