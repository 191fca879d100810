"""The `dp-causal ate/cate --schema` release paths (and `cate --save`) on NEIGHBOURING files: one line replaced, every
public input (schema, bounds, epsilon, delta, seed, query points) the same. What must hold: everything a user sees
apart from the noised numbers (exit status, stderr, the released fields, the saved file's metadata) is the same, or
the command fails closed with a message that quotes no count. Records are lines (an unbalanced quote does not swallow
the lines after it); an infinite or overflowing cell behaves like a huge finite one (clipped); a trailing blank line
is a record with missing values; an oversized category cell is an unseen category."""
import json
import numpy as np
import pytest
from dp_causal_nb.schema import Schema
from cli_runner import run

N = 200
NOISED = {"ate", "conf_int_95", "stderr", "cate", "lower", "upper", "ate_interval", "clamped", "notes", "sensitivity",
          "sha256"}   # the hash of a saved file covers its noised coefficients


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


# --- records are lines: an unbalanced quote (CSV quoted field) does not swallow the records after it ------------------

@pytest.mark.parametrize("cmd", ["ate", "cate"])
def test_unbalanced_quote_does_not_change_n(tmp_path, schema, cmd):
    """Neighbours: line 151 (or line 6) is `0.1,1,40,zz` (an unseen category: the schema's 'other' level) or
    `0.1,1,40,"zz`. Were the quote to swallow the lines after it, the second file would release n=151 (its split sizes,
    sensitivity and sigma in the .npz metadata) instead of n=200, or fail with a count in its message ('n=6 is too
    small'). The release must be the neighbour's, or fail closed with a message that quotes no count."""
    base = records()
    for pos in (5, 150):
        ordinary, odd = list(base), list(base)
        ordinary[pos], odd[pos] = "0.1,1,40,zz", '0.1,1,40,"zz'
        a, b = observe(tmp_path, schema, ordinary, cmd), observe(tmp_path, schema, odd, cmd)
        assert a[0] == 0 and a[2]["n"] == N
        if b[0] == 0: assert b[1:] == a[1:], (pos, b[2].get("n"))
        else: assert not any(ch.isdigit() for ch in b[1].replace(str(tmp_path), "").replace("utf-8", "")), b[1]


# --- an infinite cell in a schema numeric column is clipped like a huge finite one ------------------------------------

@pytest.mark.parametrize("cmd, extra", [("ate", ("--clip",)), ("cate", ("--clip",))])
@pytest.mark.parametrize("cell", ["inf", "1e400", "-inf", "1" * 400], ids=["inf", "1e400", "-inf", "400digits"])
def test_schema_infinite_numeric_cell_behaves_like_out_of_bounds(tmp_path, schema, cmd, extra, cell):
    "Neighbours: the last record's age is 1e300 (out of the declared (20, 80): clipped) or an infinite/overflowing cell."
    base = records()
    a = observe(tmp_path, schema, base[:-1] + ["0.1,1,1e300,a"], cmd, extra)
    b = observe(tmp_path, schema, base[:-1] + [f"0.1,1,{cell},a"], cmd, extra)
    assert a[0] == 0 and a[1] == ""
    assert b == a


# --- a trailing all-blank record is a record with a missing outcome (refused like any other), not dropped -------------

def test_trailing_blank_record_is_a_record(tmp_path, schema):
    base = records()
    a = observe(tmp_path, schema, base[:-1] + [",1,40,a"])
    b = observe(tmp_path, schema, base[:-1] + [",,,"])
    assert a[0] == 2 and "missing values" in a[1]
    assert b == a


# --- an oversized cell in a schema-encoded text column is an unseen category ('other'), like any other ----------------

def test_oversized_categorical_cell_goes_to_other(tmp_path, schema):
    base = records()
    a = observe(tmp_path, schema, base[:-1] + ["0.1,1,40,zz"])
    b = observe(tmp_path, schema, base[:-1] + ["0.1,1,40," + "z" * 200_000])
    assert a[0] == 0
    assert b == a


# --- in clip mode an overflowing outcome is clipped like a huge finite one --------------------------------------------

@pytest.mark.parametrize("cmd, extra", [("ate", ("--clip",)), ("cate", ("--clip",))])
def test_clip_mode_overflowing_outcome_is_clipped(tmp_path, schema, cmd, extra):
    base = records()
    a = observe(tmp_path, schema, base[:-1] + ["1e300,1,40,a"], cmd, extra)
    b = observe(tmp_path, schema, base[:-1] + ["1e400,1,40,a"], cmd, extra)
    assert a[0] == 0 and a[1] == ""
    assert b == a
