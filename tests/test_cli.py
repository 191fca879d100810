"""The `dp-causal` command line. Most cases call `main(argv)` in-process (fast); a few run the real command as a
subprocess (`python -m dp_causal_nb.cli` and the installed console script), as a user would run it."""
import json, os, resource, shutil, subprocess, sys
import numpy as np
import pytest

from cli_runner import run

CLI = [sys.executable, "-m", "dp_causal_nb.cli"]


def run_sub(args, timeout=120):
    p = subprocess.run(CLI + [str(a) for a in args], capture_output=True, text=True, timeout=timeout)
    return p.returncode, p.stdout, p.stderr


@pytest.fixture(scope="module")
def csv_path(tmp_path_factory):
    rng = np.random.default_rng(0)
    n = 400
    x1, x2 = rng.normal(size=n), rng.normal(size=n)
    t = (rng.uniform(size=n) < 1 / (1 + np.exp(-x1))).astype(int)
    y = np.clip(0.2 * x1 + 0.3 * t + 0.1 * rng.normal(size=n), -1, 1)
    p = tmp_path_factory.mktemp("cli") / "data.csv"
    with open(p, "w") as f:
        f.write("age,weight,treated,outcome\n")
        for row in zip(x1, x2, t, y): f.write(f"{row[0]:.6f},{row[1]:.6f},{row[2]},{row[3]:.6f}\n")
    return p


@pytest.fixture(scope="module")
def degenerate_path(tmp_path_factory):
    "16 records, 2 treated: with K = 5 most folds lack a treated unit (fold-local fallback, a data-dependent event)."
    p = tmp_path_factory.mktemp("cli") / "degenerate.csv"
    p.write_text("y,t,x\n" + "".join(f"{0.1 * (i % 9):.1f},{int(i < 2)},{i % 4}\n" for i in range(16)))
    return p


def base(path):
    return ["ate", path, "--outcome", "outcome", "--treatment", "treated", "--covariates", "age,weight",
            "--outcome-bounds", "-1,1"]


def test_ate_json_subprocess(csv_path):
    "The real command, as a subprocess; the in-process call with the same seed gives the same release."
    args = base(csv_path) + ["--epsilon", "2", "--delta", "1e-6", "--folds", "10", "--seed", "3", "--json"]
    code, out, err = run_sub(args)
    assert code == 0, err
    assert err == ""                                   # nothing data-dependent on stderr
    r = json.loads(out)
    assert r["n"] == 400 and r["n_folds"] == 10 and r["estimator"] == "aipw"
    assert r["epsilon"] == 2.0 and r["delta"] == 1e-6 and r["mu"] > 0
    lo, hi = r["conf_int_95"]
    assert -2 <= lo <= r["ate"] <= hi <= 2                # clamped to the feasible range of bounds (-1, 1)
    code2, out2, _ = run(args)
    assert code2 == 0 and json.loads(out2)["ate"] == r["ate"]


def test_ate_text_and_mu(csv_path):
    code, out, err = run(base(csv_path) + ["--mu", "1", "--estimator", "g"])
    assert code == 0, err
    assert "private ATE" in out and "95% CI (private)" in out and "GDP" in out


def test_ate_split_design_names_no_gdp(csv_path):
    """With --x-bounds the cross-fitted or the split design runs (design='auto': DPATE's public rule on n, d and the
    budget); their DP-ERM nuisances are (ε, δ)-DP, so no μ and no GDP label is printed."""
    from dp_causal_nb.ate import DPATE
    from dp_causal_nb.mechanisms import gdp_mu
    args = base(csv_path) + ["--x-bounds", "-4,4", "--seed", "3"]
    code, out, err = run(args + ["--mu", "0.5", "--design", "crossfit"])
    assert code == 0, err
    assert "cross-fitted design" in out and "GDP" not in out and "(epsilon=1.993, delta=1e-05)-DP" in out
    rule = DPATE(x_bounds=(-4, 4))._score_design("aipw", "crossfit", 400, 2, (gdp_mu(1.0, 1e-6), 1.0, 1e-6))
    for design in ("auto", "split", "crossfit"):
        code, out, err = run(args + ["--epsilon", "1", "--delta", "1e-6", "--json", "--design", design])
        assert code == 0, err
        r = json.loads(out)
        assert r["design"] == {"auto": rule}.get(design, design) and r["mu"] is None
        assert (r["epsilon"], r["delta"]) == (1.0, 1e-6)
    code, out, err = run(base(csv_path) + ["--mu", "0.5", "--seed", "3"])          # the fold design keeps its label
    assert code == 0 and "fold design" in out and "= 0.5-GDP" in out


