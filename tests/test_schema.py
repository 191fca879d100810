"""The public covariate schema (dp_causal_nb.schema).

The encoding is a fixed public map applied record by record: these tests check that (row i of the encoding depends
on record i only, whatever pandas made of the column's dtype), that unusual records (unseen category, missing cell,
string in a numeric column, new string in a dropped column) behave like any other record, up to a private release,
that errors name columns and never a cell, and that a data frame releases exactly what its numpy twin releases."""
import json, subprocess, sys, warnings
import numpy as np
import pytest

from dp_causal_nb.core import PrivacyLeakWarning
from dp_causal_nb.schema import (Schema, NumericColumn, CategoricalColumn, infer_schema, resolve_covariates, as_1d,
                                 Covariates)

pd = pytest.importorskip("pandas")
SECRET = "PATIENT-4711"

SCHEMA = Schema({"age": {"bounds": [20, 80], "fill": 50}, "sex": {"categories": ["f", "m"]},
                 "edu": {"categories": [1, 2, 3], "ordinal": True, "other": 2}}, extra="drop")


def _frame(n, rng):
    return pd.DataFrame({"age": rng.uniform(20, 80, n), "sex": rng.choice(["f", "m"], n),
                         "edu": rng.integers(1, 4, n), "id": [f"r{i}" for i in range(n)]})


def _record(schema, frame):
    "Observable behaviour of resolve_covariates: (exception type, warning categories, encoded array)."
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        try: out, err = resolve_covariates(frame, schema).X, None
        except Exception as e: out, err = None, type(e)
    return err, sorted({r.category.__name__ for r in rec}), out


NEIGHBOURS = {"unseen category": ("sex", "nonbinary"), "missing category": ("sex", None), "pd.NA category": ("sex", pd.NA),
              "missing number": ("age", np.nan), "None number": ("age", None), "string in numeric column": ("age", "forty"),
              "unseen ordinal level": ("edu", 7), "missing ordinal": ("edu", np.nan),
              "new string in a dropped column": ("id", SECRET)}


@pytest.mark.parametrize("what", list(NEIGHBOURS))
def test_neighbour_encoding_is_record_wise(what):
    "A replace-one neighbour: same (absent) exception and warnings, same shape, only the replaced row may change."
    col, val = NEIGHBOURS[what]
    base = _frame(40, np.random.default_rng(1))
    nb = base.copy(); nb[col] = nb[col].astype(object); nb.loc[17, col] = val     # pandas dtype changes with one record
    (e0, w0, x0), (e1, w1, x1) = _record(SCHEMA, base), _record(SCHEMA, nb)
    assert (e0, e1) == (None, None) and w0 == w1 == []
    assert x0.shape == x1.shape
    np.testing.assert_array_equal(np.delete(x0, 17, 0), np.delete(x1, 17, 0))
    lo, hi = SCHEMA.encoded_bounds().T
    assert np.all((x1 >= lo) & (x1 <= hi))                       # the replaced record stays in the declared box


def test_row_i_depends_on_record_i_only():
    "Encoding a frame equals encoding each record alone (the map is record-wise, whatever the column dtypes)."
    df = _frame(25, np.random.default_rng(2)); df = df.astype(object)
    df.loc[3, "age"], df.loc[4, "sex"], df.loc[5, "edu"], df.loc[6, "age"] = None, "?", "3", " 41.5 "
    whole = SCHEMA.transform(df)
    for i in range(len(df)):
        np.testing.assert_array_equal(whole[i], SCHEMA.transform(df.iloc[[i]])[0])


def test_csv_typing_does_not_change_encoding():
    "Columns read as strings (one stray value makes pandas read a whole column as text) encode as the typed ones."
    typed = pd.DataFrame({"age": [30, 41, 55], "sex": ["f", "m", "m"], "edu": [1, 2, 3]})
    text = typed.astype(str)
    cat = typed.astype({"edu": "category", "sex": "category"})
    np.testing.assert_array_equal(SCHEMA.transform(typed), SCHEMA.transform(text))
    np.testing.assert_array_equal(SCHEMA.transform(typed), SCHEMA.transform(cat))


@pytest.mark.parametrize("what", ["unseen category", "missing number", "string in numeric column",
                                  "new string in a dropped column"])
