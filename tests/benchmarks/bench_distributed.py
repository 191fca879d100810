"""Benchmark of DPATE's fold ensemble on one process, two loky processes and a Dask LocalCluster (2 workers), against a
plain scikit-learn cross-fitted AIPW (non-private, 5-fold `cross_val_predict`, the same nuisance models) on the same data.

Not collected by pytest. Run:  python tests/benchmarks/bench_distributed.py [--quick] [--ns 100000 250000 1000000]
                                   [--models linear hist-gb] [--modes 1proc 2proc dask2] [--json out.json]
The stored full table of notebook 20 is tests/benchmarks/bench_distributed_full.json (written with --json: the rows
and the machine facts, including the load average during the run).
The Dask column needs the optional extra (pip install "dp_causal_nb[distributed]").

Setting: `ate_trees` (the DP-ATE paper's tree setting, d = 2), K = 500 folds (quick: n = 20 000, K = 100), AIPW, μ = 1.5.
Nuisance models are public, fixed configurations: linear = LogisticRegression(newton-cholesky) / LinearRegression;
hist-gb = HistGradientBoosting{Classifier,Regressor}(max_iter=20, max_leaf_nodes=4, learning_rate=0.3,
early_stopping=False, random_state=0) -- depth-2-like trees match the piecewise-constant truth of the setting.
Each cell runs in a fresh subprocess (clean peak memory) with OMP_NUM_THREADS=1 (HistGradientBoosting's OpenMP
start-up dominates on folds of a few hundred records; the workers are the parallelism). Columns: wall time of the fit
(cluster start-up excluded, reported separately), peak RSS of the parent and of the largest worker process, and the
ratio wall / wall of the plain 5-fold cross-fitted AIPW in one process. Every cell also reports the released ATE: the
three modes must agree exactly for the same seed (the script says so in its last column).
"""
import argparse, json, os, resource, subprocess, sys, time

HGB = dict(max_iter=20, max_leaf_nodes=4, learning_rate=0.3, early_stopping=False, random_state=0)


def models(kind):
    from sklearn.linear_model import LinearRegression, LogisticRegression
    from sklearn.ensemble import HistGradientBoostingClassifier, HistGradientBoostingRegressor
    if kind == "linear": return LogisticRegression(solver="newton-cholesky"), LinearRegression()
    return HistGradientBoostingClassifier(**HGB), HistGradientBoostingRegressor(**HGB)


def plain_aipw(ds, kind, clip):
    "Non-private cross-fitted AIPW with scikit-learn only: 5-fold cross_val_predict of π, μ0, μ1 (μa fitted on arm a)."
    import numpy as np
    from sklearn.base import clone
    from sklearn.model_selection import KFold
    pm, om = models(kind)
    X, T, Y = ds.X, ds.T, ds.Y
    pi, m0, m1 = np.empty(len(Y)), np.empty(len(Y)), np.empty(len(Y))
    for tr, te in KFold(5, shuffle=True, random_state=0).split(X):
        pi[te] = clone(pm).fit(X[tr], T[tr]).predict_proba(X[te])[:, 1]
        for a, out in ((0, m0), (1, m1)):
            s = tr[T[tr] == a]; out[te] = clone(om).fit(X[s], Y[s]).predict(X[te])
    pi = np.clip(pi, clip, 1 - clip)
    return float(np.mean(m1 - m0 + T * (Y - m1) / pi - (1 - T) * (Y - m0) / (1 - pi)))