def _edit(csv_path, tmp_path, content):
    lines = open(csv_path).read().splitlines()
    if content == "nan": lines[5] = "0.1,0.2,1,NA"
    elif content == "nonbinary": lines[5] = "0.1,0.2,7,0.5"
    elif content == "outofbounds": lines[5] = "0.1,0.2,1,123.5"
    elif content == "nonnumeric": lines[5] = "0.1,abc0.77,1,0.5"
    elif content == "inf": lines[5] = "0.1,0.2,1,inf"
    path = tmp_path / "bad.csv"
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.parametrize("extra, content, message, secret", [
    (["--mu", "1", "--folds", "2"], None, "n_folds must be an int in [3, n=400]", None),
    (["--mu", "1", "--folds", "401"], None, "n_folds must be an int in [3, n=400]", None),
    (["--mu", "1", "--propensity-clip", "0.5"], None, "propensity_clip must lie in (0, 0.5)", None),
    (["--epsilon", "-1", "--delta", "1e-6"], None, "epsilon must lie in (0, inf)", None),
    (["--epsilon", "1"], None, "--delta is required", None),
    ([], None, "one of the arguments --epsilon --mu is required", None),
    (["--mu", "1"], "nan", "missing values", "line"),
    (["--mu", "1"], "nonbinary", "T must be binary", "7"),
    (["--mu", "1"], "outofbounds", "outside the declared public bounds", "123.5"),
    (["--mu", "1"], "nonnumeric", "non-numeric values", "0.77"),
    (["--mu", "1"], "inf", "outside the declared public bounds", "1 value"),   # an infinite outcome is out of bounds
])
def test_bad_inputs(csv_path, tmp_path, extra, content, message, secret):
    "One clear line, exit 2, no traceback, and never a private value, its row or a count of offending rows."
    path = csv_path if content is None else _edit(csv_path, tmp_path, content)
    code, out, err = run(base(path) + extra)
    assert code == 2
    assert message in err, err
    assert err.count("\n") == 1 and "Traceback" not in err
    if secret is not None: assert secret not in err and "line" not in err and "1 value" not in err, err


def test_missing_file_column_and_no_command(csv_path):
    code, _, err = run(["ate", csv_path, "--outcome", "nope", "--treatment", "treated", "--outcome-bounds", "-1,1",
                        "--epsilon", "-1", "--delta", "1e-6"])
    assert code == 2 and err.count("\n") == 1 and ("column 'nope' not found" in err)
    code, _, err = run(["ate", "no_such_file.csv", "--outcome", "y", "--treatment", "t", "--outcome-bounds", "0,1",
                        "--mu", "1"])
    assert code == 2 and "cannot open" in err and err.count("\n") == 1
    code, _, err = run([])
    assert code == 2 and "choose a command" in err


def test_no_data_dependent_warnings(degenerate_path):
    "Folds lacking a treatment arm and clipped outcomes are data-dependent: the command prints nothing about them."
    args = ["ate", degenerate_path, "--outcome", "y", "--treatment", "t", "--covariates", "x", "--outcome-bounds",
            "0,1", "--folds", "5", "--seed", "0"]
    code, out, err = run(args + ["--mu", "1"])
    assert code == 0 and err == "", err
    code, out, err = run(args + ["--mu", "1", "--clip"])
    assert code == 0 and err == "", err
    # a warning about a PUBLIC input (delta >= 1/n, n = 16) is still shown
    code, out, err = run(args + ["--epsilon", "1", "--delta", "0.1"])
    assert code == 0 and "warning" in err and "fold" not in err


def test_demo_synthetic_fast():
    "The README quick start runs `dp-causal demo`: it must take < 20 s (CPU time of the child, robust to a busy machine)."
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    code, out, err = run_sub(["demo", "--synthetic"])
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    assert code == 0, err
    assert (r1.ru_utime + r1.ru_stime) - (r0.ru_utime + r0.ru_stime) < 20
    assert "true ATE" in out and "AIPW" in out and len(out.splitlines()) >= 8


def test_demo_default():
    "Runs on NHEFS when causaldata is installed, else on the synthetic data; always succeeds."
    code, out, err = run(["demo"])
    assert code == 0, err
    assert ("NHEFS" in out) or ("synthetic" in out)


@pytest.mark.skipif(shutil.which("dp-causal") is None and not os.path.exists(os.path.join(os.path.dirname(sys.executable), "dp-causal")),
                    reason="console script not installed (pip install .)")
