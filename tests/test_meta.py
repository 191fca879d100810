"""DP meta-learners (audits: tests/test_audit_meta*.py): DP-EBM as a base learner (optional extra `[ebm]`), the
no-privacy-warning guarantee of the pipeline, and the single parallel-composition charge."""
import warnings
import numpy as np
import pytest
from dp_causal_nb.accounting import PrivacyAccountant
from dp_causal_nb.core import PrivacyLeakWarning
from dp_causal_nb.meta import DPSLearner, DPTLearner, DPDRLearner, DPRLearner, DPXLearner

def _data(n=600, seed=0):
    r = np.random.default_rng(seed); X = r.uniform(-1, 1, (n, 2)); T = (r.uniform(size=n) < 0.5).astype(int)
    Y = np.clip(X[:, 1] + T * (1 + X[:, 0]) + 0.3 * r.standard_normal(n), -4, 4)
    return Y, T, X

try:
    from interpret.privacy import DPExplainableBoostingClassifier, DPExplainableBoostingRegressor
    HAVE_EBM = True
except ImportError:
    HAVE_EBM = False
ebm = pytest.mark.skipif(not HAVE_EBM, reason="DP-EBM needs the optional extra: pip install 'dp_causal_nb[ebm]' (interpret)")

def _ebm_kw():
    return dict(propensity_model=DPExplainableBoostingClassifier(n_jobs=1, max_rounds=30),
                outcome_model=DPExplainableBoostingRegressor(n_jobs=1, max_rounds=30),
                final_model=DPExplainableBoostingRegressor(n_jobs=1, max_rounds=30))

@ebm
@pytest.mark.parametrize("L", [DPDRLearner, DPSLearner])
def test_ebm_pipeline_never_warns_privacy_violation(L):
    Y, T, X = _data()
    acc = PrivacyAccountant(epsilon=1.0, delta=1e-5)
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        m = L(outcome_bounds=(-4, 4), x_bounds=(-1, 1), epsilon=1.0, delta=1e-5, accountant=acc, **_ebm_kw())
        m.fit(Y, T, X=X)   # random_state=None: interpret draws its own noise entropy
    msgs = [str(w.message) for w in rec]
    assert not any("privacy" in s.lower() for s in msgs), msgs
    assert not any(issubclass(w.category, PrivacyLeakWarning) for w in rec)
    assert acc.spent == (1.0, 1e-5) and len(acc.ledger) == 1          # one parallel-composition charge
    for name, mod in m.models_.items():
        assert (mod.epsilon, mod.delta) == (1.0, 1e-5) and mod.privacy_bounds is not None
        if "privacy_target_min" in mod.get_params():   # regressors: public target range given
            assert mod.privacy_target_min is not None and mod.privacy_target_max is not None
    assert np.all(np.isfinite(m.effect(X[:5])))

@ebm
def test_ebm_control_warns_without_public_bounds():
    "The control: DP-EBM as the paper's public code calls it (no bounds) does warn, so the test above can fail."
    Y, T, X = _data()
    with pytest.warns(UserWarning, match="(?i)possible privacy violation"):
        DPExplainableBoostingRegressor(n_jobs=1, max_rounds=30).fit(X, Y)

@ebm
def test_ebm_int_seed_is_reported():
    "An int random_state makes interpret's noise deterministic: the pipeline re-raises its warning as PrivacyLeakWarning."
    Y, T, X = _data()
    with pytest.warns(PrivacyLeakWarning, match="deterministic"):
        DPSLearner(outcome_bounds=(-4, 4), x_bounds=(-1, 1), epsilon=1.0, accountant=PrivacyAccountant(), random_state=0,
                   outcome_model=DPExplainableBoostingRegressor(n_jobs=1, max_rounds=30)).fit(Y, T, X=X)

@ebm
@pytest.mark.parametrize("L", [DPTLearner, DPXLearner, DPRLearner])
def test_ebm_refused_in_weighted_modules(L):
    "Weighted modules refuse DP-EBM before anything is charged or fitted (interpret refuses zero weights)."
    Y, T, X = _data(); acc = PrivacyAccountant()
    with pytest.raises(ValueError, match="weighted module"):
        L(outcome_bounds=(-4, 4), x_bounds=(-1, 1), epsilon=1.0, accountant=acc, **_ebm_kw()).fit(Y, T, X=X)
    assert acc.ledger == []

