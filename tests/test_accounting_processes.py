"""Charges made in worker processes must reach the user's ledger, or the work is refused.

A copy of an accountant in another process (joblib / GridSearchCV with n_jobs > 1) keeps its owner's process id and
refuses every spend; a default accountant with a budget is not silently replaced by an unlimited one in a worker."""
import numpy as np
import pytest
from joblib import Parallel, delayed
from sklearn.model_selection import GridSearchCV

from dp_causal_nb.accounting import PrivacyAccountant, default_accountant, set_default_accountant
from dp_causal_nb.core import BudgetError
from dp_causal_nb.erm import DPLogisticRegression


def _data(n=200, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, (n, 2))
    y = (X[:, 0] + 0.3 * rng.normal(size=n) > 0).astype(int)
    return X, y


def _fit(model, X, y):
    return model.fit(X, y).coef_


def test_joblib_workers_cannot_charge_a_copy():
    "Before: 4 releases at ε = 0.9 in 2 workers, parent ledger empty. Now every worker's spend raises."
    X, y = _data()
    acc = PrivacyAccountant(epsilon=1.0)
    m = DPLogisticRegression(epsilon=0.9, x_bounds=(-1, 1), accountant=acc)
    with pytest.raises(BudgetError, match="belongs to process"):
        Parallel(n_jobs=2)(delayed(_fit)(m, X[i::4], y[i::4]) for i in range(4))
    assert acc.ledger == [] and acc.spent == (0.0, 0.0)


def test_gridsearch_n_jobs_2_is_refused():
    "Before: GridSearchCV(n_jobs=2) completed 10 fits at ε = 0.5 on a budget of 1 (ledger 0.5). Now it is refused."
    X, y = _data()
    acc = PrivacyAccountant(epsilon=1.0)
    gs = GridSearchCV(DPLogisticRegression(epsilon=0.5, x_bounds=(-1, 1), accountant=acc),
                      {"lam": [1e-3, 1e-2]}, cv=5, n_jobs=2, error_score="raise")
    with pytest.raises(BudgetError, match="belongs to process"):
        gs.fit(X, y)
    assert acc.ledger == []
    # in one process the same search is charged fit by fit and stops at the budget
    gs1 = GridSearchCV(DPLogisticRegression(epsilon=0.5, x_bounds=(-1, 1), accountant=acc),
                       {"lam": [1e-3, 1e-2]}, cv=5, n_jobs=1, error_score="raise")
    with pytest.raises(BudgetError):
        gs1.fit(X, y)
    assert len(acc.ledger) == 2 and acc.spent[0] == pytest.approx(1.0)


def test_default_accountant_refuses_in_workers():
    """Releases in workers that fall back to the default accountant would never reach the parent's ledger (nor its
    budget), whether the workers started before or after the budget was set: they are refused in the worker."""
    X, y = _data()
    Parallel(n_jobs=2)(delayed(np.sum)(X[i::2]) for i in range(2))          # workers exist before any budget is set
    m = DPLogisticRegression(epsilon=0.9, x_bounds=(-1, 1))
    with pytest.raises(BudgetError, match="belongs to process"):               # unlimited default: still refused
        Parallel(n_jobs=2)(delayed(_fit)(m, X[i::4], y[i::4]) for i in range(4))
    old = set_default_accountant(PrivacyAccountant(epsilon=1.0))
    try:
        with pytest.raises(BudgetError, match="belongs to process"):           # reused workers: refused as well
            Parallel(n_jobs=2)(delayed(_fit)(m, X[i::4], y[i::4]) for i in range(4))
        assert default_accountant().ledger == []
    finally:
        set_default_accountant(old)


def test_worker_with_its_own_accountant_may_release():
    "A worker that creates its own accountant releases normally (its ledger is the one it owns)."
    X, y = _data()
    def job(i):
        acc = PrivacyAccountant(epsilon=1.0)
        DPLogisticRegression(epsilon=0.9, x_bounds=(-1, 1), accountant=acc).fit(X[i::2], y[i::2])
        return acc.spent[0]
    assert Parallel(n_jobs=2)(delayed(job)(i) for i in range(2)) == [0.9, 0.9]