def test_console_script(degenerate_path):
    "The installed entry point, on the degenerate file: a release on stdout and nothing data-dependent on stderr."
    exe = shutil.which("dp-causal") or os.path.join(os.path.dirname(sys.executable), "dp-causal")
    p = subprocess.run([exe, "ate", str(degenerate_path), "--outcome", "y", "--treatment", "t", "--covariates", "x",
                        "--outcome-bounds", "0,1", "--folds", "5", "--mu", "1", "--json"],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert "ate" in json.loads(p.stdout) and p.stderr == ""


def test_pythonwarnings_error_and_bound_values(tmp_path):
    """Neighbouring files give the same exit status and stderr under PYTHONWARNINGS=error (one clipped outcome, or one
    covariate of 1e154, must not turn a data-dependent warning into a traceback), and a legal outcome exactly at a
    declared bound is accepted (bounds 0.1,0.3 with Y = 0.1, which centring must not push outside)."""
    rows = [((0.1, 0.15, 0.2, 0.25, 0.3)[i % 5], i % 2, i % 7) for i in range(40)]   # outcomes in [0.1, 0.3]
    def write(name, rows):
        p = tmp_path / name
        p.write_text("y,t,x\n" + "".join(f"{y!r},{t},{x!r}\n" for y, t, x in rows))
        return p
    d0 = write("d0.csv", rows)
    d1 = write("d1.csv", [(0.5, 1, rows[0][2])] + rows[1:])                         # one outcome to clip
    d2 = write("d2.csv", [(rows[0][0], rows[0][1], 1e154)] + rows[1:])              # one extreme covariate
    env = dict(os.environ, PYTHONWARNINGS="error")
    seen = set()
    for p in (d0, d1, d2):
        r = subprocess.run(CLI + ["ate", str(p), "--outcome", "y", "--treatment", "t", "--covariates", "x",
                                  "--outcome-bounds", "0.1,0.3", "--clip", "--folds", "4", "--mu", "1"],
                           capture_output=True, text=True, timeout=120, env=env)
        seen.add((r.returncode, r.stderr))
    assert seen == {(0, "")}, seen
    code, out, err = run(["ate", d0, "--outcome", "y", "--treatment", "t", "--outcome-bounds", "0.1,0.3",
                          "--folds", "4", "--epsilon", "inf", "--delta", "1e-6"])
    assert code == 0 and err == "", err


def test_release_stays_in_the_feasible_range(tmp_path):
    """With bounds (-1, 1) any ATE lies in [-2, 2]; a tiny epsilon's noise is clamped there
    (post-processing) and the output says so; an epsilon = inf release is labelled non-private."""
    p = tmp_path / "d.csv"
    p.write_text("y,t\n" + "".join(f"{(i % 7) / 7 - 0.4:.3f},{i % 2}\n" for i in range(60)))
    args = ["ate", p, "--outcome", "y", "--treatment", "t", "--outcome-bounds", "-1,1", "--folds", "4"]
    for seed in range(5):
        code, out, err = run(args + ["--epsilon", "0.05", "--delta", "1e-6", "--seed", seed, "--json"])
        r = json.loads(out)
        assert code == 0 and -2 <= r["ate"] <= 2 and all(-2 <= c <= 2 for c in r["conf_int_95"])
        assert r["feasible_range"] == [-2.0, 2.0]
    code, out, err = run(args + ["--epsilon", "0.05", "--delta", "1e-6", "--seed", "0"])
    assert "clamped to [-2, 2], the range the outcome bounds allow" in out and "private ATE" in out
    code, out, err = run(args + ["--epsilon", "inf", "--delta", "1e-6"])
    assert code == 0 and "non-private ATE" in out and "(private)" not in out


@pytest.fixture(scope="module")
def cate_files(tmp_path_factory):
    "Dataset 1 of DP-CATE (n = 800) as a CSV, a public grid of query points, and the declared bounds."
    from dp_causal_nb.datasets import dataset1
    ds = dataset1(800, random_state=1)
    d = tmp_path_factory.mktemp("cate")
    data, q = d / "train.csv", d / "grid.csv"
    data.write_text("y,t,x1,x2\n" + "".join(f"{float(y)!r},{int(a)},{float(u)!r},{float(v)!r}\n"
                                            for y, a, (u, v) in zip(ds.Y, ds.T, ds.X)))
    q.write_text("x1,x2\n" + "".join(f"{u},{v}\n" for u in (0.0, 0.5, 1.0) for v in (0.0, 1.0)))
    yb = f"{float(ds.outcome_bounds[0])!r},{float(ds.outcome_bounds[1])!r}"
    return d, data, q, yb, float(ds.outcome_bounds[1] - ds.outcome_bounds[0])


def cate_args(data, yb, eps):
    return ["cate", data, "--outcome", "y", "--treatment", "t", "--covariates", "x1,x2", "--outcome-bounds", yb,
            "--x-bounds", "0,1", "--epsilon", eps, "--delta", "1e-5"]


@pytest.mark.parametrize("eps", ["0.1", "2", "inf"])
def test_cate_stays_in_the_feasible_range(cate_files, eps):
    """`dp-causal cate` and `cate-eval` never print a value or interval endpoint outside the
    feasible range [a - b, b - a], and never call an epsilon = inf result private."""
    d, data, q, yb, R = cate_files
    for seed in range(3):
        code, out, err = run(cate_args(data, yb, eps) + ["--query", q, "--seed", seed, "--json"])
        r = json.loads(out)
        assert code == 0 and err == "" and r["feasible_range"] == [-R, R]
        assert all(-R <= a <= v <= b <= R for v, a, b in zip(r["cate"], r["lower"], r["upper"]))
        assert -R <= r["ate_interval"][0] <= r["ate"] <= r["ate_interval"][1] <= R
        f = d / f"f{eps}_{seed}.npz"
        code, out, err = run(cate_args(data, yb, eps) + ["--save", f, "--seed", seed])
        assert code == 0 and err == ""
        code, out, err = run(["cate-eval", f, "--points", q, "--json"])
        r = json.loads(out)
        assert code == 0 and (r["lower"] is None) == (eps == "inf")    # epsilon = inf: no noise, no interval
        ends = zip(r["lower"], r["upper"]) if r["lower"] is not None else [(v, v) for v in r["cate"]]
        assert all(-R <= a <= v <= b <= R for v, (a, b) in zip(r["cate"], ends))
        for args in (cate_args(data, yb, eps) + ["--query", q, "--seed", seed], ["cate-eval", f, "--points", q]):
            code, out, err = run(args)
            assert code == 0 and ("NON-PRIVATE" in out) == (eps == "inf") and ("-DP" in out) == (eps != "inf"), out


def test_cate_eval_subprocess_needs_no_data(cate_files, tmp_path):
    "The saved function is evaluated by a separate process that never sees the training file (it is moved away)."
    d, data, q, yb, R = cate_files
    f = tmp_path / "g.npz"
    code, out, err = run(cate_args(data, yb, "1") + ["--save", f, "--seed", 0])
    assert code == 0 and "publishable" in out
    alone = tmp_path / "alone"; alone.mkdir()
    shutil.copy(f, alone / "g.npz"); shutil.copy(q, alone / "grid.csv")
    p = subprocess.run(CLI + ["cate-eval", "g.npz", "--points", "grid.csv", "--out", "vals.csv"], cwd=alone,
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0 and p.stderr == "", p.stderr
    rows = (alone / "vals.csv").read_text().splitlines()
    assert rows[0] == "x1,x2,cate,lower,upper" and len(rows) == 7


@pytest.mark.parametrize("content, message, secret", [
    (b"y,t,x1,x2\n0.5,1,0.2,0.3\n0.\xe92,0,0.1,0.9\n", "not valid UTF-8", "xe9"),
    (b"y,t,x1,x2\n0.5,1,0.2,0.3\n0.25,0,0.1,7.125\n", "outside the declared --x-bounds", "7.125"),
    (b"y,t,x1,x2\n0.5,1,0.2,0.3\n0.25,3,0.1,0.5\n", "T must be binary", "3"),
    (b"y,t,x1,x2\n0.5,1,0.2,0.3\n0.25,0,,0.5\n", "has missing values", "0.25"),
])
def test_cate_bad_inputs(tmp_path, cate_files, content, message, secret):
    "The bad-input contract of `ate` holds for `cate`: one line, exit 2, no data value, row or count."
    d, data, q, yb, R = cate_files
    p = tmp_path / "bad.csv"; p.write_bytes(content)
    code, out, err = run(cate_args(p, "0,1", "1") + ["--query", q])
    assert code == 2 and message in err and err.count("\n") == 1 and "Traceback" not in err, err
    assert secret not in err.replace("(0, 1)", "").replace("{0, 1}", "") and "line" not in err, err


def test_schema_neighbours_behave_alike(tmp_path):
    """With a declared schema and --fill-missing, a record with an unseen category, a missing cell or a non-numeric
    cell in a numeric column is encoded by the schema's public rule: the command's observable behaviour (exit status,
    stderr, the released fields other than the noised numbers) is the same as on the neighbour with an ordinary
    record."""
    from dp_causal_nb.schema import Schema
    rng = np.random.default_rng(0); n = 300
    rows = [(float(np.clip(rng.normal(), -2, 2)), int(rng.uniform() < 0.5), float(rng.uniform(20, 80)), str(rng.choice(["a", "b"])))
            for _ in range(n)]
    sj = tmp_path / "schema.json"
    Schema.from_dict({"age": (20, 80), "group": {"categories": ["a", "b"]}}).to_json(sj)
    def observe(last):
        p = tmp_path / "d.csv"
        p.write_text("y,t,age,group\n" + "".join(f"{a},{b},{c},{d}\n" for a, b, c, d in rows[:-1] + [last]))
        code, out, err = run(["ate", p, "--outcome", "y", "--treatment", "t", "--schema", sj, "--outcome-bounds", "-2,2",
                              "--epsilon", "1", "--delta", "1e-6", "--json", "--fill-missing"])
        r = json.loads(out) if code == 0 else {}
        return code, err, sorted(r), r.get("features"), r.get("design"), r.get("split_sizes")
    ordinary = observe((0.1, 1, "40", "a"))
    assert ordinary[0] == 0 and ordinary[1] == ""
    for odd in [(0.1, 1, "40", "zz"), (0.1, 1, "40", ""), (0.1, 1, "", "a"), (0.1, 1, "forty", "b"), (0.1, 1, "NA", "NA")]:
        assert observe(odd) == ordinary, odd


# --- one grammar, typed output, the missing-value rule, a closed pipe, a light start ---------------------------------

def test_usage_marks_what_is_required():
    "The usage lines mark the required flags (the budget as a required group) and the help says which design runs."
    code, out, err = run(["ate", "--help"])
    usage = " ".join(out.split("\n\n")[0].split())
    assert code == 0 and "(--epsilon E | --mu M)" in usage and "--outcome COL" in usage and "[--outcome" not in usage
    assert "cross-fitted design" in out and "fold ensemble" in out and "difference in means" in out
    code, out, err = run(["cate", "--help"])
    text = " ".join(out.split())
    assert code == 0 and "what to release (required: --query, --save, or both)" in text
    assert '"final: kernel (needed by --save)"' in text and "--query with --save: one kernel fit, one release" in text


def test_x_bounds_one_pair_or_one_per_column_in_both_jobs(csv_path, cate_files):
    "`--x-bounds LO,HI` and the same pair repeated per column give the same release, in `ate` and in `cate`."
    args = base(csv_path) + ["--epsilon", "1", "--delta", "1e-6", "--seed", "0", "--json"]
    one = run(args + ["--x-bounds", "-5,5"])
    per = run(args + ["--x-bounds", "-5,5;-5,5"])
    assert one[0] == 0 and json.loads(one[1])["design"] in ("crossfit", "split") and one == per
    d, data, q, yb, R = cate_files
    cargs = cate_args(data, yb, "1")
    one = run(cargs + ["--query", q, "--seed", 0, "--json"])
    per = run([a if a != "0,1" else "0,1;0,1" for a in cargs] + ["--query", q, "--seed", 0, "--json"])
    assert one[0] == 0 and one == per
    code, out, err = run(args + ["--x-bounds", "-5,5;-5,5;0,1"])
    assert code == 2 and "3 pairs for 2 covariates" in err


def test_one_clip_flag_for_outcomes_and_covariates(tmp_path):
    "`--clip` is the one spelling in both jobs; without it a covariate outside --x-bounds is refused in both."
    p = tmp_path / "d.csv"
    p.write_text("y,t,x\n" + "".join(f"{(i % 5) / 5},{i % 2},{(i % 7) / 7}\n" for i in range(59)) + "0.5,1,9.5\n")
    common = ["--outcome", "y", "--treatment", "t", "--covariates", "x", "--x-bounds", "0,1", "--outcome-bounds", "0,1",
              "--epsilon", "1", "--delta", "1e-6", "--seed", "0"]
    for job in (["ate", p], ["cate", p, "--query", p]):
        code, out, err = run(job + common)
        assert code == 2 and "outside the declared --x-bounds" in err and "9.5" not in err, err
    code, out, err = run(["ate", p, *common, "--clip"])
    assert code == 0 and err == "", err
    code, out, err = run(["ate", p, *common, "--clip-outcomes"])
    assert code == 2 and "unrecognized arguments" in err


def _missing_file(tmp_path):
    "A numeric file whose covariate x has one missing cell, and a schema declaring x with the same bounds."
    from dp_causal_nb.schema import Schema
    rows = [f"{(i % 9) / 10},{i % 2},{(i % 13) / 13:.4f}" for i in range(120)]
    rows[17] = "0.3,1,"
    p, sj = tmp_path / "m.csv", tmp_path / "m.json"
    p.write_text("y,t,x\n" + "\n".join(rows) + "\n")
    Schema.from_dict({"x": (0, 1)}).to_json(sj)
    return p, sj


@pytest.mark.parametrize("job", ["ate", "cate"])
def test_missing_covariates_refused_alike_on_both_paths(tmp_path, job):
    """The same missing-value rule through --covariates/--x-bounds and through --schema: refused by default with the
    same one-line message naming the column and no row, value or count (nothing is charged: it comes before the fit);
    --fill-missing gives the same release on both paths."""
    p, sj = _missing_file(tmp_path)
    q = tmp_path / "q.csv"
    q.write_text("x\n0.2\n0.8\n")
    common = [job, p, "--outcome", "y", "--treatment", "t", "--outcome-bounds", "0,1", "--epsilon", "1", "--delta",
              "1e-6", "--seed", "0", "--json"] + (["--query", q] if job == "cate" else [])
    paths = (["--covariates", "x", "--x-bounds", "0,1"], ["--schema", sj])
    refused = [run(common + cov) for cov in paths]
    assert refused[0] == refused[1], refused
    code, out, err = refused[0]
    assert code == 2 and out == "" and "column 'x' has missing values" in err and "--fill-missing" in err
    assert err.count("\n") == 1 and not any(ch.isdigit() for ch in err.replace("utf-8", "")), err
    filled = [run(common + cov + ["--fill-missing"]) for cov in paths]
    assert filled[0][0] == 0 and filled[0][2] == "", filled[0]
    a, b = (json.loads(f[1]) for f in filled)
    key = "ate" if job == "ate" else "cate"
    assert a[key] == b[key] and a["n"] == 120


def test_fill_missing_needs_declared_bounds(tmp_path):
    p, _ = _missing_file(tmp_path)
    code, out, err = run(["ate", p, "--outcome", "y", "--treatment", "t", "--covariates", "x", "--outcome-bounds",
                          "0,1", "--mu", "1", "--fill-missing"])
    assert code == 2 and "--fill-missing needs declared covariate bounds" in err


def test_treatment_not_coded_01_gets_a_hint(tmp_path):
    """A treatment column not coded 0/1 (yes/no, True/False, words, other numbers) is refused with how to encode it:
    one line, and the same message whatever the cells hold (it names none of them)."""
    seen = set()
    for cells in [("yes", "no"), ("True", "False"), ("treated", "control"), ("1", "2")]:
        p = tmp_path / "d.csv"
        p.write_text("y,t\n" + "".join(f"0.{i % 9},{cells[i % 2]}\n" for i in range(20)))
        code, out, err = run(["ate", p, "--outcome", "y", "--treatment", "t", "--outcome-bounds", "0,1", "--mu", "1"])
        assert code == 2 and "1 = treated, 0 = control" in err and "yes/no" in err and err.count("\n") == 1, err
        seen.add(err)
    assert len(seen) == 1, seen


def _walk(v):
    if isinstance(v, dict):
        for x in v.values(): yield from _walk(x)
    elif isinstance(v, list):
        for x in v: yield from _walk(x)
    else: yield v


def _no_numeric_strings(r):
    "No value is a number written as a string (labels and names are fine)."
    for v in _walk(r):
        if isinstance(v, str):
            try: float(v)
            except ValueError: continue
            raise AssertionError(f"a number written as a string: {v!r}")


def test_json_is_typed(csv_path, cate_files, tmp_path):
    """--json writes numbers as JSON numbers and null for what was not released; a non-private run (epsilon = inf)
    is strict JSON: null epsilon and mu with "private": false."""
    def strict(c): raise ValueError(f"non-standard JSON constant {c}")
    code, out, err = run(base(csv_path) + ["--epsilon", "1", "--delta", "1e-6", "--seed", "0", "--json"])
    r = json.loads(out, parse_constant=strict)
    assert code == 0 and isinstance(r["ate"], float) and isinstance(r["n"], int) and r["private"] is True
    assert all(isinstance(c, float) for c in r["conf_int_95"]) and isinstance(r["epsilon"], float)
    _no_numeric_strings(r)
    code, out, err = run(base(csv_path) + ["--x-bounds", "-5,5", "--mu", "1", "--seed", "0", "--json", "--design",
                                           "split"])
    r = json.loads(out, parse_constant=strict)
    assert code == 0 and r["mu"] is None and r["n_folds"] is None and isinstance(r["split_sizes"][0], int)
    _no_numeric_strings(r)
    code, out, err = run(base(csv_path) + ["--epsilon", "inf", "--delta", "1e-6", "--json"])
    r = json.loads(out, parse_constant=strict)
    assert (r["epsilon"], r["mu"], r["private"]) == (None, None, False) and isinstance(r["ate"], float)
    d, data, q, yb, R = cate_files
    code, out, err = run(cate_args(data, yb, "inf") + ["--query", q, "--json"])
    r = json.loads(out, parse_constant=strict)
    assert code == 0 and r["epsilon"] is None and r["private"] is False
    assert all(isinstance(x, float) for row in r["points"] for x in row)
    _no_numeric_strings(r)


def test_query_and_save_fit_the_same_estimator(cate_files, tmp_path):
    """`--query --final kernel` and `--save` report the same fitted stage, each with the reason for its final stage;
    --save refuses another final stage before anything is charged, naming both flags."""
    from dp_causal_nb.accounting import default_accountant
    d, data, q, yb, R = cate_files
    keys = ("final", "learner", "lam", "propensity_clip")
    code, out, err = run(cate_args(data, yb, "1") + ["--query", q, "--final", "kernel", "--seed", 0, "--json"])
    rq = json.loads(out)
    code, out, err = run(cate_args(data, yb, "1") + ["--save", tmp_path / "g.npz", "--seed", 0, "--json"])
    rs = json.loads(out)
    assert {k: rq[k] for k in keys} == {k: rs[k] for k in keys} and rs["final"] == "kernel"
    assert (rq["final_reason"], rs["final_reason"]) == ("--final kernel", "needed by --save")
    n = len(default_accountant().ledger)
    code, out, err = run(cate_args(data, yb, "1") + ["--query", q, "--save", tmp_path / "h.npz", "--final", "auto"])
    assert code == 2 and out == "" and "--final auto cannot go with --save" in err, err
    assert len(default_accountant().ledger) == n and not (tmp_path / "h.npz").exists()
    code, out, err = run(cate_args(data, yb, "1") + ["--query", q, "--seed", 0])
    assert code == 0 and "auto second stage" in out
    assert "final: auto (DPCATE's public rule, the default with --query)" in out


@pytest.mark.parametrize("eps", ["1", "inf"])
def test_query_with_save_is_one_fit_and_one_release(cate_files, tmp_path, eps):
    """`cate --query --save` fits one estimator (the kernel stage --save needs), charges the ledger once, writes the
    function file and answers at the points with that function: the answers are exactly what `cate-eval` prints for
    the file, and the file is the one `--save` alone writes with the same seed. The output says which final ran and
    why."""
    from dp_causal_nb.accounting import default_accountant
    d, data, q, yb, R = cate_files
    both, alone = tmp_path / "both.npz", tmp_path / "alone.npz"
    n = len(default_accountant().ledger)
    code, out, err = run(cate_args(data, yb, eps) + ["--query", q, "--save", both, "--seed", 2, "--json"])
    assert code == 0 and err == "", err
    assert len(default_accountant().ledger) == n + 1
    r = json.loads(out)
    assert (r["final"], r["final_reason"]) == ("kernel", "needed by --save")
    code, out, err = run(["cate-eval", both, "--points", q, "--json"])
    e = json.loads(out)
    keys = ("points", "cate", "lower", "upper", "clamped_points", "feasible_range", "noise_sd_point", "covers", "notes")
    assert {k: r[k] for k in keys} == {k: e[k] for k in keys} and r["sha256"] == e["sha256"]
    assert run(cate_args(data, yb, eps) + ["--save", alone, "--seed", 2])[0] == 0
    assert alone.read_bytes() == both.read_bytes()
    code, out, err = run(cate_args(data, yb, eps) + ["--query", q, "--save", both, "--seed", 2])
    assert code == 0 and "final: kernel (needed by --save)" in out and f"what cate-eval {both} prints" in out


def test_closed_pipe_ends_quietly(cate_files, tmp_path):
    """`dp-causal ... | head -1`: the first line arrives, nothing is printed on stderr (no traceback, no Errno) and
    the command exits with 141 (128 + SIGPIPE). The output (20 000 points) is larger than a pipe's buffer, so the
    reader is gone before the command has written everything."""
    d, data, q, yb, R = cate_files
    f = tmp_path / "g.npz"
    assert run(cate_args(data, yb, "1") + ["--save", f, "--seed", 0])[0] == 0
    pts = tmp_path / "many.csv"
    pts.write_text("x1,x2\n" + "".join(f"{(i % 100) / 100},{(i // 100) / 200}\n" for i in range(20_000)))
    err = tmp_path / "err.txt"
    cmd = (f"{sys.executable} -m dp_causal_nb.cli cate-eval {f} --points {pts} 2>{err} | head -1; "
           "echo status ${PIPESTATUS[0]}")
    p = subprocess.run(["bash", "-c", cmd], capture_output=True, text=True, timeout=120)
    first, status = p.stdout.splitlines()[0], p.stdout.splitlines()[-1]
    assert first.startswith("shareable CATE function"), p.stdout[:200]
    assert status == "status 141" and err.read_text() == "", (status, err.read_text())
    p = subprocess.run(["bash", "-c", f"{sys.executable} -m dp_causal_nb.cli ate --help 2>{err} | head -1"],
                       capture_output=True, text=True, timeout=60)
    assert p.stdout.startswith("usage: dp-causal ate") and err.read_text() == ""


def test_command_module_imports_no_estimator():
    "`dp-causal --help` pays for no estimator: importing the command pulls in neither SciPy nor scikit-learn."
    code = ("import sys, dp_causal_nb.cli; print(sorted(m for m in ('scipy', 'sklearn', 'matplotlib', 'pandas', "
            "'dp_causal_nb.ate', 'dp_causal_nb.cate') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr


def test_cate_job_imports_no_scikit_learn(cate_files):
    """A `cate` job with query points (fit, release, intervals) imports neither scikit-learn nor scipy.stats (each takes
    about a second to import): DPCATE and the DP-ERM models use core.EstimatorBase, the interval quantile is ndtri."""
    d, data, q, yb, R = cate_files
    out, imported = _heavy_imports([str(a) for a in cate_args(data, yb, "1")] + ["--query", str(q), "--seed", "0"])
    assert "CATE" in out.stdout and imported == "[]", out.stdout[-500:] + out.stderr[-2000:]


def _heavy_imports(args):
    "(completed process, the heavy modules a fresh `dp-causal ARGS` process imported, as printed)."
    code = ("import sys, runpy; sys.argv = ['dp-causal'] + sys.argv[1:]\n"
            "try: runpy.run_module('dp_causal_nb.cli', run_name='__main__')\n"
            "except SystemExit as e: assert not e.code, e.code\n"
            "print(sorted(m for m in ('sklearn', 'scipy.stats', 'pandas') if m in sys.modules), file=sys.stderr)")
    out = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=120, check=True)
    return out, out.stderr.strip().splitlines()[-1]


def test_fold_ate_job_imports_no_scikit_learn(csv_path):
    """An `ate` job with the fold design and its default nuisance models (numpy: `PenalisedLogistic`, `LeastSquares`)
    imports neither scikit-learn nor scipy.stats nor pandas."""
    out, imported = _heavy_imports([str(a) for a in base(csv_path)] + ["--mu", "1", "--folds", "5", "--seed", "0"])
    assert "fold design" in out.stdout and imported == "[]", out.stdout[-500:] + out.stderr[-2000:]


def test_clamped_ate_release_prints_no_sensitivity_analysis(tmp_path):
    "A release clamped to the feasible range (noise-dominated) has no E-value: `sensitivity` is null in --json."
    p = tmp_path / "d.csv"
    p.write_text("y,t\n" + "".join(f"{(i % 7) / 7 - 0.4:.3f},{i % 2}\n" for i in range(60)))
    args = ["ate", p, "--outcome", "y", "--treatment", "t", "--outcome-bounds", "-1,1", "--folds", "4",
            "--epsilon", "0.05", "--delta", "1e-6", "--seed", "0"]
    r = json.loads(run(args + ["--json"])[1])
    code, out, err = run(args)
    assert code == 0 and r["clamped"] and r["sensitivity"] is None
    assert "E-value" not in out and "no sensitivity analysis" in out


def test_cate_query_marks_clamped_answers_as_cate_eval_does(cate_files):
    """`cate --query` marks a clamped value with `*` (points and their average) and lists `clamped_points` and
    `ate_clamped` in --json, as `cate-eval` does; `--alpha`'s help says what the printed intervals cover."""
    d, data, q, yb, R = cate_files
    args = cate_args(data, yb, "1") + ["--seed", "3", "--query", q, "--final", "kernel"]
    r = json.loads(run(args + ["--json"])[1])
    code, out, err = run(args)
    assert code == 0 and r["clamped"] and len(r["clamped_points"]) == len(r["cate"])
    for v, a, b, f in zip(r["cate"], r["lower"], r["upper"], r["clamped_points"]):
        assert f == (max(abs(v), abs(a), abs(b)) >= R)
    assert r["ate_clamped"] == (max(abs(r["ate"]), *map(abs, r["ate_interval"])) >= R)
    average = next(line for line in out.splitlines() if "average over the" in line)
    assert average.endswith("*") == r["ate_clamped"] and r["ate_clamped"]
    code, usage, err = run(["cate", "--help"])
    assert "sampling and privacy noise" in " ".join(usage.split())


def test_cate_kernel_at_epsilon_inf_prints_no_interval(cate_files):
    """The kernel stage at --epsilon inf derives no sampling error and has no privacy noise: no interval is printed
    (never a zero-width certainty); the values are."""
    d, data, q, yb, R = cate_files
    args = cate_args(data, yb, "inf") + ["--seed", "3", "--query", q, "--final", "kernel"]
    r = json.loads(run(args + ["--json"])[1])
    code, out, err = run(args)
    assert code == 0 and r["lower"] is None and r["upper"] is None and r["ate_interval"] is None
    assert len(r["cate"]) == len(r["clamped_points"]) and np.isfinite(r["ate"])
    average = next(line for line in out.splitlines() if "average over the" in line)
    assert "(no interval)" in average and "no intervals (none: no sampling error is derived" in out


def test_cate_query_names_what_its_intervals_are_for(cate_files):
    """`cate --query` says what its intervals are confidence intervals for (DPCATE.summary's target): the population
    fit of the released shape for the rule's stage, the non-private fit for the kernel stage; --json carries it."""
    d, data, q, yb, R = cate_files
    for final, words in (("auto", "the population fit of the released shape"),
                         ("kernel", "the non-private second-stage fit, not the CATE")):
        args = cate_args(data, yb, "1") + ["--seed", "3", "--query", q, "--final", final]
        r = json.loads(run(args + ["--json"])[1])
        code, out, err = run(args)
        assert code == 0 and r["target"].startswith(words)
        assert f"an interval is a confidence interval for {words}" in " ".join(out.split())
