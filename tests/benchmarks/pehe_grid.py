"""PEHE grid: the previous DPCATE defaults ("before": `DPCATE(final="ridge")`) against the
rule of `dp_causal_nb.cate_defaults` ("after": `DPCATE()`, i.e. final="auto"), next to the best constant and,
at epsilon = inf, EconML's DRLearner (gradient-boosting nuisances, kernel-ridge final stage; optional extra).
Not collected by pytest.

Usage: python tests/benchmarks/pehe_grid.py --quick   # Dataset 1 n=3000 and the mixed test bed, 1 rep (~1 min)
       python tests/benchmarks/pehe_grid.py --full    # n in {3000, 10000, 30000}, eps in {0.5,...,16, inf}, 3 reps
       python tests/benchmarks/pehe_grid.py --tune    # the tuning sweep (seeds 1000+, never the evaluation seeds)
       python tests/benchmarks/pehe_grid.py --tune-affine > tests/benchmarks/tune_affine.md   # d > 10 (~1 min)
       python tests/benchmarks/pehe_grid.py --robustness > tests/benchmarks/robustness.md     # other shapes (~1 min)
       python tests/benchmarks/pehe_grid.py --tune-switch > tests/benchmarks/tune_switch.md   # RFF vs affine by d
Evaluation seeds: data 0, 1, 2; query points from seed 10_000 + rep (fresh draws of the same DGP).
Single-threaded on purpose (shared CPU): OMP/BLAS threads are set to 1 before numpy is imported.
"""
import os, sys, time, warnings
for _v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"): os.environ.setdefault(_v, "1")
import numpy as np

EPS = (0.5, 1, 2, 4, 8, 16, np.inf)


def _before(ds, eps, rep):
    from dp_causal_nb.cate import DPCATE
    from dp_causal_nb.accounting import PrivacyAccountant
    return DPCATE(final="ridge", epsilon=eps, x_bounds=ds.x_bounds, outcome_bounds=ds.outcome_bounds, random_state=rep,
                  accountant=PrivacyAccountant()).fit(ds.Y, ds.T, X=ds.X)


def _after(ds, eps, rep, params=None, X=None, x_bounds=None):
    "DPCATE() with the rule; `params` (tuning only) replaces the rule's dict for this fit; X/x_bounds replace ds's."
    from unittest import mock
    from dp_causal_nb import cate
    from dp_causal_nb.accounting import PrivacyAccountant
    X, xb = (ds.X, ds.x_bounds) if X is None else (X, x_bounds)
    est = cate.DPCATE(epsilon=eps, x_bounds=xb, outcome_bounds=ds.outcome_bounds, accountant=PrivacyAccountant(), random_state=rep)
    if params is None: return est.fit(ds.Y, ds.T, X=X)
    with mock.patch.object(cate, "default_cate_params", lambda *a, **k: dict(params)):
        return est.fit(ds.Y, ds.T, X=X)


def _constant_params(n, d, eps, outcome_bounds):
    "The rule's parameters with the private constant forced (the baseline every shape is compared with)."
    from dp_causal_nb.cate_defaults import default_cate_params
    return default_cate_params(n, d, eps, 1e-5, outcome_bounds, split=0.5) | dict(mode="constant", ate_share=1.0,
                                                                             feature_map=None, lam=None)


def _econml(ds, rep):
    from econml.dr import DRLearner
    from sklearn.ensemble import GradientBoostingClassifier, GradientBoostingRegressor
    from sklearn.kernel_ridge import KernelRidge
    est = DRLearner(model_propensity=GradientBoostingClassifier(random_state=rep),
                    model_regression=GradientBoostingRegressor(random_state=rep),
                    model_final=KernelRidge(kernel="rbf", alpha=1.0), cv=2, random_state=rep)
    return est.fit(ds.Y, ds.T, X=ds.X)


