"""The CATE interval release (the VARIANCE_SHARE statistics, clamping, share=True, the summary's sensitivity block):
refusals on public inputs come before any charge or draw, the statistics stay within their sensitivity on
near-tight neighbours through the estimator's own code, neighbours behave alike apart from the noise, nothing
reachable holds an un-noised statistic, and a clamped (noise-dominated) release carries no sensitivity block."""
import re, warnings
import numpy as np
import pytest
import dp_causal_nb.cate as cm
import dp_causal_nb.functional as fu
from dp_causal_nb.cate import DPCATE, SamplingPart, VARIANCE_SHARE
from dp_causal_nb.core import reproducible_noise
from dp_causal_nb.datasets import dataset1
from dp_causal_nb.accounting import PrivacyAccountant
from dp_causal_nb.functional import release_shareable_cate_function

DS = dataset1(400, random_state=0)
KW = dict(x_bounds=DS.x_bounds, outcome_bounds=DS.outcome_bounds)


def _spy(monkeypatch, module, name):
    "Record every call of module.name (the plan's kind and dim for grid_release, the args otherwise)."
    calls, orig = [], getattr(module, name)
    def spy(*a, **k):
        calls.append(a)
        return orig(*a, **k)
    monkeypatch.setattr(module, name, spy)
    return calls


# --- the 5 % statistics release can be refused AFTER the whole charge and AFTER θ̃ was drawn ------------
@pytest.mark.parametrize("final,cal", [("ridge", "parameter"), ("auto", "auto")])
def test_small_epsilon_statistics_refused_before_charge_and_noise(final, cal, monkeypatch):
    draws = _spy(monkeypatch, cm, "grid_release")
    acc = PrivacyAccountant()
    with pytest.raises(ValueError):
        DPCATE(final=final, calibration=cal, epsilon=0.005, accountant=acc, random_state=0, **KW).fit(
            DS.Y, DS.T, X=DS.X)
    # without the pre-check: the ledger holds ('DPCATE', (0.005, 1e-05)) and θ̃ (final='ridge') / ĉ (final='auto') was drawn,
    # then release_statistics' plan_gaussian raises "needs more than 12288 grid steps"
    assert len(acc.ledger) == 0 and not draws


# --- share=True's pre-charge plan omits the coefficients' grid plan -------------------------------------
def test_share_true_small_epsilon_refused_at_fit():
    acc = PrivacyAccountant()
    est = DPCATE(share=True, epsilon=0.004, accountant=acc, random_state=0, bandwidth=0.4, lam=0.05, **KW)
    try:
        est.fit(DS.Y, DS.T, X=DS.X)
    except ValueError:
        assert len(acc.ledger) == 0
        return
    # without the pre-check: fit charges (0.004, 1e-5); the release then claims the single release, fits on the records, and raises
    with pytest.raises(ValueError, match="grid steps"):
        release_shareable_cate_function(est)
    assert est._released is None, "the single release was consumed by a refusal on public inputs"


# --- What held --------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("final,learner", [("ridge", "r"), ("ridge", "dr"), ("auto", "r")])
def test_statistics_sensitivity_with_theta_fixed(final, learner, monkeypatch):
    "Replace-one neighbours in the second-stage half, θ̃ fixed (adaptive composition): |Δ mean| ≤ width/n."
    cap = {}
    orig = cm.release_statistics
    def spy(values, widths, n, *a, **k):
        cap.update(v=np.array(values, float), w=np.array(widths, float), n=n)
        return orig(values, widths, n, *a, **k)
    monkeypatch.setattr(cm, "release_statistics", spy)
    lo, hi = (np.asarray(b, float) for b in DS.x_bounds)
    def run(X, A, Y, theta=None):
        est = DPCATE(final=final, learner=learner, calibration="parameter" if final == "ridge" else "auto",
                     epsilon=2.0, accountant=PrivacyAccountant(), random_state=1, **KW)
        if theta is not None:
            rel = cm.DPCATE._release_parameter
            monkeypatch.setattr(cm.DPCATE, "_release_parameter",
                                lambda self: (rel(self), setattr(self, "theta_private_", theta.copy())))
        with reproducible_noise(): est.fit(Y, A, X=X)
        if theta is not None: monkeypatch.setattr(cm.DPCATE, "_release_parameter", rel)
        return est, cap["v"].copy()
    est, _ = run(DS.X, DS.T, DS.Y)
    th = est.theta_private_.copy()
    est, v0 = run(DS.X, DS.T, DS.Y, th)
    assert cap["n"] == est.n_stage2_ == len(est.split_[1])      # the public second-stage n
    worst = 0.0
    for j in est.split_[1][:2]:
        for corner in (lo, hi):
            for a in (0, 1):
                for y in DS.outcome_bounds:
                    X, A, Y = DS.X.copy(), DS.T.copy(), DS.Y.copy()
                    X[j], A[j], Y[j] = corner, a, y
                    _, v1 = run(X, A, Y, th)
                    worst = max(worst, float(np.max(np.abs(v1 - v0) * cap["n"] / cap["w"])))
    assert worst <= 1.0