def test_charge_is_max_not_sum():
    Y, T, X = _data()
    for L, k in ((DPSLearner, 1), (DPTLearner, 2), (DPXLearner, 5), (DPRLearner, 3), (DPDRLearner, 3)):
        acc = PrivacyAccountant(epsilon=1.0, delta=1e-5)
        L(outcome_bounds=(-4, 4), x_bounds=(-1, 1), epsilon=1.0, accountant=acc, random_state=1).fit(Y, T, X=X)
        assert acc.spent == (1.0, 1e-5) and len(acc.ledger) == 1 and len(acc.ledger[0].parts) == k

def test_fitted_learner_holds_no_records_and_clones():
    "Invariant 5: the published learner's size does not grow with n (no records); sklearn clone/get_params work."
    import pickle
    from sklearn.base import clone
    sizes = []
    for n in (400, 4000):
        Y, T, X = _data(n)
        for L in (DPSLearner, DPTLearner, DPXLearner, DPRLearner, DPDRLearner):
            m = L(outcome_bounds=(-4, 4), x_bounds=(-1, 1), epsilon=1.0, accountant=PrivacyAccountant(),
                  random_state=1).fit(Y, T, X=X)
            m.charged_to_ = None   # the ledger is shared state, not part of the release
            sizes.append((L.__name__, n, len(pickle.dumps(m))))
            c = clone(m); assert c.get_params() == m.get_params() and not hasattr(c, "models_")
    small = {l: s for l, n, s in sizes if n == 400}
    for l, n, s in sizes:
        if n == 4000: assert abs(s - small[l]) < 200, (l, s, small[l])   # only the digits of n in part_sizes_ differ

@pytest.mark.parametrize("L", [DPXLearner])   # five modules in two stages; one case: worker start-up is slow
def test_joblib_workers_same_result(L):
    "Seeds per module come from random_state and the part names, never from worker order: n_jobs=2 changes nothing."
    Y, T, X = _data()
    kw = dict(outcome_bounds=(-4, 4), x_bounds=(-1, 1), epsilon=1.0, random_state=5)
    e1 = L(**kw, accountant=PrivacyAccountant()).fit(Y, T, X=X).effect(X)
    acc = PrivacyAccountant(epsilon=1.0, delta=1e-5)
    e2 = L(**kw, accountant=acc, n_jobs=2).fit(Y, T, X=X).effect(X)
    np.testing.assert_array_equal(e1, e2)
    assert acc.spent == (1.0, 1e-5)   # charged in the caller's process, once

def test_stratified_split_moves_other_records_ours_does_not():
    """Why a split stratified on T breaks Theorem 6 (deterministic): on replace-one neighbours that differ only in T_0,
    sklearn's stratified split (as in the paper's public code) moves OTHER records between parts, so one record's change
    reaches several modules; the library's split depends on n, the ratios and the seed only and moves none."""
    from sklearn.model_selection import train_test_split
    from dp_causal_nb.meta import split_indices
    n = 200; T0 = np.arange(n) % 2; T1 = T0.copy(); T1[0] = 1 - T1[0]
    part = lambda tr: np.isin(np.arange(n), tr)
    a = part(train_test_split(np.arange(n), test_size=0.5, stratify=T0, random_state=0)[0])
    b = part(train_test_split(np.arange(n), test_size=0.5, stratify=T1, random_state=0)[0])
    assert (a[1:] != b[1:]).sum() > 10                      # many other records change part

def test_learners_partition_is_data_free(monkeypatch):
    "The partition a learner draws is identical on neighbours that differ in T_0 (spy on meta.split_indices)."
    import dp_causal_nb.meta as meta
    seen, orig = [], meta.split_indices
    def spy(n, ratios, random_state=None):
        out = orig(n, ratios, random_state); seen.append(out); return out
    monkeypatch.setattr(meta, "split_indices", spy)
    Y, T, X = _data(300); T1 = T.copy(); T1[0] = 1 - T1[0]
    for L in (DPTLearner, DPXLearner, DPDRLearner):
        seen.clear()
        for t in (T, T1):
            L(outcome_bounds=(-4, 4), x_bounds=(-1, 1), epsilon=1.0, accountant=PrivacyAccountant(),
              random_state=3).fit(Y, t, X=X)
        assert len(seen) == 2 and all(np.array_equal(a, b) for a, b in zip(*seen))