def run(cases, reps, econml_max_n=10_000, progress=True):
    "cases: (name, make(n, random_state), n, epsilons). Returns a list of dict rows."
    from dp_causal_nb.experiments import pehe
    rows = []
    try: import econml  # noqa: F401
    except ImportError: econml = None
    for name, make, n, epss in cases:
        for rep in range(reps):
            ds = make(n, random_state=rep); q = ds.dgp.sample(2000, np.random.default_rng(10_000 + rep))
            base = dict(dataset=name, n=n, rep=rep, const=float(np.sqrt(np.mean((q.tau - ds.dgp.sample(200_000, np.random.default_rng(7)).tau.mean()) ** 2))))
            for eps in epss:
                for method, fit in (("before", _before), ("after", _after)):
                    t = time.perf_counter()
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore"); est = fit(ds, eps, rep)
                        rows.append(base | dict(method=method, epsilon=eps, pehe=pehe(est.effect(q.X), q.tau),
                                                seconds=time.perf_counter() - t,
                                                mode=(getattr(est, "rule_", None) or {}).get("mode", "")))
            if econml is not None and np.inf in epss and n <= econml_max_n:
                t = time.perf_counter()
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore"); est = _econml(ds, rep)
                rows.append(base | dict(method="EconML DRLearner", epsilon=np.inf,
                                        pehe=pehe(np.ravel(est.effect(q.X)), q.tau), seconds=time.perf_counter() - t, mode=""))
            if progress: print(f"# {name} n={n} rep={rep} done", file=sys.stderr, flush=True)
    return rows


def table(rows) -> str:
    "Markdown: mean PEHE per (dataset, n, method) and ε; last column the best constant (PEHE of the true ATE)."
    eps = sorted({r["epsilon"] for r in rows})
    keys = sorted({(r["dataset"], r["n"], r["method"]) for r in rows},
                  key=lambda k: (k[0], k[1], ["before", "after", "EconML DRLearner"].index(k[2])))
    out = ["| dataset | n | method | " + " | ".join("ε=∞" if np.isinf(e) else f"ε={e:g}" for e in eps) + " | best const |",
           "|" + "---|" * (4 + len(eps))]
    for d, n, m in keys:
        sel = [r for r in rows if (r["dataset"], r["n"], r["method"]) == (d, n, m)]
        cells = []
        for e in eps:
            v = [r["pehe"] for r in sel if r["epsilon"] == e]
            modes = {r["mode"] for r in sel if r["epsilon"] == e}
            cells.append(f"{np.mean(v):.3f}" + ("ᶜ" if modes == {"constant"} else "") if v else "")
        const = np.mean([r["const"] for r in sel])
        out.append(f"| {d} | {n} | {m} | " + " | ".join(cells) + f" | {const:.3f} |")
    return "\n".join(out) + "\n(ᶜ: the rule released the private constant)"


def cases(full: bool):
    from dp_causal_nb.datasets import dataset1, mixed_covariates
    if full:
        return ([("Dataset 1", dataset1, n, EPS) for n in (3000, 10_000, 30_000)]
                + [("mixed", mixed_covariates, 5000, EPS[:-1] + (32, 64, np.inf))])   # past 16: where a shape pays
    return [("Dataset 1", dataset1, 3000, (1, 16, np.inf)), ("mixed", mixed_covariates, 5000, (1, np.inf))]


def tune():
    "The tuning sweeps behind the rule's constants: seeds 1000-1002 only (never the evaluation seeds 0-2)."
    from dp_causal_nb.datasets import dataset1
    from dp_causal_nb.experiments import pehe
    from dp_causal_nb.cate_defaults import default_cate_params, ATE_SHARE

    def score(make, n, eps, mode, A=None, clip=1.0):
        ps = []
        for seed in range(1000, 1003):
            ds = make(n, random_state=seed); q = ds.dgp.sample(2000, np.random.default_rng(10_000 + seed))
            d, R = ds.X.shape[1], float(ds.outcome_bounds[1] - ds.outcome_bounds[0])
            if mode == "constant":
                p = _constant_params(n, d, eps, ds.outcome_bounds)
            else:
                p = default_cate_params(n, d, eps, 1e-5, ds.outcome_bounds, split=0.8)
                p |= dict(mode="function", feature_map="rff" if d <= 10 else "affine", shape_learner="dr",
                          target_clip=clip * R, lam=float(np.clip(A * p["nu"] ** (2 / 3), 1e-4, 100.0)),
                          ate_share=float(np.clip(ATE_SHARE[0] * p["nu"] * d, ATE_SHARE[1], ATE_SHARE[2])))
            with warnings.catch_warnings():
                warnings.simplefilter("ignore"); est = _after(ds, eps, seed, params=p)
            ps.append(pehe(est.effect(q.X), q.tau))
        return round(float(np.mean(ps)), 3)

    print("clip level C (Dataset 1, n = 10 000, ε = 16, λ = 5.4·ν^(2/3)):",
          {c: score(dataset1, 10_000, 16, "function", 5.4, c) for c in (0.5, 1.0, 2.0)}, flush=True)
    for name, make, n, epss, As in [("Dataset 1", dataset1, 3000, (0.5, 1, 2, 4, 8, 16), (2.7, 5.4, 10.8)),
                                    ("Dataset 1", dataset1, 10_000, (0.5, 1, 2, 4, 8, 16), (2.7, 5.4, 10.8)),
                                    ("Dataset 1", dataset1, 30_000, (0.5, 1, 2, 4, 8, 16), (2.7, 5.4, 10.8))]:
        for eps in epss:
            res = {"constant": score(make, n, eps, "constant")} | {f"A={A}": score(make, n, eps, "function", A) for A in As}
            print(f"{name} n={n} eps={eps}: {res}", flush=True)


