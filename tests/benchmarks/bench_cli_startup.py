"""Wall-clock time of the `dp-causal` command as a user meets it: `--help`, `ate --help`, a small `ate` job and a
small `cate` job, each run as a fresh process (`python -m dp_causal_nb.cli`), median of several runs.

Not collected by pytest (a timing depends on the machine and its load). Run:

    python tests/benchmarks/bench_cli_startup.py [--runs 7] [--tree PATH] [--out tests/benchmarks/cli_startup.md]

`--tree` measures another checkout of the library (its root is put first on PYTHONPATH); the default is the checkout
this script lives in. The markdown table is written to `--out` (notebook 13 shows the stored one) and printed.
The small jobs: 500 synthetic records, two covariates; `ate` with the default design without covariate bounds (the fold
ensemble with its numpy default models) and with them (DP nuisance models), and `cate` at six public query points;
none of them imports scikit-learn.
"""
import argparse, os, pathlib, platform, statistics, subprocess, sys, tempfile, time
import numpy as np

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent.parent


def write_inputs(folder):
    "A small CSV (n = 500: y in [-1, 1], t in {0, 1}, x1, x2 in [0, 1]) and six public query points."
    rng = np.random.default_rng(0)
    n = 500
    x = rng.uniform(0, 1, (n, 2))
    t = (rng.uniform(size=n) < 0.3 + 0.4 * x[:, 0]).astype(int)
    y = np.clip(0.3 * t + 0.5 * x[:, 1] - 0.2 + 0.2 * rng.normal(size=n), -1, 1)
    data, query = folder / "small.csv", folder / "points.csv"
    data.write_text("y,t,x1,x2\n" + "".join(f"{a:.5f},{b},{c:.5f},{d:.5f}\n" for a, b, c, d in zip(y, t, *x.T)))
    query.write_text("x1,x2\n" + "".join(f"{u},{v}\n" for u in (0.1, 0.5, 0.9) for v in (0.25, 0.75)))
    return data, query


def commands(data, query):
    "(label, arguments) of the timed commands."
    job = ["--outcome", "y", "--treatment", "t", "--covariates", "x1,x2", "--outcome-bounds", "-1,1"]
    return [("dp-causal --help", ["--help"]),
            ("dp-causal ate --help", ["ate", "--help"]),
            ("dp-causal ate (n = 500, fold design)", ["ate", str(data), *job, "--mu", "1", "--seed", "0"]),
            ("dp-causal ate --x-bounds (n = 500, DP nuisance models)",
             ["ate", str(data), *job, "--x-bounds", "0,1", "--epsilon", "4", "--delta", "1e-5", "--seed", "0"]),
            ("dp-causal cate --query (n = 500, 6 points)",
             ["cate", str(data), *job, "--x-bounds", "0,1", "--epsilon", "1", "--delta", "1e-5", "--query",
              str(query), "--seed", "0"])]


def time_once(args, env, cwd):
    "Seconds of one run; the run must succeed. `cwd` is a folder without the package (`-m` puts the cwd first)."
    t0 = time.perf_counter()
    p = subprocess.run([sys.executable, "-m", "dp_causal_nb.cli", *args], capture_output=True, text=True, env=env,
                       cwd=cwd)
    dt = time.perf_counter() - t0
    if p.returncode != 0: sys.exit(f"dp-causal {' '.join(args)} failed ({p.returncode}): {p.stderr.strip()}")
    return dt


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--tree", default=str(ROOT), help="root of the checkout to measure")
    ap.add_argument("--out", default=str(HERE / "cli_startup.md"))
    a = ap.parse_args()
    env = dict(os.environ, PYTHONPATH=os.path.abspath(a.tree), MPLBACKEND="Agg")
    with tempfile.TemporaryDirectory() as tmp:
        cmds = commands(*write_inputs(pathlib.Path(tmp)))
        probe = "import dp_causal_nb, os; print(os.path.dirname(os.path.dirname(dp_causal_nb.__file__)))"
        found = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, cwd=tmp)
        if os.path.realpath(found.stdout.strip()) != os.path.realpath(a.tree):
            sys.exit(f"dp_causal_nb is imported from {found.stdout.strip()!r}, not from --tree {a.tree!r}")
        for _, args in cmds: time_once(args, env, tmp)            # warm the file cache once
        rows = []
        for label, args in cmds:
            ts = [time_once(args, env, tmp) for _ in range(a.runs)]
            rows.append(f"| `{label}` | {statistics.median(ts):.2f} | {min(ts):.2f} | {max(ts):.2f} |")
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    table = ("| command | median (s) | min (s) | max (s) |\n|---|---:|---:|---:|\n" + "\n".join(rows) + "\n\n"
             f"Wall-clock seconds of a fresh process, {a.runs} runs each (after one warm-up run); Python "
             f"{platform.python_version()}, {os.cpu_count()} cores, load average {load:.1f} when measured.\n")
    pathlib.Path(a.out).write_text(table)
    print(table)


if __name__ == "__main__":
    main()
