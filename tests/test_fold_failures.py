"""The fold design's models on replace-one neighbours that make them fail (invariant 4, Theorem 1 in notebook 11).

* The default models (`LeastSquares`, `PenalisedLogistic`) hand LAPACK finite systems only: LAPACK writes to the
  process's stdout when a least-squares system holds inf or NaN (two covariates near 1e308 in one fold's arm overflow
  the centring), so a neighbour would add lines to the command line's JSON. Such a fit fails silently (the fold's
  constants), on both sides alike.
* A user's model whose `predict` fails on some rows (a scikit-learn tree casts X to float32 and refuses a covariate
  beyond its range) falls back row by row: a record of fold j moves the predictions of fold k != j at its own row only.
"""
import json, subprocess, sys
import numpy as np
import pytest

from dp_causal_nb.ate import DPATE, LeastSquares, PenalisedLogistic, _fit_fold, default_n_folds, make_folds
from dp_causal_nb.core import release_guard, spawn_generators

HUGE = 1.7976931348623157e308                      # the largest float64: finite, a valid covariate without x_bounds


def _records(n, seed=0):
    r = np.random.default_rng(seed)
    X = r.uniform(-1, 1, (n, 2))
    T = (r.uniform(size=n) < 0.5).astype(int)
    return X, T, np.clip(0.3 * T + 0.4 * X[:, 0] + 0.2 * r.normal(size=n), -1, 1)


# --- default models: nothing written at the file-descriptor level ----------------------------------------------------
@pytest.mark.parametrize("second", [1e300, HUGE, -HUGE])
def test_default_models_write_nothing_when_the_scale_overflows(capfd, second):
    X, T, Y = _records(20)
    X[0, 0], X[1, 0] = (-HUGE if second < 0 else HUGE), second      # the centring's mean overflows to ±inf
    with release_guard():
        for model, y in ((LeastSquares(), Y), (PenalisedLogistic(), T)):
            try: model.fit(X, y).predict(X)
            except ValueError: pass                   # a failed fit: the fold design takes the fold's constants
    out, err = capfd.readouterr()
    assert out == "" and err == ""
    with np.errstate(over="ignore"), pytest.raises(ValueError, match="not finite"): LeastSquares().fit(X, Y)


def test_default_models_on_extreme_covariates_write_nothing(capfd):
    "Seeded extreme, separable, collinear and constant-column folds: no byte on stdout or stderr."
    r = np.random.default_rng(3)
    ext = np.array([1e154, 1e200, 1e300, HUGE, -HUGE, 1e-320, 5e-324, -0.0, 3e38, 1e19])
    failed = 0
    for _ in range(400):
        n, d = int(r.integers(3, 12)), int(r.integers(1, 4))
        X = r.normal(size=(n, d)) * 10.0 ** r.integers(-3, 3)
        for _ in range(int(r.integers(0, 4))): X[r.integers(n), r.integers(d)] = r.choice(ext)
        if r.uniform() < 0.3: X[:, -1] = X[:, 0]
        if r.uniform() < 0.4: X[:, 0] = (np.arange(n) % 2) * 1e300       # separable by a huge column
        t = (X[:, 0] > np.median(X[:, 0])).astype(int) if r.uniform() < 0.5 else np.arange(n) % 2
        if t.min() == t.max(): t[0] = 1 - t[0]
        with release_guard():
            for model, y in ((PenalisedLogistic(), t), (LeastSquares(), r.uniform(-1, 1, n))):
                try: model.fit(X, y).predict(X)
                except ValueError: failed += 1
    out, err = capfd.readouterr()
    assert failed > 0                                   # the overflowing systems were reached
    assert out == "" and err == ""


def _cli_pair(tmp_path):
    "Neighbouring CSVs for the CLI fold job: record 0's covariate is HUGE; record j (same fold and arm) 0.5 or 1e300."
    n = 200
    X, T, Y = _records(n, seed=1)
    folds = make_folds(n, default_n_folds(n, 2), spawn_generators(0, 4)[0])   # DPATE's public fold stream, seed 0
    j = next(j for j in range(1, n) if folds[j] == folds[0] and T[j] == T[0])
    X[0, 0] = HUGE
    paths = []
    for v in (0.5, 1e300):
        X1 = X.copy()
        X1[j, 0] = v
        p = tmp_path / f"d{len(paths)}.csv"
        p.write_text("y,t,x0,x1\n" + "".join(f"{a!r},{b},{c!r},{d!r}\n"
                                             for a, b, (c, d) in zip(Y.tolist(), T.tolist(), X1.tolist())))
        paths.append(p)
    return paths