def tune_affine():
    """The sweep behind the d > 10 regime (affine shape on targets centred on the released constant): three
    mixed-covariate designs (d = 15, 40, 80, 160), tuning seeds 1000-1002 only; λ = A·ν^(2/3) at the split 0.8 against the
    private constant at the even split. Prints a markdown table (ν·d is the index of the rule's threshold)."""
    from dp_causal_nb.datasets import MixedDGP
    from dp_causal_nb.experiments import pehe
    from dp_causal_nb.cate_defaults import default_cate_params, noise_index, ATE_SHARE
    designs = [("d=15", MixedDGP(n_continuous=5, n_binary=5, levels=(2, 3)), 5000, (1, 2, 3, 4, 8)),
               ("d=40", MixedDGP(n_continuous=10, n_binary=15, levels=(3, 3, 3, 3, 3)), 5000, (4, 8, 16, 32)),
               ("d=80", MixedDGP(), 5000, (8, 12, 16, 32, 64)),
               ("d=80", MixedDGP(), 20_000, (2, 4, 8, 16)),
               ("d=160", MixedDGP(n_continuous=40, n_binary=60, levels=(12, 12, 12, 12, 12)), 10_000, (8, 16, 32, 64))]
    As = (6.3, 9.3, 12.5)          # λ = A·ν^(2/3), ν = σ₁/n₂ (scale-free)
    print("| design | n | ε | ν·d | ν | constant | " + " | ".join(f"shape A={A}" for A in As) + " |")
    print("|---|---|---|---|---|---|" + "---|" * len(As))
    for name, dgp, n, epss in designs:
        data = [(dgp.sample(n, s), dgp.sample(2000, 10_000 + s)) for s in (1000, 1001, 1002)]
        d = data[0][0].X.shape[1]
        for eps in epss:
            def score(A):
                ps = []
                for (ds, q), seed in zip(data, (1000, 1001, 1002)):
                    if A is None:
                        p = _constant_params(n, d, eps, ds.outcome_bounds)
                    else:
                        p = default_cate_params(n, d, eps, 1e-5, ds.outcome_bounds, split=0.8)
                        R = float(ds.outcome_bounds[1] - ds.outcome_bounds[0])
                        p |= dict(mode="function", feature_map="affine", shape_learner="dr", target_clip=R,
                                  center_targets=True, lam=float(np.clip(A * p["nu"] ** (2 / 3), 1e-4, 1.0)),
                                  ate_share=float(np.clip(ATE_SHARE[0] * p["nu"] * d, ATE_SHARE[1], ATE_SHARE[2])))
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore"); est = _after(ds, eps, seed, params=p)
                    ps.append(pehe(est.effect(q.X), q.tau))
                return float(np.mean(ps))
            nud = noise_index(n, eps, 1e-5, 0.5) * d
            print(f"| {name} | {n} | {eps:g} | {nud:.4f} | {nud / d:.1e} | {score(None):.3f} | " + " | ".join(f"{score(A):.3f}" for A in As) + " |", flush=True)


