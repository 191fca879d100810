"""Data frames in, names out, for the estimators wired through `schema.fit_covariates` /
`schema.query_covariates`: DPLogisticRegression, DPRidgeRegression (erm), DPATE, DPCATE, the meta-learners (DPTLearner here), BalancingWeights (weights),
DP2ERMClassifier and CompositionBaselineClassifier (two_stage), PrivateITR (itr).

For each: a numpy fit, a numeric DataFrame fit and a DataFrame + Schema fit with a categorical column release exactly the
numbers of the numpy (hand-encoded) twin; replace-one neighbours with an unusual record (unseen category, missing cell,
new string in a dropped column) behave like any other record (same exception, warnings and published attribute names);
bad inputs give errors naming the column and no data value. pandas is a dev/data extra: skipped cleanly without it."""
import warnings
import numpy as np
import pytest

pd = pytest.importorskip("pandas")

from dp_causal_nb.core import PrivacyLeakWarning
from dp_causal_nb.accounting import PrivacyAccountant
from dp_causal_nb.schema import Schema, infer_schema
from dp_causal_nb.weights import BalancingWeights
from dp_causal_nb.two_stage import DP2ERMClassifier, CompositionBaselineClassifier
from dp_causal_nb.itr import PrivateITR, weights_ignored

SECRET = "PATIENT-4711"
N = 240
SCHEMA = Schema({"x0": (-1, 1), "x1": (-1, 1), "site": {"categories": ["north", "south"]}}, extra="drop")
TWIN_BOUNDS = (np.array([-1, -1, 0, 0, 0.0]), np.array([1, 1, 1, 1, 1.0]))


def _data(seed=0):
    r = np.random.default_rng(seed)
    X = r.uniform(-1, 1, (N, 2)); T = (r.uniform(size=N) < 0.5).astype(int)
    y = (r.uniform(size=N) < 1 / (1 + np.exp(-X[:, 0] + T))).astype(int); out = r.uniform(0, 3, N)
    site = np.where(r.uniform(size=N) < 0.5, "north", "south").astype(object)
    df = pd.DataFrame({"x0": X[:, 0], "x1": X[:, 1], "site": site, "id": [f"r{i}" for i in range(N)]})
    return X, T, y, out, df


def _twin(df):
    "Hand encoding (no schema code): x0, x1, one-hot north/south/<other>."
    s = df["site"].to_numpy(dtype=object)
    return np.column_stack([df["x0"], df["x1"], s == "north", s == "south", ~np.isin(s, ["north", "south"])]).astype(float)


# --- one factory per wired estimator: fit(X, x_bounds) -> (released numbers, fitted object) ---------------------------
def _dp2erm(method):
    def f(X, xb, d):
        _, T, y, out, _ = d
        m = DP2ERMClassifier(method, epsilon=1.0, x_bounds=xb, lam=1e-2, outcome_bounds=(0, 3), weight_cap=8.0,
                             n_components=10, accountant=PrivacyAccountant(), random_state=3).fit(X, y, T=T, outcome=out)
        return m.coef_, m
    return f


def _composition(X, xb, d):
    _, T, y, out, _ = d
    m = CompositionBaselineClassifier(epsilon=1.0, x_bounds=xb, lam=1e-2, outcome_bounds=(0, 3),
                                      accountant=PrivacyAccountant(), random_state=3).fit(X, y, T=T, outcome=out)
    return np.r_[m.coef_, m.propensity_coef_], m


def _weights(method):
    def f(X, xb, d):
        _, T, _, _, _ = d
        bw = BalancingWeights(method, x_bounds=xb, weight_cap=8.0, n_components=10, propensity_clip=0.1)
        w, cert = bw.compute(T, X, propensity=0.5)
        return np.r_[w, cert.others, cert.weight_bound], bw
    return f


def _itr(X, xb, d):
    _, T, _, out, _ = d
    rule = PrivateITR(DP2ERMClassifier("entropy", epsilon=2.0, x_bounds=xb, lam=1e-2, outcome_bounds=(0, 3),
                                       accountant=PrivacyAccountant(), random_state=5)).fit(out, T, X=X)
    return rule.learner.coef_, rule


def _dpate(X, xb, d):
    from dp_causal_nb.ate import DPATE
    _, T, _, out, _ = d
    m = DPATE("aipw", design="split", epsilon=2.0, delta=1e-6, outcome_bounds=(0, 3), x_bounds=xb,
              accountant=PrivacyAccountant(), random_state=3).fit(out, T, X=X)
    return np.r_[m.ate_raw_, m.stderr_noisy_], m


def _dpcate(X, xb, d):
    from dp_causal_nb.cate import DPCATE
    _, T, _, out, _ = d
    m = DPCATE(final="ridge", epsilon=2.0, delta=1e-5, x_bounds=xb, outcome_bounds=(0, 3),
               accountant=PrivacyAccountant(), random_state=3).fit(out, T, X=X)
    return np.r_[m.theta_private_, m.effect(X)], m


