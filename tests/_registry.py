"""The registry of every public estimator and release, with small public parameters: shared by the neighbour replay
(tests/test_neighbour_replay.py) and the release-identity check (tests/test_release_identity.py).

A new estimator joins with one line: a name, a factory ``make(accountant, outcome_bounds)`` with small public
parameters, and a function ``fit(obj, Y, T, X)`` returning the published object."""
import contextlib, functools, io, json, tempfile, types, warnings
from collections import namedtuple
from pathlib import Path
import numpy as np
import pandas as pd

from dp_causal_nb import cli
from dp_causal_nb.ate import DPATE
from dp_causal_nb.cate import DPCATE
from dp_causal_nb.dim import DPDifferenceInMeans
from dp_causal_nb.lin import DPLinAdjustment
from dp_causal_nb.ht import DPHorvitzThompson
from dp_causal_nb.erm import DPLogisticRegression, DPRidgeRegression
from dp_causal_nb.functional import (private_kernel_function, release_cate_function, release_shareable_cate_function,
                                     release_shareable_function)
from dp_causal_nb.itr import PrivateITR, weights_ignored
from dp_causal_nb.meta import DPDRLearner, DPRLearner, DPSLearner, DPTLearner, DPXLearner
from dp_causal_nb.rkhs import AbsoluteLoss
from dp_causal_nb.schema import Schema
from dp_causal_nb.two_stage import CompositionBaselineClassifier, DP2ERMClassifier
from dp_causal_nb.weights import BalancingWeights

N, ORDINARY = 200, 0.25                              # tiny public size; record 0's value on the reference side
XB = (-1.0, 1.0)                                     # declared public bounds of every covariate
OUTCOME_BOUNDS = ((-2.0, 2.0), (0.0, 4.0))           # two declarations of the outcome's bounds
EXTREMES = (0.5, 1e300, np.inf, -np.inf, 1e-320)     # 0.5: the in-bounds control
SCHEMA = Schema({"x0": XB, "x1": XB})                # a missing covariate cell takes the public fill (the midpoint)
Q = np.array([[-0.5, 0.0], [0.0, 0.5], [0.5, -0.5]])   # public query points
MODES = ("default", "seterr_raise", "warnings_error")
KW = dict(epsilon=2.0, delta=1e-5, random_state=0)

Case = namedtuple("Case", "name make fit cells frame", defaults=(("Y", "X"), False))


# --- factories and fits ----------------------------------------------------------------------------------------------
def _cate(final, x_bounds=XB, **kw):
    return lambda acc, yb: DPCATE(final=final, x_bounds=x_bounds, outcome_bounds=yb, out_of_bounds="clip",
                                  accountant=acc, **KW, **kw)

def _meta(cls, x_bounds=XB):
    return lambda acc, yb: cls(outcome_bounds=yb, x_bounds=x_bounds, accountant=acc, **KW)

def _ate(design, x_bounds=XB):
    return lambda acc, yb: DPATE(design=design, x_bounds=x_bounds, outcome_bounds=yb, out_of_bounds="clip",
                                 accountant=acc, **KW)

def _functional(release, **kw):
    "A release function given its public parameters; `fit` hands it (X, φ = Y)."
    return lambda acc, yb: functools.partial(release, bandwidth=0.5, lam=0.1, loss=AbsoluteLoss(), x_bounds=XB,
                                             epsilon=2.0, delta=1e-5, accountant=acc, random_state=0, **kw)

def _fit_effect(m, Y, T, X):
    "Fit, then release at the public query points (the CATE estimators' release happens in `effect`)."
    m.fit(Y, T, X=X)
    m.effect(Q)
    return m

def _fit_release(release, **kw):
    "Fit the estimator, then make the release from it."
    return lambda m, Y, T, X: release(m.fit(Y, T, X=X), random_state=1, **kw)

def _fit_ate(m, Y, T, X): return m.fit(Y, T, X=X)
def _fit_2erm(m, Y, T, X): return m.fit(X, T, T=T, outcome=Y)
def _fit_itr(m, Y, T, X): return m.fit(Y, T, X=X)
def _fit_weights(bw, Y, T, X): return types.SimpleNamespace(certificate=bw.compute(T, X)[1])
def _fit_ridge(m, Y, T, X): return m.fit(X, Y)
def _fit_logistic(m, Y, T, X): return m.fit(X, T)
def _fit_functional(f, Y, T, X): return f(X, Y)


# --- CLI jobs: CSV files in a temporary folder (a test module sets CLI_ROOT["path"]) -----------------------------------
CLI_ROOT = {}

class CLIExit(Exception):
    "A CLI job that exited with an error: its code and its stderr, compared like an exception."

def _csv(path, Y, T, X):
    "The records as a CSV (repr keeps every float exactly: 1e-320, inf, nan)."
    rows = "".join(f"{y!r},{t},{a!r},{b!r}\n" for y, t, (a, b) in zip(Y.tolist(), T.tolist(), X.tolist()))
    Path(path).write_text("y,t,x0,x1\n" + rows)
    return str(path)

