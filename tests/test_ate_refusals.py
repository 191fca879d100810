"""DPATE refuses what its public inputs rule out before any charge, and no error it raises reaches the release's frames
(the records, the scores, the un-noised estimate, the secret noise stream)."""
import warnings
import numpy as np
import pytest
from dp_causal_nb.accounting import PrivacyAccountant
from dp_causal_nb.ate import DPATE
from dp_causal_nb.erm import DPRidgeRegression

def _data(n=2000, seed=0):
    r = np.random.default_rng(seed)
    X, T = r.uniform(0, 1, (n, 3)), r.integers(0, 2, n)
    return np.clip(0.5 * T + X[:, 0] + r.normal(0, 0.3, n), -3, 3), T, X

def _frames_hold_release_state(exc) -> list:
    "Library frames of the traceback that hold a record-sized array or a random state."
    tb, bad = exc.__traceback__, []
    while tb is not None:
        if "dp_causal_nb" in tb.tb_frame.f_code.co_filename:
            for k, v in tb.tb_frame.f_locals.items():
                if isinstance(v, (np.random.Generator, np.random.SeedSequence, np.random.BitGenerator)) or \
                        (isinstance(v, np.ndarray) and v.size >= 50) or type(v).__name__ in ("FinalRelease", "Scores"):
                    bad.append((tb.tb_frame.f_code.co_name, k))
        tb = tb.tb_next
    return bad

@pytest.mark.parametrize("kw", [dict(design="fold"), dict(x_bounds=(0, 1), score_clip="none"),
                                dict(x_bounds=(0, 1), stderr_share=0.1)])
def test_interval_level_refused_before_any_charge(kw):
    "A level the private interval cannot reach (its p1 = 0.01 of the miscoverage) is refused before the charge."
    Y, T, X = _data()
    acc = PrivacyAccountant()
    with pytest.raises(ValueError, match="level must be below 0.99") as e:
        DPATE(epsilon=1.0, delta=1e-6, outcome_bounds=(-3, 3), level=0.995, accountant=acc, random_state=0,
              **kw).fit(Y, T, X=X)
    assert acc.ledger == [] and _frames_hold_release_state(e.value) == []
    assert e.value.__context__ is None and e.value.__cause__ is None

def test_an_error_after_the_charge_reaches_no_release_frame(monkeypatch):
    "Any error raised inside the release (here forced in the final stage) is re-raised cut from the release's frames."
    import dp_causal_nb.ate as ate
    def boom(*a, **k): raise FloatingPointError("forced failure in the final stage")
    monkeypatch.setattr(ate, "final_interval", boom)
    Y, T, X = _data()
    acc = PrivacyAccountant()
    with pytest.raises(FloatingPointError, match="forced failure") as e:
        DPATE(epsilon=1.0, delta=1e-6, outcome_bounds=(-3, 3), x_bounds=(0, 1), accountant=acc,
              random_state=0).fit(Y, T, X=X)
    assert acc.ledger != []                                   # charged: the failure came after the charge
    assert _frames_hold_release_state(e.value) == [] and e.value.__context__ is None

def test_fold_design_refuses_dp_nuisance_models():
    """The fold design's models are non-private (one per fold): a DP model would charge its own budget per fold and
    warn with per-fold counts; it is refused before any charge, warning nothing."""
    Y, T, X = _data(400)
    acc = PrivacyAccountant()
    dp_model = DPRidgeRegression(epsilon=1.0, delta=0.02, outcome_bounds=(-3, 3), x_bounds=(0, 1))
    with warnings.catch_warnings(record=True) as got, pytest.raises(ValueError, match="fold design fits non-private"):
        warnings.simplefilter("always")
        DPATE(epsilon=1.0, delta=1e-6, outcome_bounds=(-3, 3), design="fold", outcome_model=dp_model,
              accountant=acc).fit(Y, T, X=X)
    assert acc.ledger == [] and got == []

def test_design_rule_reads_the_declared_penalty():
    "With a declared nuisance_lam the rule's proxy uses it (Λ/(s + Λ)); the default Gram ridge lets the models adjust."
    from dp_causal_nb.ate import score_budget
    from dp_causal_nb.mechanisms import gdp_mu
    Y, T, X = _data(3425)
    d = X.shape[1]
    sb = score_budget("aipw", "crossfit", 3425, d, (gdp_mu(1.0, 1e-6), 1.0, 1e-6), lam=1e-3)
    assert sb.shrink == pytest.approx(1e-3 / (1 / (6 * (d + 1)) + 1e-3), rel=1e-12)
    m = DPATE(epsilon=1.0, delta=1e-6, outcome_bounds=(-3, 3), x_bounds=(0, 1), nuisance_lam=1e-3,
              accountant=PrivacyAccountant(), random_state=0).fit(Y, T, X=X)
    assert m.design_ == "crossfit" and m.nuisance_shrinkage_ == pytest.approx(sb.shrink, rel=1e-12)
    m2 = DPATE(epsilon=1.0, delta=1e-6, outcome_bounds=(-3, 3), x_bounds=(0, 1),
               accountant=PrivacyAccountant(), random_state=0).fit(Y, T, X=X)
    assert m2.design_ == "crossfit" and sb.shrink < m2.nuisance_shrinkage_ < 0.99   # the default Gram ridge adjusts

def test_huge_public_bounds_give_a_finite_interval_and_a_summary():
    "Outcome bounds near the library's limit: the clipped second-moment bound does not overflow; summary() works."
    Y, T, X = _data()
    m = DPATE(epsilon=4.0, delta=1e-6, outcome_bounds=(-2.5e99, 2.5e99), x_bounds=(0, 1),
              accountant=PrivacyAccountant(), random_state=0).fit(Y * 1e98, T, X=X)
    assert m.stderr_ is None or np.isfinite(m.stderr_)
    assert "DP-ATE" in m.summary()