def test_neighbour_release_behaves_alike(what):
    "Up to a private release (DPATE, split design): same exception and warning behaviour on both neighbours."
    from dp_causal_nb.ate import DPATE
    from dp_causal_nb.accounting import PrivacyAccountant
    rng = np.random.default_rng(3); n = 600
    base = _frame(n, rng); T = rng.binomial(1, 0.5, n); Y = np.clip(0.5 * T + rng.normal(0, 1, n), -3, 3)
    col, val = NEIGHBOURS[what]
    nb = base.copy(); nb[col] = nb[col].astype(object); nb.loc[0, col] = val
    seen = []
    for frame in (base, nb):
        with warnings.catch_warnings(record=True) as rec:
            warnings.simplefilter("always")
            cov = resolve_covariates(frame, SCHEMA)
            m = DPATE(epsilon=1.0, delta=1e-6, outcome_bounds=(-3, 3), x_bounds=cov.x_bounds,
                      accountant=PrivacyAccountant(), random_state=5)
            try: m.fit(Y, T, X=cov.X); err = None
            except Exception as e: err = type(e)
        seen.append((err, sorted({r.category.__name__ for r in rec})))
    assert seen[0] == seen[1] and seen[0][0] is None


def test_dataframe_and_numpy_twin_release_identical_values():
    "The released ATE, stderr and interval of a DataFrame fit equal those of its hand-encoded twin, to the bit."
    from dp_causal_nb.ate import DPATE
    from dp_causal_nb.accounting import PrivacyAccountant
    rng = np.random.default_rng(4); n = 1500
    df = _frame(n, rng); df = df.astype({"sex": object}); df.loc[2, "sex"] = "x"; df.loc[3, "age"] = np.nan
    T = rng.binomial(1, 0.5, n); Y = np.clip(T + rng.normal(0, 1, n), -3, 3)
    sex = df["sex"].to_numpy(object); age = df["age"].to_numpy(float); edu = df["edu"].to_numpy(float)
    twin = np.column_stack([np.where(np.isnan(age), 50.0, age), sex == "f", sex == "m", ~np.isin(sex, ["f", "m"]), edu - 1])
    tb = (np.array([20.0, 0, 0, 0, 0]), np.array([80.0, 1, 1, 1, 2]))
    cov = resolve_covariates(df, SCHEMA)
    np.testing.assert_array_equal(cov.X, twin.astype(float))
    np.testing.assert_array_equal(np.vstack(cov.x_bounds), np.vstack(tb))
    fit = lambda X, xb: DPATE(epsilon=1.0, delta=1e-6, outcome_bounds=(-3, 3), x_bounds=xb,
                              accountant=PrivacyAccountant(), random_state=9).fit(Y, T, X=X)
    a, b = fit(cov.X, cov.x_bounds), fit(twin.astype(float), tb)
    assert (a.ate_, a.stderr_, tuple(a.conf_int_)) == (b.ate_, b.stderr_, tuple(b.conf_int_))
    # control: an ordinal column left unshifted (edu coded 1..3 against bounds 0..2, so its top level clips) changes
    # the fit; compared without noise, whose grid can round two nearby private estimates to the same value (a
    # permutation or an affine recoding of columns would not do: linear nuisance models are equivariant to them)
    wrong = twin.astype(float)
    wrong[:, 4] = edu
    exact = lambda X: DPATE(epsilon=np.inf, outcome_bounds=(-3, 3), x_bounds=tb, accountant=PrivacyAccountant(),
                            random_state=9).fit(Y, T, X=X).ate_
    assert exact(wrong) != exact(cov.X)


BAD = {
    "schema missing a column": (lambda: Schema(SCHEMA.columns).transform(                  # extra="raise"
        pd.DataFrame({"age": [30.0], "sex": ["f"], "edu": [1], "ssn": [SECRET]})), "'ssn'"),
    "column missing from the data": (lambda: SCHEMA.transform(pd.DataFrame({"age": [30.0], "sex": [SECRET]})), "'edu'"),
    "categorical column without vocabulary": (lambda: Schema({"sex": {"categories": []}}), "'sex'"),
    "categorical column with vocabulary None": (lambda: Schema({"sex": {"categories": None}}), "'sex'"),
    "declaration neither bounds nor categories": (lambda: Schema({"sex": ["f", "m"]}), "'sex'"),
    "fill outside the bounds": (lambda: Schema({"age": {"bounds": [20, 80], "fill": 0}}), "'age'"),
    "non-numeric column without schema": (lambda: resolve_covariates(pd.DataFrame({"age": [30.0], "ssn": [SECRET]})), "'ssn'"),
    "categorical schema on a plain array": (lambda: SCHEMA.transform(np.array([[SECRET, 1, 2]], dtype=object)), "X"),
    "Y not numeric": (lambda: as_1d(pd.Series([SECRET], name="wt82_71"), "Y"), "Y"),
}


@pytest.mark.parametrize("what", list(BAD))
def test_bad_inputs_name_the_column_not_a_value(what):
    f, needle = BAD[what]
    with pytest.raises((ValueError, TypeError)) as e: f()
    assert needle in str(e.value) and SECRET not in str(e.value)