def _cli(*args):
    "A CLI job: the factory makes a fresh folder; `fit` writes the records there as CSV and runs `cli.main` on them."
    def make(acc, yb):
        return Path(tempfile.mkdtemp(dir=CLI_ROOT["path"])), yb
    def fit(job, Y, T, X):
        folder, yb = job
        if isinstance(X, pd.DataFrame): X = X.to_numpy()
        Path(folder / "q.csv").write_text("x0,x1\n" + "".join(f"{a!r},{b!r}\n" for a, b in Q.tolist()))
        SCHEMA.to_json(folder / "schema.json")
        names = dict(data=_csv(folder / "data.csv", Y, T, X), q=folder / "q.csv", schema=folder / "schema.json",
                     save=folder / "f.npz", yb=f"{yb[0]!r},{yb[1]!r}")
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = cli.main([a.format(**names) for a in args])
        if code != 0: raise CLIExit(code, err.getvalue())
        for line in err.getvalue().splitlines(): warnings.warn(line, UserWarning)   # stderr of a run that succeeded
        return types.SimpleNamespace(**dict.fromkeys(json.loads(out.getvalue())))  # the keys of the JSON release
    return make, fit

_ATE = ("ate", "{data}", "--outcome", "y", "--treatment", "t", "--outcome-bounds", "{yb}", "--epsilon", "2",
        "--delta", "1e-5", "--clip", "--seed", "0", "--json")
_CATE = ("cate", "{data}", "--outcome", "y", "--treatment", "t", "--outcome-bounds", "{yb}", "--epsilon", "2",
         "--delta", "1e-5", "--clip", "--seed", "0", "--json")


