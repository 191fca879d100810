"""The fold design's default nuisance models (`PenalisedLogistic`, `LeastSquares`, notebook 11) fit scikit-learn's
default objectives in numpy: their predictions match scikit-learn's fits, the fold ensemble built on them matches the
one built on scikit-learn's models, and scikit-learn models given by the user still work (that a job with the
defaults imports no scikit-learn is tests/test_cli.py's)."""
import warnings
import numpy as np
import pytest
from scipy.special import expit
from sklearn.base import clone as sk_clone
from sklearn.linear_model import LinearRegression, LogisticRegression
from sklearn.tree import DecisionTreeRegressor

from dp_causal_nb.ate import DPATE, LeastSquares, PenalisedLogistic, cross_fit_ate
from dp_causal_nb.core import clone, reproducible_noise
from dp_causal_nb.datasets import ate_k_study


def _problem(seed):
    "A seeded logistic / linear problem with covariates on different scales."
    rng = np.random.default_rng(seed)
    n, d = int(rng.integers(30, 400)), int(rng.integers(1, 5))
    X = rng.normal(size=(n, d)) * rng.uniform(0.1, 3, d) + rng.normal(size=d)
    t = (rng.uniform(size=n) < expit(X @ rng.normal(size=d) + rng.normal())).astype(int)
    y = X @ rng.normal(size=d) + rng.normal(size=n)
    return X, t, y


@pytest.mark.parametrize("seed", range(8))
def test_logistic_matches_sklearn(seed):
    X, t, _ = _problem(seed)
    ours = PenalisedLogistic().fit(X, t)
    tight = LogisticRegression(tol=1e-12, max_iter=1000).fit(X, t)      # the same objective, solved tightly
    assert np.abs(ours.predict_proba(X) - tight.predict_proba(X)).max() < 1e-6
    assert np.abs(ours.coef_ - tight.coef_).max() < 1e-4 and np.abs(ours.intercept_ - tight.intercept_).max() < 1e-4
    default = LogisticRegression(solver="newton-cholesky").fit(X, t)     # the former default: its tol=1e-4
    assert np.abs(ours.predict_proba(X) - default.predict_proba(X)).max() < 1e-2
    assert (ours.predict(X) == tight.predict(X)).mean() > 0.99


def test_logistic_penalty_scales_with_C_and_spares_the_intercept():
    X, t, _ = _problem(11)
    for C in (0.01, 1.0, 100.0):
        sk = LogisticRegression(C=C, tol=1e-12, max_iter=1000).fit(X, t)
        assert np.abs(PenalisedLogistic(C=C).fit(X, t).predict_proba(X) - sk.predict_proba(X)).max() < 1e-6
    # a strong penalty shrinks the slopes to ~0, never the intercept: π → the treated share
    m = PenalisedLogistic(C=1e-9).fit(X, t)
    assert np.abs(m.coef_).max() < 1e-5 and abs(expit(m.intercept_[0]) - t.mean()) < 1e-5


@pytest.mark.parametrize("seed", range(8))
def test_least_squares_matches_sklearn(seed):
    X, _, y = _problem(seed)
    ours, sk = LeastSquares().fit(X, y), LinearRegression().fit(X, y)
    assert np.abs(ours.predict(X) - sk.predict(X)).max() < 1e-8 * (1 + np.abs(y).max())
    Xd = np.c_[X, X[:, :1]]                                         # rank deficient: the same minimum-norm fit
    assert np.abs(LeastSquares().fit(Xd, y).predict(Xd) - LinearRegression().fit(Xd, y).predict(Xd)).max() < 1e-8


def test_logistic_labels_refusal_and_warning():
    X, t, _ = _problem(2)
    labels = np.where(t == 1, "treated", "control")
    m = PenalisedLogistic().fit(X, labels)
    assert list(m.classes_) == ["control", "treated"]
    assert (m.predict(X) == np.where(m.predict_proba(X)[:, 1] > 0.5, "treated", "control")).all()
    with pytest.raises(ValueError, match="two classes"): PenalisedLogistic().fit(X, np.ones(len(t)))
    with pytest.warns(RuntimeWarning, match="no convergence"): PenalisedLogistic(max_iter=1).fit(X, t)


def test_defaults_clone_like_sklearn_estimators():
    m = PenalisedLogistic(C=2.0)
    for c in (clone(m), sk_clone(m)):
        assert type(c) is PenalisedLogistic and c.get_params() == m.get_params() and not hasattr(c, "coef_")
    assert type(sk_clone(LeastSquares())) is LeastSquares


@pytest.mark.parametrize("estimator", ["aipw", "ipw", "g"])
def test_fold_ensemble_matches_sklearn_models(estimator):
    "The default fold ensemble equals the one on scikit-learn's models solved tightly (scores to 1e-6)."
    ds = ate_k_study(600, random_state=1)
    kw = dict(X=ds.X, estimator=estimator, n_folds=6, outcome_bounds=ds.outcome_bounds, random_state=0)
    ours = cross_fit_ate(ds.Y, ds.T, **kw)
    sk = cross_fit_ate(ds.Y, ds.T, propensity_model=LogisticRegression(tol=1e-12, max_iter=1000),
                       outcome_model=LinearRegression(), **kw)
    assert np.abs(ours.scores - sk.scores).max() < 1e-6 and abs(ours.ate - sk.ate) < 1e-7


def test_user_sklearn_models_are_used():
    "A scikit-learn model given by the user is cloned and fitted per fold (the release runs; its values differ)."
    ds = ate_k_study(400, random_state=2)
    kw = dict(X=ds.X, n_folds=5, outcome_bounds=ds.outcome_bounds, random_state=0)
    tree = DecisionTreeRegressor(max_depth=2, random_state=0)
    a, b = cross_fit_ate(ds.Y, ds.T, **kw), cross_fit_ate(ds.Y, ds.T, outcome_model=tree, **kw)
    assert np.abs(a.scores - b.scores).max() > 1e-3 and not hasattr(tree, "tree_")   # a clone was fitted
    with reproducible_noise(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fits = [DPATE(mu=1.0, n_folds=5, outcome_bounds=ds.outcome_bounds, random_state=0, **m).fit(ds.Y, ds.T, X=ds.X)
                for m in ({}, dict(propensity_model=LogisticRegression(C=0.5), outcome_model=tree))]
    assert all(np.isfinite(f.ate_) for f in fits) and fits[0].mu_spent_ == fits[1].mu_spent_