def test_numeric_out_of_bounds_is_left_to_the_estimator():
    """The schema does not clip: a value outside the declared bounds passes through, as it would from numpy; a value
    that overflows to ±inf becomes the finite out-of-bounds value hi + (hi - lo) / lo - (hi - lo) (adversary s4, B)."""
    x = Schema({"a": (0, 1)}).transform({"a": [0.5, 3.0, float("inf"), -float("inf")]})
    np.testing.assert_array_equal(x.ravel(), [0.5, 3.0, 2.0, -1.0])


def test_infer_schema_is_marked_not_private_through_json(tmp_path):
    df = pd.DataFrame({"age": [31.0, 45.0, 62.0], "sex": pd.Categorical(["m", "f", "f"]), "edu": [1, 2, 2]})
    with pytest.warns(PrivacyLeakWarning): s = infer_schema(df)
    assert s.inferred and s.columns["edu"] == NumericColumn(1.0, 2.0, 1.5)
    assert s.columns["sex"] == CategoricalColumn(("f", "m"))
    s.to_json(tmp_path / "s.json"); s2 = Schema.from_json(tmp_path / "s.json")
    assert s2 == s and s2.inferred and json.loads((tmp_path / "s.json").read_text())["inferred"] is True
    with pytest.warns(PrivacyLeakWarning): cov = resolve_covariates(df, s2)
    assert cov.private_ok is False


def test_declared_schema_emits_no_warning_and_is_private_ok():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        cov = resolve_covariates(_frame(5, np.random.default_rng(0)), SCHEMA)
    assert isinstance(cov, Covariates) and cov.private_ok and cov.schema is SCHEMA
    assert cov.feature_names == ["age", "sex=f", "sex=m", "sex=<other>", "edu"]
    assert cov.feature_names_in == ["age", "sex", "edu"]


def test_dict_x_bounds_becomes_a_schema():
    cov = resolve_covariates({"b": [1.0], "a": [0.0]}, {"a": (0, 1), "b": (0, 2)})
    np.testing.assert_array_equal(cov.X, [[0.0, 1.0]])                 # schema order, not input order
    assert cov.feature_names == ["a", "b"] and isinstance(cov.schema, Schema)


def test_as_1d_keeps_names():
    assert as_1d(pd.Series([1.0, 2.0], name="wt82_71"), "Y")[1] == "wt82_71"
    assert as_1d(pd.DataFrame({"qsmk": [0, 1]}), "T")[1] == "qsmk"
    v, label = as_1d(np.array([0, 1]), "T")
    assert label == "T" and v.dtype == float and v.shape == (2,)


def test_schema_module_does_not_import_pandas():
    code = "import sys, dp_causal_nb.schema; print('pandas' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_nhefs_schema_encodes_the_causaldata_frame():
    from dp_causal_nb.datasets import nhefs_schema, load_nhefs
    s = nhefs_schema()
    assert s.n_features_out == 24 and not s.inferred
    nhefs = pytest.importorskip("causaldata", reason="NHEFS needs the optional 'data' extra (causaldata)")
    df = nhefs.nhefs_complete.load_pandas().data
    cov = resolve_covariates(df, s)
    assert cov.X.shape == (1566, 24) and cov.private_ok
    # the hand encoding of load_nhefs (first level dropped, sex/race as 0/1) is a linear function of this one
    X, _, _, names = load_nhefs()
    for j, name in enumerate(names):
        if name in cov.feature_names: np.testing.assert_array_equal(X[:, j], cov.X[:, cov.feature_names.index(name)])
        else: np.testing.assert_array_equal(X[:, j], cov.X[:, cov.feature_names.index(f"{name}=1")])


def test_odd_cells_never_raise_and_stay_record_wise():
    "Cells of any type (huge ints, signalling NaN, bytes, lists, objects) encode without error, record by record."
    import decimal
    odd = [None, np.nan, pd.NA, pd.NaT, "", " 1 ", "x", 10**400, -10**400, decimal.Decimal("sNaN"), decimal.Decimal("2.5"),
           b"bytes", [1, 2], {"a": 1}, np.array([1, 2]), object(), complex(1, 2), True, np.datetime64("2020-01-01"),
           float("inf"), "1e999", "f", 35.0, 2]
    rng = np.random.default_rng(6); n = 60
    cols = {c: [odd[i] for i in rng.integers(0, len(odd), n)] for c in ("age", "sex", "edu")}
    whole = SCHEMA.transform(cols)
    assert whole.shape == (n, SCHEMA.n_features_out)
    for i in range(n):
        np.testing.assert_array_equal(whole[i], SCHEMA.transform({c: [v[i]] for c, v in cols.items()})[0])
    lo, hi = SCHEMA.encoded_bounds().T
    assert np.all((whole[:, 1:] >= lo[1:]) & (whole[:, 1:] <= hi[1:]))   # categorical parts always in the box
