"""The `dp-causal` command line, run as a subprocess (as a user would run it)."""
import json, os, resource, shutil, subprocess, sys, time
import numpy as np
import pytest

CLI = [sys.executable, "-m", "dp_causal_nb.cli"]


def run(args, timeout=120):
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


def base(path):
    return ["ate", path, "--outcome", "outcome", "--treatment", "treated", "--covariates", "age,weight",
            "--outcome-bounds", "-1,1"]


def test_ate_json(csv_path):
    code, out, err = run(base(csv_path) + ["--epsilon", "2", "--delta", "1e-6", "--folds", "10", "--seed", "3", "--json"])
    assert code == 0, err
    r = json.loads(out)
    assert r["n"] == 400 and r["n_folds"] == 10 and r["estimator"] == "aipw"
    assert r["epsilon"] == 2.0 and r["delta"] == 1e-6 and r["mu"] > 0
    lo, hi = r["conf_int_95"]
    assert lo < r["ate"] < hi
    # same seed, same release; the default estimator text output names the budget
    code2, out2, _ = run(base(csv_path) + ["--epsilon", "2", "--delta", "1e-6", "--folds", "10", "--seed", "3", "--json"])
    assert json.loads(out2)["ate"] == r["ate"]


def test_ate_text_and_mu(csv_path):
    code, out, err = run(base(csv_path) + ["--mu", "1", "--estimator", "g"])
    assert code == 0, err
    assert "private ATE" in out and "95% CI (private)" in out and "GDP" in out


@pytest.mark.parametrize("extra, content, message", [
    (["--mu", "1", "--folds", "2"], None, "n_folds must be an int in [3, n=400]"),
    (["--mu", "1", "--folds", "401"], None, "n_folds must be an int in [3, n=400]"),
    (["--mu", "1", "--propensity-clip", "0.5"], None, "propensity_clip must lie in (0, 0.5)"),
    (["--mu", "1"], "nan", "missing value"),
    (["--mu", "1"], "nonbinary", "T must be binary"),
    (["--mu", "1"], "outofbounds", "outside the declared public bounds"),
])
def test_bad_inputs(csv_path, tmp_path, extra, content, message):
    path = csv_path
    if content is not None:
        lines = open(csv_path).read().splitlines()
        if content == "nan": lines[5] = "0.1,0.2,1,NA"
        elif content == "nonbinary": lines[5] = "0.1,0.2,3,0.5"
        elif content == "outofbounds": lines[5] = "0.1,0.2,1,1.5"
        elif content == "nocolumn": lines[0] = "age,weight,treated,y"
        path = tmp_path / "bad.csv"
        path.write_text("\n".join(lines) + "\n")
    code, out, err = run(base(path) + extra)
    assert code == 2
    assert message in err, err
    assert err.count("\n") == 1 and "Traceback" not in err


def test_missing_file_column_and_bad_epsilon(csv_path):
    "More bad inputs (the full table is also tested in-process in nbs/13_cli.ipynb)."
    code, _, err = run(["ate", csv_path, "--outcome", "nope", "--treatment", "treated", "--outcome-bounds", "-1,1",
                        "--epsilon", "-1", "--delta", "1e-6"])
    assert code == 2 and err.count("\n") == 1 and ("column 'nope' not found" in err)


def test_missing_file_and_no_command():
    code, _, err = run(["ate", "no_such_file.csv", "--outcome", "y", "--treatment", "t", "--outcome-bounds", "0,1", "--mu", "1"])
    assert code == 2 and "cannot open" in err and err.count("\n") == 1
    code, _, err = run([])
    assert code == 2 and "choose a command" in err


def test_demo_synthetic_fast():
    "The README quick start runs `dp-causal demo`: it must take < 20 s (CPU time of the child, robust to a busy machine)."
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    code, out, err = run(["demo", "--synthetic"])
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
def test_console_script(csv_path):
    exe = shutil.which("dp-causal") or os.path.join(os.path.dirname(sys.executable), "dp-causal")
    p = subprocess.run([exe] + [str(a) for a in base(csv_path)] + ["--mu", "1", "--json"], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert "ate" in json.loads(p.stdout)