def _meta(X, xb, d):
    from dp_causal_nb.meta import DPTLearner
    _, T, _, out, _ = d
    m = DPTLearner(outcome_bounds=(0, 3), x_bounds=xb, epsilon=2.0, accountant=PrivacyAccountant(), random_state=3)
    return m.fit(out, T, X=X).effect(X), m


def _erm(kind):
    def f(X, xb, d):
        from dp_causal_nb.erm import DPLogisticRegression, DPRidgeRegression
        _, T, y, out, _ = d
        M, t, kw = (DPLogisticRegression, y, {}) if kind == "logistic" else (DPRidgeRegression, out, dict(outcome_bounds=(0, 3)))
        m = M(epsilon=1.0, x_bounds=xb, accountant=PrivacyAccountant(), random_state=3, **kw).fit(X, t)
        return np.r_[m.coef_, m.predict(X)], m
    return f


FITS = {"DPLogisticRegression": _erm("logistic"), "DPRidgeRegression": _erm("ridge"), "DPATE split": _dpate, "DPCATE ridge": _dpcate, "DPTLearner": _meta,
        "DP2ERM ipw_estimated": _dp2erm("ipw_estimated"), "DP2ERM entropy": _dp2erm("entropy"),
        "DP2ERM mmd": _dp2erm("mmd"), "composition": _composition, "weights ipw_known": _weights("ipw_known"),
        "weights ipw_estimated": _weights("ipw_estimated"), "weights entropy": _weights("entropy"),
        "weights mmd": _weights("mmd"), "PrivateITR (DP-2ERM)": _itr}


@pytest.mark.parametrize("what", list(FITS))
def test_dataframe_fit_equals_numpy_fit(what):
    "numpy == numeric DataFrame (no schema) and DataFrame + Schema (categorical, unseen level) == hand-encoded twin, bitwise."
    d = _data(); X, df = d[0], d[4].copy()
    df.loc[:4, "site"] = "east"                                          # outside the vocabulary: the '<other>' level
    f = FITS[what]
    a, _ = f(X, (-1, 1), d)
    b, est = f(df[["x0", "x1"]], (-1, 1), d)
    np.testing.assert_array_equal(a, b)
    c, est_s = f(df, SCHEMA, d)
    e, _ = f(_twin(df), TWIN_BOUNDS, d)
    np.testing.assert_array_equal(c, e)
    assert not np.array_equal(c[:len(a)], a) or what.startswith("weights ipw_known")    # the categorical column matters
    if not what.startswith("weights"):
        assert est.feature_names_in_.tolist() == ["x0", "x1"]
        assert est_s.feature_names_out_.tolist() == ["x0", "x1", "site=north", "site=south", "site=<other>"]
        assert est_s.schema_ == SCHEMA


def test_numpy_fit_publishes_no_input_names():
    d = _data(); m = _dp2erm("entropy")(d[0], (-1, 1), d)[1]
    assert not hasattr(m, "feature_names_in_") and m.feature_names_out_.tolist() == ["x0", "x1"]


@pytest.mark.parametrize("make", ["dp2erm", "composition", "itr"])
def test_query_points_as_frames_and_summary_names(make):
    "Query points: a frame in another column order equals the encoded twin; summary() prints the encoded names."
    d = _data(); df = d[4]; twin = _twin(df)
    if make == "dp2erm":
        m, mt = _dp2erm("entropy")(df, SCHEMA, d)[1], _dp2erm("entropy")(twin, TWIN_BOUNDS, d)[1]
        pf, pt = m.decision_function(df[["site", "x1", "x0"]]), mt.decision_function(twin)
    elif make == "composition":
        m, mt = _composition(df, SCHEMA, d)[1], _composition(twin, TWIN_BOUNDS, d)[1]
        pf, pt = m.decision_function(df[["site", "x1", "x0"]]), mt.decision_function(twin)
    else:
        m, mt = _itr(df, SCHEMA, d)[1], _itr(twin, TWIN_BOUNDS, d)[1]
        pf, pt = m.recommend(df[["site", "x1", "x0"]]), mt.recommend(twin)
    np.testing.assert_array_equal(pf, pt)
    s = m.summary()
    for name in ("x0", "x1", "site=north", "site=south", "site=<other>", "(intercept)"): assert name in s
    with pytest.raises(ValueError, match="column 'site'"):
        (m.recommend if make == "itr" else m.decision_function)(df[["x0", "x1"]])


def test_itr_with_erm_learner_numeric_frame():
    "PrivateITR with erm's DPLogisticRegression: a numeric frame equals the array; query frames are matched by name."
    d = _data(); X, T, _, out, df = d
    mk = lambda: PrivateITR(weights_ignored(1.0, lam=1e-2, x_bounds=(-1, 1), outcome_bounds=(0, 3), random_state=4))
    ra, rf = mk().fit(out, T, X=X), mk().fit(pd.Series(out, name="qol"), T, X=df[["x0", "x1"]])
    np.testing.assert_array_equal(ra.learner.coef_, rf.learner.coef_)
    np.testing.assert_array_equal(ra.recommend(X), rf.recommend(df[["x1", "x0"]]))
    assert rf.feature_names_in_.tolist() == ["x0", "x1"] and "'qol'" in rf.summary()
    with pytest.raises(ValueError, match="column 'x1' was fitted but is missing"): rf.recommend(df[["x0"]])
    with pytest.raises(ValueError, match="X has 3 features, the estimator was fitted with 2"): ra.recommend(np.ones((2, 3)))