def run_one(cfg):
    import numpy as np, warnings, joblib
    from dp_causal_nb.ate import DPATE
    from dp_causal_nb.accounting import PrivacyAccountant
    from dp_causal_nb.datasets import ate_trees
    ds = ate_trees(cfg["n"], random_state=0)
    out = {}
    if cfg["mode"] == "plain":
        t = time.perf_counter(); out["ate"] = plain_aipw(ds, cfg["models"], 0.2); out["wall"] = time.perf_counter() - t
    else:
        pm, om = models(cfg["models"])
        est = DPATE("aipw", n_folds=cfg["K"], mu=1.5, outcome_bounds=ds.outcome_bounds, propensity_clip=0.2,
                    propensity_model=pm, outcome_model=om, n_jobs=1 if cfg["mode"] == "1proc" else 2,
                    accountant=PrivacyAccountant(), random_state=0)
        cluster = client = None
        try:
            if cfg["mode"] == "dask2":
                import logging
                from distributed import Client, LocalCluster
                t = time.perf_counter()
                cluster = LocalCluster(n_workers=cfg.get("workers", 2), threads_per_worker=1, processes=True,
                                       host="127.0.0.1", dashboard_address=":0", silence_logs=logging.ERROR)
                client = Client(cluster, timeout=60); out["startup"] = time.perf_counter() - t
                backend = joblib.parallel_backend("dask")
            else: backend = joblib.parallel_backend("loky")
            with backend, warnings.catch_warnings():
                warnings.simplefilter("ignore")
                t = time.perf_counter(); est.fit(ds.Y, ds.T, X=ds.X); out["wall"] = time.perf_counter() - t
        finally:
            if client is not None: client.close(timeout=30)
            if cluster is not None: cluster.close(timeout=30)
            joblib.externals.loky.get_reusable_executor().shutdown(wait=True)
        out["ate"] = est.ate_
    out["rss_parent_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    out["rss_child_mb"] = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    return out


def run_cell(cfg, timeout=None):
    env = dict(os.environ, OMP_NUM_THREADS="1")
    try:
        p = subprocess.run([sys.executable, __file__, "--one", json.dumps(cfg)], capture_output=True, text=True,
                           env=env, timeout=timeout)
    except subprocess.TimeoutExpired: return dict(error=f"timeout {timeout} s")
    if p.returncode: return dict(error=p.stderr.strip().splitlines()[-1][:200] if p.stderr.strip() else "failed")
    return json.loads(p.stdout.strip().splitlines()[-1])


def bench(ns, kinds, modes, K, timeout=None, log=print):
    "All cells; returns a list of dict rows (n, models, mode, wall, startup, rss_parent_mb, rss_child_mb, ate, ratio)."
    rows = []
    for n in ns:
        for kind in kinds:
            base = run_cell(dict(n=n, models=kind, mode="plain", K=K), timeout)
            rows.append(dict(n=n, K=K, models=kind, mode="plain 5-fold AIPW (non-private)", **base, ratio=1.0)); log(rows[-1])
            for mode in modes:
                r = run_cell(dict(n=n, models=kind, mode=mode, K=K), timeout)
                ratio = r["wall"] / base["wall"] if "wall" in r and "wall" in base else float("nan")
                rows.append(dict(n=n, K=K, models=kind, mode=mode, **r, ratio=ratio)); log(rows[-1])
    return rows


def table(rows) -> str:
    names = {"1proc": "DPATE, 1 process", "2proc": "DPATE, 2 processes (loky)", "dask2": "DPATE, LocalCluster 2 workers"}
    lines = ["| n | K | nuisance | run | wall (s) | peak RSS parent (MB) | peak RSS worker (MB) | wall / plain | ATE |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['n']} | {r['K']} | {r['models']} | {names.get(r['mode'], r['mode'])} | {r['error']} | | | | |"); continue
        su = f" (+{r['startup']:.0f} s start-up)" if "startup" in r else ""
        child = f"{r['rss_child_mb']:.0f}" if r["mode"] in ("2proc", "dask2") else "–"
        lines.append(f"| {r['n']} | {r['K']} | {r['models']} | {names.get(r['mode'], r['mode'])} | {r['wall']:.1f}{su} | "
                     f"{r['rss_parent_mb']:.0f} | {child} | {r['ratio']:.1f} | {r['ate']:.6f} |")
    return "\n".join(lines)


def machine_meta(load_samples=None) -> dict:
    "Public facts about the run: date, CPU model, cores, library versions, load averages (samples if given)."
    import platform, datetime, sklearn, numpy
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), platform.processor())
    meta = dict(date=datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"), cpu=cpu,
                cores=os.cpu_count(), python=platform.python_version(), numpy=numpy.__version__,
                sklearn=sklearn.__version__, loadavg_at_end=list(os.getloadavg()), command=" ".join(sys.argv))
    if load_samples: meta["loadavg_1min"] = dict(min=min(load_samples), mean=sum(load_samples) / len(load_samples),
                                                   max=max(load_samples), samples=len(load_samples))
    return meta


def load_stored(path):
    "(meta, rows) from a JSON written with --json (older files: a bare list of rows, meta = {})."
    data = json.load(open(path))
    return (data.get("meta", {}), data["rows"]) if isinstance(data, dict) else ({}, data)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--one", help=argparse.SUPPRESS)
    ap.add_argument("--quick", action="store_true", help="n = 20 000, K = 100 (smoke test)")
    ap.add_argument("--ns", type=int, nargs="+", default=[100_000, 250_000, 1_000_000])
    ap.add_argument("--K", type=int, default=500)
    ap.add_argument("--models", nargs="+", default=["linear", "hist-gb"])
    ap.add_argument("--modes", nargs="+", default=["1proc", "2proc", "dask2"])
    ap.add_argument("--timeout", type=float, default=None, help="seconds per cell")
    ap.add_argument("--json", help="also write the rows here")
    a = ap.parse_args()
    if a.one:
        print(json.dumps(run_one(json.loads(a.one)))); return
    ns, K = ([20_000], 100) if a.quick else (a.ns, a.K)
    rows = bench(ns, a.models, a.modes, K, a.timeout, log=lambda r: print(r, file=sys.stderr, flush=True))
    if a.json: json.dump(dict(meta=machine_meta(), rows=rows), open(a.json, "w"), indent=1)
    print(table(rows))


if __name__ == "__main__":
    main()
