"""Adversarial review (session 4) of the new CLI release paths (`dp-causal ate/cate --schema`, `cate --save`) and the
schema layer (invariant 4). Each test is a pair of NEIGHBOURING files (one line replaced, same public inputs: schema,
bounds, epsilon, delta, seed, query points) whose observable behaviour differs other than through the noise on the
code of commit e06f269. They were marked xfail(strict=True) until the findings were fixed (then drop
the mark)."""
import contextlib, io, json
import numpy as np
import pytest

from dp_causal_nb.cli import main
from dp_causal_nb.schema import Schema

N = 200
NOISED = {"ate", "conf_int_95", "stderr", "cate", "lower", "upper", "ate_interval", "clamped", "notes",
          "sha256"}   # the hash of a saved file covers its noised coefficients


def run(args):
    o, e = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(o), contextlib.redirect_stderr(e): code = main([str(a) for a in args])
    return code, o.getvalue(), e.getvalue()


def records(n=N, seed=0):
    rng = np.random.default_rng(seed)
    return [f"{np.clip(0.5 * rng.normal(), -1, 1):.4f},{int(rng.uniform() < 0.5)},{rng.uniform(20, 80):.2f},"
            f"{rng.choice(['a', 'b'])}" for _ in range(n)]


@pytest.fixture
def schema(tmp_path):
    p = tmp_path / "schema.json"
    Schema.from_dict({"age": (20, 80), "group": {"categories": ["a", "b"]}}).to_json(p)
    return p


def write(tmp_path, lines, name="d.csv"):
    p = tmp_path / name
    with open(p, "w", newline="") as f: f.write("y,t,age,group\n" + "\n".join(lines) + "\n")
    return p


def observe(tmp_path, schema, lines, cmd="ate", extra=()):
    "Everything a user sees except the noised numbers: exit status, stderr, the released fields, the saved metadata."
    p = write(tmp_path, lines)
    common = ["--outcome", "y", "--treatment", "t", "--schema", schema, "--outcome-bounds", "-1,1", "--epsilon", "1",
              "--delta", "1e-6", "--seed", "0", "--json", *extra]
    save = tmp_path / "g.npz"
    if save.exists(): save.unlink()
    args = ["ate", p, *common] if cmd == "ate" else ["cate", p, *common, "--save", save]
    code, out, err = run(args)
    r = {k: v for k, v in json.loads(out).items() if k not in NOISED} if code == 0 else {}
    meta = None
    if code == 0 and cmd == "cate":
        z = np.load(save)
        meta = json.loads(bytes(z["__meta__"]).decode())["meta"]
    return code, err, r, meta


# --- Finding A (HIGH): one malformed line swallows the records after it (CSV quoted field), changing n -----------

@pytest.mark.parametrize("cmd", ["ate", "cate"])
def test_unbalanced_quote_does_not_change_n(tmp_path, schema, cmd):
    """Neighbours: line 151 is `0.1,1,40,zz` (an unseen category: the schema's 'other' level) or `0.1,1,40,"zz`.
    Before the fix the second file releases n=151 (ate: split 30/30/30/61; cate --save: sensitivity and sigma of
    n=151 in the .npz metadata) instead of n=200; with the line at position 5 it fails with 'n=6 is too small' /
    'need at least 8 records, got 6'. Fixed: the release is the neighbour's (records are lines), or it fails closed
    with a message that quotes no count."""
    base = records()
    for pos in (5, 150):
        ordinary, odd = list(base), list(base)
        ordinary[pos], odd[pos] = "0.1,1,40,zz", '0.1,1,40,"zz'
        a, b = observe(tmp_path, schema, ordinary, cmd), observe(tmp_path, schema, odd, cmd)
        assert a[0] == 0 and a[2]["n"] == N
        if b[0] == 0: assert b[1:] == a[1:], (pos, b[2].get("n"))
        else: assert not any(ch.isdigit() for ch in b[1].replace(str(tmp_path), "").replace("utf-8", "")), b[1]


# --- Finding B (MEDIUM): an infinite cell in a schema numeric column fails; a huge finite one is clipped -----------

