"""Issue 18 P3: charges made in worker processes must reach the user's ledger, or the work is refused.

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


def test_default_budget_not_bypassed_in_workers():
    "With a finite default budget, workers started afterwards refuse releases charged to their default accountant."
    from joblib.externals.loky import get_reusable_executor
    get_reusable_executor().shutdown(wait=True)        # workers must start after the budget is set
    X, y = _data()
    old = set_default_accountant(PrivacyAccountant(epsilon=1.0))
    try:
        m = DPLogisticRegression(epsilon=0.9, x_bounds=(-1, 1))
        with pytest.raises(BudgetError, match="belongs to process"):
            Parallel(n_jobs=2)(delayed(_fit)(m, X[i::4], y[i::4]) for i in range(4))
        assert default_accountant().ledger == []
    finally:
        set_default_accountant(old)
        get_reusable_executor().shutdown(wait=True)