def test_sampling_attribute_holds_released_numbers_only(monkeypatch):
    noisy = _spy(monkeypatch, cm, "release_statistics")
    est = DPCATE(final="ridge", calibration="parameter", epsilon=1.0, accountant=PrivacyAccountant(),
                 random_state=0, **KW).fit(DS.Y, DS.T, X=DS.X)
    s = est.sampling_
    assert isinstance(s, SamplingPart) and s.kind == "released" and s.cov is None
    assert set(s.info) == {"statistics", "sd", "widths"} and s.n == est.n_stage2_
    assert len(noisy) == 1
    # the stored statistics are not the un-noised means
    assert not np.allclose(s.info["statistics"], np.array(noisy[0][0], float), rtol=0, atol=1e-12)


def test_ledger_and_labels():
    acc = PrivacyAccountant()
    est = DPCATE(final="ridge", calibration="parameter", epsilon=1.0, accountant=acc, random_state=0,
                 **KW).fit(DS.Y, DS.T, X=DS.X)
    assert est.spent_by_stage_["total"] == (1.0, 1e-5) and acc.spent == (1.0, 1e-5)
    assert "0.95 parameter, 0.05 sampling statistics" in acc.summary()
    inf = DPCATE(epsilon=np.inf, accountant=PrivacyAccountant(), random_state=0, **KW).fit(DS.Y, DS.T, X=DS.X)
    assert inf.spent_by_stage_["total"] == (np.inf, 0.0) and inf.sampling_.kind == "exact"


def _mask(s): return re.sub(r"[-+]?\d[\d.e+-]*%?", "#", s)


@pytest.mark.parametrize("final,cal", [("auto", "auto"), ("ridge", "parameter"), ("ridge", "global"), ("kernel", "global")])
def test_neighbours_observables_same_structure(final, cal):
    "Replace-one neighbours: same warnings, attribute types/shapes and summary structure (numbers masked)."
    Xq = DS.dgp.sample(6, random_state=3).X
    def observe(X, A, Y):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            est = DPCATE(final=final, calibration=cal, epsilon=1.0, accountant=PrivacyAccountant(), random_state=0,
                         **KW).fit(Y, A, X=X)
            est.effect(Xq)
            est.effect_interval(Xq)
            s = str(est.summary(Xq))
        shapes = {k: (type(v).__name__, np.shape(v) if isinstance(v, np.ndarray) else None)
                  for k, v in vars(est).items()}
        samp = None if est.sampling_ is None else {k: np.shape(v) for k, v in est.sampling_.info.items()}
        return [(x.category.__name__, str(x.message)) for x in w], shapes, samp, _mask(s).count("\n")
    X, A, Y = DS.X.copy(), DS.T.copy(), DS.Y.copy()
    base = observe(X, A, Y)
    j = 7
    X[j], A[j], Y[j] = np.asarray(DS.x_bounds[1], float), 1 - A[j], DS.outcome_bounds[1]
    assert observe(X, A, Y) == base


# --- summary's E-value / robustness value read a CLAMPED interval ------------
def test_summary_robustness_not_read_from_clamped_interval():
    Xq = DS.dgp.sample(5, random_state=1).X
    est = DPCATE(final="ridge", calibration="parameter", epsilon=0.05, accountant=PrivacyAccountant(),
                 random_state=0, **KW).fit(DS.Y, DS.T, X=DS.X)
    s = est.summary(Xq)
    assert s.clamped                                   # privacy-noise sd ~ 800 against a feasible range of ±7.6
    assert s.sensitivity is None                       # a clamped interval says nothing about confounding