@pytest.mark.parametrize("cmd, extra", [("ate", ()), ("cate", ("--clip",))])
@pytest.mark.parametrize("cell", ["inf", "1e400", "-inf", "1" * 400], ids=["inf", "1e400", "-inf", "400digits"])
def test_schema_infinite_numeric_cell_behaves_like_out_of_bounds(tmp_path, schema, cmd, extra, cell):
    "Neighbours: the last record's age is 1e300 (out of the declared (20, 80): clipped) or an infinite/overflowing cell."
    base = records()
    a = observe(tmp_path, schema, base[:-1] + ["0.1,1,1e300,a"], cmd, extra)
    b = observe(tmp_path, schema, base[:-1] + [f"0.1,1,{cell},a"], cmd, extra)
    assert a[0] == 0 and a[1] == ""
    assert b == a


@pytest.mark.parametrize("cell", [float("inf"), "inf", "1e400", 10 ** 400], ids=["float-inf", "str-inf", "str-1e400", "int-10**400"])
def test_schema_encoding_is_finite_before_dpate(cell):
    "The schema layer as a user reaches it by hand: resolve_covariates, then DPATE(x_bounds=the encoded bounds)."
    import warnings
    from dp_causal_nb.ate import DPATE
    from dp_causal_nb.accounting import PrivacyAccountant
    from dp_causal_nb.schema import resolve_covariates
    rng = np.random.default_rng(1); n = 120
    Y = np.clip(0.5 * rng.normal(size=n), -1, 1); T = (rng.uniform(size=n) < 0.5).astype(float)
    sch = {"age": (20, 80), "group": {"categories": ["a", "b"]}}
    def fit(last):
        age = list(rng_age) + [last]
        cov = resolve_covariates({"age": age, "group": ["a", "b"] * (n // 2)}, sch)
        m = DPATE("aipw", design="split", epsilon=1.0, delta=1e-6, outcome_bounds=(-1, 1), x_bounds=cov.x_bounds,
                  accountant=PrivacyAccountant(), random_state=0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try: m.fit(Y, T, X=cov.X); return None, m.split_sizes_
            except Exception as e: return type(e).__name__, str(e)
    rng_age = np.random.default_rng(2).uniform(20, 80, n - 1).round(1).tolist()
    assert fit(1e300)[0] is None
    assert fit(cell) == fit(1e300)


# --- Finding C (LOW): a trailing all-blank record is silently dropped (n - 1); any other missing outcome is refused --

def test_trailing_blank_record_is_a_record(tmp_path, schema):
    base = records()
    a = observe(tmp_path, schema, base[:-1] + [",1,40,a"])
    b = observe(tmp_path, schema, base[:-1] + [",,,"])
    assert a[0] == 2 and "missing values" in a[1]
    assert b == a


# --- Finding D (LOW): an oversized cell in a schema-encoded text column fails the whole file ----------------------

def test_oversized_categorical_cell_goes_to_other(tmp_path, schema):
    base = records()
    a = observe(tmp_path, schema, base[:-1] + ["0.1,1,40,zz"])
    b = observe(tmp_path, schema, base[:-1] + ["0.1,1,40," + "z" * 200_000])
    assert a[0] == 0
    assert b == a


@pytest.mark.parametrize("cmd, extra", [("ate", ("--clip-outcomes",)), ("cate", ("--clip",))])
def test_clip_mode_overflowing_outcome_is_clipped(tmp_path, schema, cmd, extra):
    base = records()
    a = observe(tmp_path, schema, base[:-1] + ["1e300,1,40,a"], cmd, extra)
    b = observe(tmp_path, schema, base[:-1] + ["1e400,1,40,a"], cmd, extra)
    assert a[0] == 0 and a[1] == ""
    assert b == a


# --- Finding E (LOW): without a schema, one big Python int / Decimal makes a dict/list column "not numeric" --------

@pytest.mark.parametrize("cell", [2 ** 64, __import__("decimal").Decimal("0.5")], ids=["int-2**64", "Decimal"])
def test_unschematised_numeric_column_accepts_any_number(cell):
    from dp_causal_nb.schema import resolve_covariates
    def outcome(last):
        try:
            cov = resolve_covariates({"age": [30.0, 41.5, 52.0, last]}, (0.0, 100.0))
            return None, cov.feature_names, cov.X.shape
        except Exception as e: return type(e).__name__, str(e)
    assert outcome(float(cell))[0] is None
    assert outcome(cell) == outcome(float(cell))