def test_cli_fold_job_neighbours_alike(tmp_path):
    "The real command: the same exit code, empty stderr and a parseable JSON with the same keys and types."
    runs = []
    for p in _cli_pair(tmp_path):
        r = subprocess.run([sys.executable, "-m", "dp_causal_nb.cli", "ate", str(p), "--outcome", "y", "--treatment",
                            "t", "--covariates", "x0,x1", "--outcome-bounds", "-1,1", "--epsilon", "1", "--delta",
                            "1e-6", "--seed", "0", "--json"], capture_output=True, text=True, timeout=120)
        runs.append(r)
    assert [r.returncode for r in runs] == [0, 0] and [r.stderr for r in runs] == ["", ""]
    a, b = (json.loads(r.stdout) for r in runs)
    assert a["design"] == "fold" and {k: type(v) for k, v in a.items()} == {k: type(v) for k, v in b.items()}


# --- a user's model that fails on some rows: the failure stays on those rows -----------------------------------------
@pytest.mark.filterwarnings("ignore:overflow encountered in cast:RuntimeWarning")
def test_user_model_predict_failure_is_row_local():
    "A tree refusing record 0's covariate (beyond float32) moves no other row's predictions of the other folds' models."
    pytest.importorskip("sklearn")
    from sklearn.ensemble import RandomForestClassifier
    from sklearn.tree import DecisionTreeRegressor
    n, K = 120, 4
    X, T, Y = _records(n, seed=2)
    folds = make_folds(n, K, 0)
    X1 = X.copy()
    X1[0, 0] = 1e300
    pm = RandomForestClassifier(n_estimators=5, max_depth=3, random_state=0)
    om = DecisionTreeRegressor(max_depth=3, random_state=0)
    others = np.arange(1, n)
    for k in set(range(K)) - {folds[0]}:
        idx = np.flatnonzero(folds == k)
        (a, fa), (b, fb) = (_fit_fold(Z, T, Y, idx, True, True, pm, om, 1.0, 0.1) for Z in (X, X1))
        assert not fa and fb                              # record 0's row fell back on the neighbour only
        for name in ("w1", "w0", "m0", "m1"):
            assert np.array_equal(a[name][others], b[name][others]), (k, name)


def test_user_model_failing_everywhere_falls_back_everywhere():
    "A model whose predict fails on every row takes the fold's constants on every row (as a failed fit does)."
    calls = []
    class Broken:
        def fit(self, X, y): return self
        def predict(self, X):
            calls.append(len(X))
            raise RuntimeError("broken")
        def get_params(self, deep=True): return {}
    X, T, Y = _records(30)
    idx = np.arange(10)
    out, fb = _fit_fold(X, T, Y, idx, False, True, None, Broken(), 1.0, 0.1)
    assert fb and len(calls) == 2            # one call per arm, on its own rows: no row-by-row search
    for a in (0, 1):
        assert np.array_equal(out[f"m{a}"], np.full(30, Y[idx].mean()))


@pytest.mark.filterwarnings("ignore:overflow encountered in cast:RuntimeWarning")
def test_dpate_fold_release_with_a_failing_user_model():
    "The release runs and charges alike on both neighbours (the values differ by the noise and the row-local change)."
    pytest.importorskip("sklearn")
    from sklearn.tree import DecisionTreeRegressor
    X, T, Y = _records(200, seed=4)
    X1 = X.copy()
    X1[0, 0] = 1e300
    fits = [DPATE(design="fold", mu=1.0, outcome_bounds=(-1, 1), outcome_model=DecisionTreeRegressor(max_depth=2),
                  random_state=0).fit(Y, T, X=Z) for Z in (X, X1)]
    assert sorted(vars(fits[0])) == sorted(vars(fits[1])) and fits[0].mu_spent_ == fits[1].mu_spent_


# --- the replay of tests/test_neighbour_replay.py for the fold design without x_bounds, finite covariate extremes -----
@pytest.mark.parametrize("mode", ["default", pytest.param("seterr_raise", marks=pytest.mark.slow),
                                  pytest.param("warnings_error", marks=pytest.mark.slow)])
@pytest.mark.parametrize("name", ["api", "cli"])
def test_fold_without_bounds_finite_covariate_extremes_replay_alike(name, mode, tmp_path):
    "Covariate domain without x_bounds: the finite reals, so every finite extreme is a valid neighbour."
    from _registry import CASES, CLI_ROOT, KW, OUTCOME_BOUNDS, Case, _fit_ate, _records as records
    from test_neighbour_replay import observe
    CLI_ROOT["path"] = tmp_path
    case = (Case("api", lambda acc, yb: DPATE(design="fold", outcome_bounds=yb, out_of_bounds="clip", accountant=acc,
                                              **KW), _fit_ate) if name == "api"
            else CASES["cli ate fold, no covariate bounds"])
    Y, T, X = records()
    ref = observe(case, OUTCOME_BOUNDS[0], Y, T, X, mode)
    assert ref["exception"] is None
    for v in (1e300, -1e300, HUGE, 1e-320, 5e-324, -0.0, 1e154):
        X1 = X.copy()
        X1[0, 0] = v
        assert observe(case, OUTCOME_BOUNDS[0], Y, T, X1, mode) == ref, v
