"""Every `summary()` of the library returns one type, `Summary`: the report's text (a `str`) and its rows, the same
for every estimator of the registry and for the accountants."""
import warnings

import numpy as np
import pandas as pd
import pytest

from dp_causal_nb.accounting import GDPAccountant, PrivacyAccountant
from dp_causal_nb.summary import Summary
from _registry import OUTCOME_BOUNDS, Q, REGISTRY, _records

CASES = [c for c in REGISTRY if not c.name.startswith("cli ")]


def _summary(case):
    Y, T, X = _records()
    if case.frame: X = pd.DataFrame({"x0": X[:, 0], "x1": X[:, 1]})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = case.fit(case.make(PrivacyAccountant(), OUTCOME_BOUNDS[0]), Y, T, X)
        if not hasattr(out, "summary"): return None
        Qx = pd.DataFrame({"x0": Q[:, 0], "x1": Q[:, 1]}) if case.frame else Q
        try: return out.summary(Qx)          # a CATE release is summarised over public query points
        except TypeError: return out.summary()


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_summary_is_one_type(case):
    s = _summary(case)
    if s is None: pytest.skip(f"{case.name} publishes no summary()")
    assert type(s) is Summary and str(s).strip(), case.name
    frame = s.to_frame()
    assert len(frame) == len(s.rows) >= 1, case.name
    assert np.isfinite(frame.select_dtypes("number").to_numpy(dtype=float)[:, :1]).all(), case.name


def test_how_many_estimators_have_a_summary():
    "The check above is not vacuous: most entries publish a summary()."
    assert sum(_summary(c) is not None for c in CASES) >= 15


@pytest.mark.parametrize("acc", [PrivacyAccountant(), GDPAccountant()], ids=["(ε, δ)", "GDP"])
def test_accountant_summary(acc):
    s = acc.summary()
    assert type(s) is Summary and s.startswith(type(acc).__name__)
    assert list(s.to_frame().columns) == ([] if not s.rows else list(s.rows[0]))