# --- neighbours --------------------------------------------------------------------------------------------------------
NEIGHBOURS = {"unseen category": ("site", "east"), "missing category": ("site", None), "missing number": ("x0", np.nan),
              "string in a numeric column": ("x1", "n/a"), "new string in a dropped column": ("id", SECRET)}


def _observe(f, X, d):
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        try: out, est, err = (*f(X, SCHEMA, d), None)
        except Exception as e: out, est, err = None, None, type(e)
    names = None if est is None else sorted(k for k in vars(est) if k.endswith("_"))
    inner = getattr(est, "learner", est)
    ledger = [(e.label, e.epsilon, e.delta) for e in inner.charged_to_.ledger] if hasattr(inner, "charged_to_") else None
    return err, sorted({r.category.__name__ for r in rec}), names, None if out is None else np.shape(out), ledger


@pytest.mark.parametrize("what", ["DPLogisticRegression", "DPRidgeRegression", "DPATE split", "DPCATE ridge",
                                  "DPTLearner", "DP2ERM entropy", "composition",
                                  "weights mmd", "PrivateITR (DP-2ERM)"])
@pytest.mark.parametrize("nb", list(NEIGHBOURS))
def test_neighbour_records_behave_like_any_record(what, nb):
    "Replace one record by an unusual one: same exception (none), warnings, published attribute names and ledger."
    d = _data(); col, val = NEIGHBOURS[nb]
    other = d[4].copy(); other[col] = other[col].astype(object); other.loc[17, col] = val
    base, moved = _observe(FITS[what], d[4], d), _observe(FITS[what], other, d)
    assert base == moved and base[0] is None


# --- bad inputs --------------------------------------------------------------------------------------------------------
def _message(f):
    try: f()
    except (ValueError, TypeError) as e: return str(e)
    raise AssertionError("no error")


@pytest.mark.parametrize("what", ["DP2ERM entropy", "composition", "weights entropy", "PrivateITR (DP-2ERM)"])
def test_bad_inputs_name_the_column_not_the_value(what):
    d = _data(); df = d[4].copy(); df["ssn"] = SECRET; f = FITS[what]
    strict = Schema({"x0": (-1, 1), "x1": (-1, 1), "site": {"categories": ["north", "south"]}})   # extra="raise"
    cases = {"schema missing a column": (lambda: f(df, strict, d), "'id'"),
             "column missing from the data": (lambda: f(df.drop(columns="site"), SCHEMA, d), "'site'"),
             "categorical column without a vocabulary": (lambda: f(df, {"x0": (-1, 1), "site": {"categories": []}}, d), "'site'"),
             "non-numeric column without a schema": (lambda: f(df[["x0", "ssn"]], (-1, 1), d), "'ssn'")}
    for why, (g, col) in cases.items():
        m = _message(g)
        assert col in m and SECRET not in m and "north" not in m, (why, m)


def test_inferred_schema_is_not_dp():
    "An inferred schema: DP-2ERM charges (inf, 0) 'NOT DP'; the composition baseline refuses; the certificate is infinite."
    d = _data(); X, T, y, out, df = d
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning); s = infer_schema(df[["x0", "x1", "site"]])
    with pytest.warns(PrivacyLeakWarning):
        m = DP2ERMClassifier("entropy", epsilon=1.0, x_bounds=s, accountant=PrivacyAccountant(), random_state=0).fit(
            df[["x0", "x1", "site"]], y, T=T)
    assert m.epsilon_spent_ == np.inf and "x_bounds" in m.bounds_inferred_ and "NOT DP" in m.summary()
    assert "NOT DP" in m.charged_to_.ledger[-1].label
    acc = PrivacyAccountant()
    with pytest.warns(PrivacyLeakWarning), pytest.raises(ValueError, match="inferred"):
        CompositionBaselineClassifier(epsilon=1.0, x_bounds=s, accountant=acc).fit(df[["x0", "x1", "site"]], y, T=T)
    assert len(acc.ledger) == 0
    with pytest.warns(PrivacyLeakWarning):
        _, cert = BalancingWeights("entropy", x_bounds=s).compute(T, df[["x0", "x1", "site"]])
    assert cert.others == np.inf and "NOT DP" in cert.method


def test_neighbour_check_can_fail():
    "Control: without a schema a string cell is refused (the numpy contract), so the neighbour comparison above can fail."
    d = _data(); f = FITS["DP2ERM entropy"]
    g = lambda X, xb, d: f(X[["x0", "x1"]], (-1, 1), d)
    other = d[4].copy(); other["x1"] = other["x1"].astype(object); other.loc[17, "x1"] = "n/a"
    assert _observe(g, d[4], d) != _observe(g, other, d)