def _padded(n, seed, extra):
    "Dataset 1 with `extra` irrelevant U(box) columns appended (τ depends on the first two), and 2 000 query points."
    from dp_causal_nb.datasets import dataset1
    ds = dataset1(n, random_state=seed); rng = np.random.default_rng(seed + 77)
    lo, hi = float(ds.x_bounds[0][0]), float(ds.x_bounds[1][0])
    X = np.c_[ds.X, rng.uniform(lo, hi, (n, extra))]
    xb = (np.r_[ds.x_bounds[0], np.full(extra, lo)], np.r_[ds.x_bounds[1], np.full(extra, hi)])
    q = ds.dgp.sample(2000, np.random.default_rng(10_000 + seed))
    return ds, X, xb, np.c_[q.X, np.random.default_rng(seed + 99).uniform(lo, hi, (2000, extra))], q.tau


def robustness():
    """Designs the rule was NOT fitted on (evaluation seeds 0-2): Dataset 1 padded with 2 to 30 irrelevant columns
    (d = 4 to 32: both feature-map regimes), the rule against the private constant."""
    from dp_causal_nb.experiments import pehe
    print("| design | d | n | ε | rule's mode | rule | private constant | rule / constant |\n|---|---|---|---|---|---|---|---|")
    for extra in (2, 6, 9, 30):
        for n in (3000, 10_000):
            for eps in (1, 4, 16):
                res, modes = {"rule": [], "constant": []}, set()
                for seed in (0, 1, 2):
                    ds, X, xb, Xq, tau = _padded(n, seed, extra)
                    for how in res:
                        p = _constant_params(n, X.shape[1], eps, ds.outcome_bounds) if how == "constant" else None
                        with warnings.catch_warnings():
                            warnings.simplefilter("ignore"); est = _after(ds, eps, seed, params=p, X=X, x_bounds=xb)
                        res[how].append(pehe(est.effect(Xq), tau))
                        if how == "rule": modes.add(est.rule_["mode"])
                r, c = np.mean(res["rule"]), np.mean(res["constant"])
                print(f"| Dataset 1 + {extra} noise columns | {2 + extra} | {n} | {eps:g} | {'/'.join(sorted(modes))} | "
                      f"{r:.3f} | {c:.3f} | {r / c:.2f} |", flush=True)


def tune_switch():
    """Where the random-feature shape should give way to the affine one (the rule's D_RFF_MAX): padded Dataset 1
    (d = 3 to 8), tuning seeds 1000-1002, the rule with each map forced for every d (D_RFF_MAX = 10 or 1)."""
    from dp_causal_nb import cate_defaults
    from dp_causal_nb.experiments import pehe
    keep = cate_defaults.D_RFF_MAX
    print("| d | n | ε | random features (mode) | affine, centred (mode) |\n|---|---|---|---|---|")
    try:
        for extra in (1, 2, 3, 4, 6):
            for n in (3000, 10_000):
                for eps in (1, 4, 16, np.inf):
                    cells = []
                    for dmax in (10, 1):
                        cate_defaults.D_RFF_MAX = dmax; ps, modes = [], set()
                        for seed in (1000, 1001, 1002):
                            ds, X, xb, Xq, tau = _padded(n, seed, extra)
                            with warnings.catch_warnings():
                                warnings.simplefilter("ignore"); est = _after(ds, eps, seed, X=X, x_bounds=xb)
                            ps.append(pehe(est.effect(Xq), tau)); modes.add(est.rule_["mode"])
                        cells.append(f"{np.mean(ps):.3f} ({'/'.join(sorted(modes))})")
                    print(f"| {2 + extra} | {n} | {eps:g} | " + " | ".join(cells) + " |", flush=True)
    finally:
        cate_defaults.D_RFF_MAX = keep


if __name__ == "__main__":
    if "--tune-switch" in sys.argv: tune_switch(); sys.exit()
    if "--robustness" in sys.argv: robustness(); sys.exit()
    if "--tune-affine" in sys.argv: tune_affine(); sys.exit()
    if "--tune" in sys.argv: tune(); sys.exit()
    full = "--full" in sys.argv
    t0 = time.perf_counter()
    rows = run(cases(full), reps=3 if full else 1)
    print(table(rows))
    print(f"\n({len(rows)} fits, {time.perf_counter() - t0:.0f} s)")
