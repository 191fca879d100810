"""DPCATE's private constant against the oracle constant, DPATE's default and the private difference in means.

Not collected by pytest. Run: python tests/benchmarks/bench_cate_constant.py [--reps R] [--out FILE]
(about 3 minutes at the default 20 repetitions on one core; notebook 08a shows the stored table
`tests/benchmarks/cate_constant.md`).

When the public rule of notebook 08a cannot pay for heterogeneity, `DPCATE(final="auto")` releases one number ĉ and
its PEHE is √(Var τ + (ĉ − τ̄)²): the best it can do is the oracle constant τ̄ (the true mean effect). Every row below
is a constant read as a CATE, scored by PEHE on 2 000 fresh query points of the bed's generator:
  oracle constant                 τ̄ (the generator's mean effect, 200 000 draws): the floor of any constant
  DPCATE auto, constant mode      `DPCATE(final="auto")`; on Dataset 1, where the rule picks a shape, its constant
                                  mode is forced (the rule's constant-mode parameters at the even split)
  DPCATE auto, rule's mode        Dataset 1 only: what the rule releases (a shape), for reference
  DPATE default                   `DPATE(x_bounds=...)` as an analyst calls it (its `ate_` as the constant)
  DPATE cross-fitted AIPW, κ=0.15 the cross-fitted score release with DPCATE's propensity clip
  private difference in means     `DPDifferenceInMeans` (confounded on these observational beds)
Columns: mean PEHE, its ratio to the oracle constant's, and the constant's bias, sd and RMSE against τ̄ over the
draws. Every release spends the same (ε, δ = 1e-5) (DPCATE's default δ). Beds: the 80-column mixed bed
(`datasets.mixed_covariates`, n = 4 800, ε ∈ {1, 8}) and Dataset 1 (`datasets.dataset1`, d = 2, n = 3 000,
ε ∈ {1, 4}); draw r uses data seed r, queries seed 10 000 + r, estimator seed 1 000 + r, noise seeded inside
`reproducible_noise()`.
"""
import argparse, contextlib, time, warnings
import numpy as np

BEDS = (("mixed (d=80)", "mixed", 4800, (1.0, 8.0)), ("Dataset 1 (d=2)", "dataset1", 3000, (1.0, 4.0)))
DELTA = 1e-5


def make(kind, n, seed):
    from dp_causal_nb.datasets import dataset1, mixed_covariates
    return (mixed_covariates if kind == "mixed" else dataset1)(n, random_state=seed)


@contextlib.contextmanager
def forced_constant():
    "DPCATE's rule with its constant mode forced (the rule's constant-mode parameters at the even split)."
    import dp_causal_nb.cate as cate
    rule = cate.default_cate_params
    def constant_rule(n, d, epsilon, delta, outcome_bounds, *, split=None):
        p = rule(n, d, epsilon, delta, outcome_bounds, split=0.5 if split is None else split)
        return p | dict(mode="constant", feature_map=None, ate_share=1.0, lam=None)
    cate.default_cate_params = constant_rule
    try: yield
    finally: cate.default_cate_params = rule


def constants(ds, eps, seed, q):
    "{row: released constant, or a (d,) CATE for the rule's own shape} on one draw."
    from dp_causal_nb.accounting import PrivacyAccountant
    from dp_causal_nb.ate import DPATE
    from dp_causal_nb.cate import DPCATE
    from dp_causal_nb.dim import DPDifferenceInMeans
    kw = dict(epsilon=eps, delta=DELTA, outcome_bounds=tuple(ds.outcome_bounds), random_state=seed)
    cate = lambda: DPCATE(x_bounds=ds.x_bounds, accountant=PrivacyAccountant(), **kw).fit(ds.Y, ds.T, X=ds.X)
    out = {}
    est = cate()
    if est.rule_["mode"] == "constant": out["DPCATE auto, constant mode"] = est.effect(q.X)
    else:
        out["DPCATE auto, rule's mode (shape)"] = est.effect(q.X)
        with forced_constant(): out["DPCATE auto, constant mode (forced)"] = cate().effect(q.X)
    out["DPATE default"] = DPATE(x_bounds=ds.x_bounds, accountant=PrivacyAccountant(), **kw).fit(ds.Y, ds.T, X=ds.X).ate_
    out["DPATE cross-fitted AIPW, κ=0.15"] = DPATE("aipw", design="crossfit", x_bounds=ds.x_bounds, propensity_clip=0.15,
                                                   accountant=PrivacyAccountant(), **kw).fit(ds.Y, ds.T, X=ds.X).ate_
    out["private difference in means"] = DPDifferenceInMeans(accountant=PrivacyAccountant(), **kw).fit(ds.Y, ds.T).ate_
    return out


def run(reps=20, beds=BEDS, progress=True):
    "One row per (bed, ε, estimator): mean PEHE, × oracle, and the constant's bias, sd and RMSE against τ̄."
    from dp_causal_nb.core import reproducible_noise
    from dp_causal_nb.experiments import pehe
    table = []
    for label, kind, n, epsilons in beds:
        tau_bar = float(make(kind, 1000, 0).dgp.sample(200_000, np.random.default_rng(7)).tau.mean())
        for eps in epsilons:
            t0, acc = time.time(), {}
            for r in range(reps):
                ds = make(kind, n, r)
                q = ds.dgp.sample(2000, np.random.default_rng(10_000 + r))
                acc.setdefault("oracle constant", []).append((pehe(np.full(len(q.tau), tau_bar), q.tau), tau_bar))
                with warnings.catch_warnings(), reproducible_noise():
                    warnings.simplefilter("ignore")
                    for k, v in constants(ds, eps, 1000 + r, q).items():
                        v = np.broadcast_to(np.asarray(v, float), q.tau.shape)
                        acc.setdefault(k, []).append((pehe(v, q.tau), float(v.mean())))
            oracle = np.mean([p for p, _ in acc["oracle constant"]])
            for k, v in acc.items():
                v = np.array(v)
                dev = v[:, 1] - tau_bar
                table.append(dict(bed=label, n=n, epsilon=eps, row=k, pehe=float(v[:, 0].mean()),
                                  ratio=float(v[:, 0].mean() / oracle), bias=float(dev.mean()), sd=float(dev.std()),
                                  rmse=float(np.sqrt(np.mean(dev ** 2)))))
            if progress: print(f"  {label} eps={eps:g}: {time.time() - t0:.0f} s", flush=True)
    return table


def markdown(table) -> str:
    lines = ["| bed | n | ε | constant | PEHE | × oracle | bias vs τ̄ | sd | RMSE vs τ̄ |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in table:
        lines.append(f"| {r['bed']} | {r['n']} | {r['epsilon']:g} | {r['row']} | {r['pehe']:.4g} | {r['ratio']:.2f} "
                     f"| {r['bias']:+.3f} | {r['sd']:.3f} | {r['rmse']:.3f} |")
    return "\n".join(lines)


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--out", default=None, help="also write the table (with how it was made) to this markdown file")
    args, t0 = ap.parse_args(), time.time()
    md = markdown(run(args.reps))
    print(md)
    if args.out:
        from _out import write_table
        write_table(args.out, f"python tests/benchmarks/bench_cate_constant.py --reps {args.reps}", time.time() - t0,
                    md, f", δ = {DELTA:g}; rows of the shape (Dataset 1, the rule's own mode) are not constants")