# --- the registry: one line (or one statement) per estimator or release ----------------------------------------------
REGISTRY = [
    Case("DPATE fold", _ate("fold"), _fit_ate),
    Case("DPATE split", _ate("split"), _fit_ate),
    Case("DPATE split, schema", _ate("split", SCHEMA), _fit_ate, frame=True),
    Case("DPATE crossfit", _ate("crossfit"), _fit_ate),
    Case("DPATE effect on the treated, split",
         lambda acc, yb: DPATE(estimand="att", design="split", x_bounds=XB, outcome_bounds=yb, out_of_bounds="clip",
                               accountant=acc, nuisance_lam=0.01, **KW), _fit_ate),
    Case("DPATE effect on the treated, crossfit",
         lambda acc, yb: DPATE(estimand="att", design="crossfit", x_bounds=XB, outcome_bounds=yb,
                               out_of_bounds="clip", nuisance_lam=0.01, accountant=acc, **KW), _fit_ate),
    Case("DPATE randomized (difference in means)",
         lambda acc, yb: DPATE(randomized=True, outcome_bounds=yb, out_of_bounds="clip", accountant=acc, **KW),
         _fit_ate, cells=("Y",)),
    Case("DPDifferenceInMeans", lambda acc, yb: DPDifferenceInMeans(outcome_bounds=yb, accountant=acc, **KW), _fit_ate,
         cells=("Y",)),
    Case("DPLinAdjustment", lambda acc, yb: DPLinAdjustment(outcome_bounds=yb, x_bounds=XB, accountant=acc, **KW),
         _fit_ate),
    Case("DPHorvitzThompson", lambda acc, yb: DPHorvitzThompson(outcome_bounds=yb, assignment_probability=0.5,
                                                                accountant=acc, **KW), _fit_ate, cells=("Y",)),
    Case("DPHorvitzThompson, covariate slope",
         lambda acc, yb: DPHorvitzThompson(outcome_bounds=yb, assignment_probability=0.5, x_bounds=XB, accountant=acc,
                                           **KW), _fit_ate),
    Case("DPATE randomized, declared assignment probability (Horvitz-Thompson)",
         lambda acc, yb: DPATE("ht", randomized=True, assignment_probability=0.5, outcome_bounds=yb,
                               out_of_bounds="clip", accountant=acc, **KW), _fit_ate, cells=("Y",)),
    Case("DPCATE ridge", _cate("ridge"), _fit_effect),
    Case("DPCATE kernel", _cate("kernel", bandwidth=0.5, lam=0.1), _fit_effect),
    Case("DPCATE auto", _cate("auto"), _fit_effect),
    Case("DPCATE auto, schema", _cate("auto", SCHEMA), _fit_effect, frame=True),
    Case("release_cate_function", _cate("kernel", bandwidth=0.5, lam=0.1), _fit_release(release_cate_function)),
    Case("release_shareable_cate_function", _cate("kernel", bandwidth=0.5, lam=0.1),
         _fit_release(release_shareable_cate_function, n_components=20)),
    Case("private_kernel_function", _functional(private_kernel_function), _fit_functional),
    Case("release_shareable_function", _functional(release_shareable_function, n_components=20), _fit_functional),
    Case("DPSLearner", _meta(DPSLearner), _fit_effect),
    Case("DPTLearner", _meta(DPTLearner), _fit_effect),
    Case("DPXLearner", _meta(DPXLearner), _fit_effect),
    Case("DPRLearner", _meta(DPRLearner), _fit_effect),
    Case("DPDRLearner", _meta(DPDRLearner), _fit_effect),
    Case("DPDRLearner, schema", _meta(DPDRLearner, SCHEMA), _fit_effect, frame=True),
    Case("DP2ERMClassifier", lambda acc, yb: DP2ERMClassifier("entropy", x_bounds=XB, outcome_bounds=yb,
                                                              accountant=acc, **KW), _fit_2erm),
    Case("DP2ERMClassifier, schema", lambda acc, yb: DP2ERMClassifier("ipw_estimated", x_bounds=SCHEMA,
                                                                      outcome_bounds=yb, accountant=acc, **KW),
         _fit_2erm, frame=True),
    Case("CompositionBaselineClassifier", lambda acc, yb: CompositionBaselineClassifier(
        x_bounds=XB, outcome_bounds=yb, accountant=acc, **KW), _fit_2erm),
    Case("PrivateITR", lambda acc, yb: PrivateITR(DP2ERMClassifier("mmd", x_bounds=XB, outcome_bounds=yb,
                                                                   n_components=20, accountant=acc, **KW)), _fit_itr),
    Case("PrivateITR, weights ignored", lambda acc, yb: PrivateITR(weights_ignored(
        2.0, lam=1e-2, x_bounds=XB, outcome_bounds=yb, accountant=acc, random_state=0)), _fit_itr),
    Case("BalancingWeights", lambda acc, yb: BalancingWeights("ipw_estimated", x_bounds=XB), _fit_weights,
         cells=("X",)),
    Case("BalancingWeights, schema", lambda acc, yb: BalancingWeights("mmd", x_bounds=SCHEMA, n_components=20),
         _fit_weights, cells=("X",), frame=True),
    Case("DPLogisticRegression", lambda acc, yb: DPLogisticRegression(x_bounds=XB, accountant=acc, **KW),
         _fit_logistic, cells=("X",)),
    Case("DPLogisticRegression, schema", lambda acc, yb: DPLogisticRegression(x_bounds=SCHEMA, accountant=acc, **KW),
         _fit_logistic, cells=("X",), frame=True),
    Case("DPLogisticRegression, offset", lambda acc, yb: DPLogisticRegression(x_bounds=XB, offset=-3.0, accountant=acc,
                                                                              **KW), _fit_logistic, cells=("X",)),
    Case("DPLogisticRegression, offset, output",
         lambda acc, yb: DPLogisticRegression(x_bounds=XB, offset=3.0, method="output", accountant=acc, **KW),
         _fit_logistic, cells=("X",)),
    Case("DPRidgeRegression", lambda acc, yb: DPRidgeRegression(outcome_bounds=yb, x_bounds=XB, accountant=acc, **KW),
         _fit_ridge),
    Case("cli ate fold", *_cli(*_ATE, "--covariates", "x0,x1", "--x-bounds", "-1,1", "--design", "fold")),
    Case("cli ate fold, no covariate bounds", *_cli(*_ATE, "--covariates", "x0,x1", "--design", "fold"),
         cells=("Y",)),      # the covariates' domain is then the finite reals: ±inf is refused (an invalid input)
    Case("cli ate split", *_cli(*_ATE, "--covariates", "x0,x1", "--x-bounds", "-1,1")),
    Case("cli ate schema", *_cli(*_ATE, "--schema", "{schema}", "--fill-missing"), frame=True),
    Case("cli ate split, fill missing", *_cli(*_ATE, "--covariates", "x0,x1", "--x-bounds", "-1,1", "--fill-missing"),
         frame=True),     # frame: the replay adds a missing covariate cell, which the declared fill takes
    Case("cli cate query", *_cli(*_CATE, "--covariates", "x0,x1", "--x-bounds", "-1,1", "--query", "{q}")),
    Case("cli cate save", *_cli(*_CATE, "--schema", "{schema}", "--fill-missing", "--save", "{save}"), frame=True),
]
CASES = {c.name: c for c in REGISTRY}



def _records(seed=0):
    "Public-shaped synthetic records: covariates in the box, binary treatment, outcomes within both declarations."
    r = np.random.default_rng(seed)
    X = r.uniform(-0.9, 0.9, (N, 2))
    T = (r.uniform(size=N) < 0.5).astype(int)
    Y = np.clip(1.0 + 0.5 * T + 0.4 * X[:, 0] + 0.2 * r.normal(size=N), 0.05, 1.95)
    Y[0] = X[0, 0] = ORDINARY
    return Y, T, X
