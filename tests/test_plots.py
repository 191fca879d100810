"""Figures of a release (dp_causal_nb.plots): they draw headless (Agg), label their axes, read fitted estimators
duck-typed (one release per query set for a CATE slice), import matplotlib only when they draw, and refuse bad
input with an error naming the parameter."""
import subprocess, sys
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np, pytest
from dp_causal_nb.plots import (cate_slice_points, gaussian_noise_sd, interval_width, plot_cate_slice,
                                plot_estimate, privacy_accuracy_curve, released_numbers)
from dp_causal_nb.mechanisms import gaussian_sigma


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


class _ATE:
    "What a fitted DPATE publishes."
    def __init__(self, ate, ci): self.ate_, self.conf_int_ = ate, ci


class _OneRelease:
    "A CATE estimator that releases once per query set (DPCATE's 'global' calibration) and counts its releases."
    def __init__(self): self.query, self.releases = None, 0
    def effect(self, X):
        X = np.asarray(X)
        if self.query is None: self.query, self.releases = X.copy(), self.releases + 1
        elif not np.array_equal(self.query, X): raise RuntimeError("a second query set")
        return np.sin(3 * X[:, 0])
    def effect_interval(self, X, alpha=0.05):
        v = self.effect(X)
        return v - 0.2, v + 0.2


def test_module_import_does_not_import_matplotlib():
    code = "import sys, dp_causal_nb.plots, dp_causal_nb.sensitivity; print('matplotlib' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "False"


def test_plot_estimate_rows_and_labels():
    ax = plot_estimate(_ATE(0.42, (0.21, 0.63)), reference={"dim": (0.47, 0.15, 0.79), "non-private": (0.45,)})
    assert [t.get_text() for t in ax.get_yticklabels()] == ["private estimate", "dim", "non-private"]
    assert ax.get_xlabel() == "average treatment effect"
    fig, own = plt.subplots()
    assert plot_estimate((0.1, -0.1, 0.3), own, xlabel="effect") is own and own.get_xlabel() == "effect"
    assert released_numbers(_ATE(0.42, None)) == (0.42, None, None)


def test_plot_cate_slice_reads_one_release_at_the_given_points():
    est = _OneRelease()
    Xq = cate_slice_points((np.zeros(2), np.ones(2)), feature=0, n_points=20)[::-1]   # unsorted on purpose
    ax = plot_cate_slice(est, Xq, feature=0)
    assert est.releases == 1 and np.array_equal(est.query, Xq)
    assert (ax.get_xlabel(), ax.get_ylabel()) == ("covariate 0", "CATE")
    x, y = ax.get_lines()[0].get_data()
    assert np.all(np.diff(x) > 0) and np.allclose(y, np.sin(3 * x))


def test_privacy_accuracy_curve_from_public_arithmetic():
    fn = gaussian_noise_sd(2.0, 1e-6, scale=0.01)
    assert fn(1.0) == pytest.approx(0.01 * gaussian_sigma(1.0, 1e-6, 2.0), rel=1e-3)
    ax = privacy_accuracy_curve(fn, [0.5, 1, 2, 4], sampling_se=0.02, label="n = 1000")
    assert ax.get_xlabel() == "ε" and "interval" in ax.get_ylabel() and ax.get_xscale() == "log"
    y = ax.get_lines()[0].get_ydata()
    assert np.all(np.diff(y) < 0) and y[-1] > interval_width(0.0, 0.02)


@pytest.mark.parametrize("call,word", [
    (lambda: plot_estimate("0.4"), "est_or_numbers"),
    (lambda: plot_estimate((0.4, 0.5, 0.6)), "est_or_numbers"),
    (lambda: plot_estimate((0.4,), reference=[1, 2]), "reference"),
    (lambda: plot_estimate({}), "est_or_numbers"),
    (lambda: plot_cate_slice(object(), np.zeros((5, 2)), 0), "est"),
    (lambda: plot_cate_slice(_OneRelease(), np.zeros((5, 2)), 2), "feature"),
    (lambda: plot_cate_slice(_OneRelease(), np.zeros((1, 2)), 0), "X_slice"),
    (lambda: plot_cate_slice(_OneRelease(), np.full((5, 2), np.nan), 0), "X_slice"),
    (lambda: plot_cate_slice(_OneRelease(), np.zeros((5, 2)), 0, alpha=0), "alpha"),
    (lambda: cate_slice_points((0, 1), 0, n_points=1), "n_points"),
    (lambda: cate_slice_points(None, 0), "x_bounds"),
    (lambda: privacy_accuracy_curve(None, [1, 2]), "noise_sd_fn"),
    (lambda: privacy_accuracy_curve(lambda e: 1.0, [-1, 2]), "epsilons"),
    (lambda: privacy_accuracy_curve(lambda e: 1.0, [1, 2], level=2), "level"),
    (lambda: gaussian_noise_sd(0.0, 1e-6), "sensitivity"),
])
def test_bad_inputs_name_the_parameter(call, word):
    with pytest.raises((ValueError, TypeError), match=word): call()


def test_figures_of_fitted_estimators():
    "plot_estimate reads a fitted DPATE; plot_cate_slice reads a DPCATE that releases once per query set."
    from dp_causal_nb import DPATE, DPCATE, PrivacyAccountant
    from dp_causal_nb.datasets import dataset1
    rng = np.random.default_rng(0)
    T = rng.binomial(1, 0.5, 2000)
    Y = np.clip(0.5 * T + rng.normal(0, 1, 2000), -3, 3)
    d = DPATE(estimator="dim", epsilon=1.0, delta=1e-6, outcome_bounds=(-3, 3), accountant=PrivacyAccountant(),
              random_state=0).fit(Y, T)
    ax = plot_estimate(d, label="private difference in means")
    assert released_numbers(d) == (d.ate_, *d.conf_int_) and ax.get_yticklabels()[0].get_text().startswith("private")
    ds = dataset1(1500, random_state=0)
    c = DPCATE(epsilon=1.0, final="ridge", calibration="global", x_bounds=ds.x_bounds, outcome_bounds=ds.outcome_bounds,
               accountant=PrivacyAccountant(), random_state=0).fit(ds.Y, ds.T, X=ds.X)
    Xq = cate_slice_points(c.x_bounds_, 0, 25)
    ax = plot_cate_slice(c, Xq, 0)
    assert np.allclose(np.sort(ax.get_lines()[0].get_ydata()), np.sort(c.effect(Xq)))   # the same single release
