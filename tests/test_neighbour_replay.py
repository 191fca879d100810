"""Invariant 4, replayed on every private fit and release.

A replace-one pair whose record 0 holds an extreme cell (1e300, ±inf, a subnormal, NaN where a schema fills it) on
one side and an ordinary in-bounds value on the other must show the same exception (type and message, or none), the
same warnings (category and message), the same public attribute names and the same ledger entries (labels and
amounts), under the default floating-point and warning settings, under ``np.seterr(all="raise")`` and under
``warnings.simplefilter("error")``. The outcome is declared in two ways, centred on 0 and starting at 0 (a subnormal
then lands next to a bound). Every entry declares public bounds with the clipping policy, so both neighbours are valid
inputs; an entry refusing both alike would pass, one refusing one of them fails.

A new estimator joins the registry (tests/_registry.py) with one line: a name, a factory ``make(accountant, outcome_bounds)``
with small public parameters, and a function ``fit(obj, Y, T, X)`` returning the published object."""
import contextlib, warnings
import numpy as np
import pandas as pd
import pytest

from dp_causal_nb.accounting import PrivacyAccountant, set_default_accountant
from _registry import CASES, CLI_ROOT, EXTREMES, MODES, OUTCOME_BOUNDS, REGISTRY, _records


@pytest.fixture(autouse=True, scope="module")
def _cli_root(tmp_path_factory):
    CLI_ROOT["path"] = tmp_path_factory.mktemp("cli")


# --- the replay ------------------------------------------------------------------------------------------------------
def _ledger(spends) -> list:
    "Labels and amounts of the ledger entries, parallel blocks with their parts."
    return [(s.label, tuple(map(float, s.cost)), _ledger(s.items),
             sorted((str(p), _ledger([v])) for p, v in (s.parts or {}).items())) for s in spends]

def _published(obj) -> list:
    "The public attribute names of a published object."
    return sorted(k for k in vars(obj) if not k.startswith("_"))

@contextlib.contextmanager
def _mode(mode):
    "The user's global settings around a fit (np.errstate is the scoped form of np.seterr)."
    with np.errstate(**({"all": "raise"} if mode == "seterr_raise" else {})), warnings.catch_warnings():
        if mode == "warnings_error": warnings.simplefilter("error")
        yield

def observe(case, yb, Y, T, X, mode):
    "Everything a user sees of one fit: exception, warnings, public attribute names, ledger."
    acc = PrivacyAccountant()
    old = set_default_accountant(acc)                # the CLI (and a release given no accountant) charges the default
    if case.frame: X = pd.DataFrame({"x0": X[:, 0], "x1": X[:, 1]})
    try:
        with warnings.catch_warnings(record=True) as rec:
            warnings.simplefilter("always")
            try:
                with _mode(mode): out, err = case.fit(case.make(acc, yb), Y, T, X), None
            except Exception as e: out, err = None, (type(e).__name__, str(e))
    finally: set_default_accountant(old)
    return dict(exception=err, warnings=[(w.category.__name__, str(w.message)) for w in rec],
                attributes=None if out is None else _published(out), ledger=_ledger(acc.ledger))

def _neighbours(case):
    "(cell, value) of record 0 on the extreme side: the outcome and covariate 0; NaN where a schema fills it."
    values = EXTREMES + ((np.nan,) if case.frame else ())
    return [(cell, v) for cell in case.cells for v in values if not (cell == "Y" and np.isnan(v))]

# The default settings replay in the default run; the two strict global settings with --run-slow (as CI runs).
@pytest.mark.parametrize("mode", [m if m == "default" else pytest.param(m, marks=pytest.mark.slow) for m in MODES])
@pytest.mark.parametrize("yb", OUTCOME_BOUNDS, ids=["centred", "from 0"])
@pytest.mark.parametrize("case", REGISTRY, ids=[c.name for c in REGISTRY])
def test_neighbours_replay_alike(case, yb, mode):
    Y, T, X = _records()
    ref = observe(case, yb, Y, T, X, mode)
    bad = {}
    for cell, v in _neighbours(case):
        Y1, X1 = Y.copy(), X.copy()
        if cell == "Y": Y1[0] = v
        else: X1[0, 0] = v
        got = observe(case, yb, Y1, T, X1, mode)
        if got != ref: bad[f"{cell}={v!r}"] = {k: got[k] for k in got if got[k] != ref[k]}
    assert not bad, f"{case.name} ({mode}): reference {ref}\ndiffers for {bad}"


def test_the_replay_sees_a_difference():
    "Negative control: a fit that refuses one neighbour only (an unguarded finiteness check) is reported."
    def fussy(m, Y, T, X):
        if not np.all(np.isfinite(Y)): raise ValueError("Y has an infinite value")
        return m.fit(X, Y)
    case = CASES["DPRidgeRegression"]._replace(fit=fussy)
    Y, T, X = _records()
    Y1 = Y.copy()
    Y1[0] = np.inf
    a, b = (observe(case, OUTCOME_BOUNDS[0], Yv, T, X, "default") for Yv in (Y, Y1))
    assert a["exception"] is None and b["exception"] == ("ValueError", "Y has an infinite value")
    assert a["ledger"] and not b["ledger"] and a["attributes"] and b["attributes"] is None


def test_every_case_fits_its_reference():
    "The replay compares fits, not refusals: every entry fits the ordinary records under the default settings."
    Y, T, X = _records()
    refused = {c.name: o["exception"] for c in REGISTRY
               if (o := observe(c, OUTCOME_BOUNDS[0], Y, T, X, "default"))["exception"] is not None}
    assert not refused, refused
