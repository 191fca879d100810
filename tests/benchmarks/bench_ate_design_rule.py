"""Which design should DPATE's design='auto' pick when covariate bounds are declared: split or cross-fitted?

Tuning beds only (the two DP-ATE simulation generators, `datasets.ate_k_study` and `datasets.ate_binary`, at several n
and ε); the rule read from this table is then reported on the separate evaluation beds of bench_ate_beds.py and
bench_ate_paper_binary.py, which it never saw. RMSE of the released ATE against the true ATE, coverage of the 95 %
interval, with the private difference in means as a row. Not collected by pytest.
Run: python tests/benchmarks/bench_ate_design_rule.py [--reps R] [--out FILE]
"""
import time, warnings
import numpy as np

XB = (-5.0, 5.0)


def draw(name, n, seed):
    from dp_causal_nb.datasets import ate_k_study, ate_binary
    ds = dict(k_study=ate_k_study, binary=ate_binary)[name](n, random_state=seed)
    return ds.X, ds.T, ds.Y, ds.ate, ds.outcome_bounds


def cell(name, n, eps, reps):
    "RMSE and coverage per row on one (generator, n, ε)."
    from dp_causal_nb.accounting import PrivacyAccountant
    from dp_causal_nb.ate import DPATE
    from dp_causal_nb.dim import DPDifferenceInMeans
    from dp_causal_nb.core import reproducible_noise
    acc = {}
    for s in range(reps):
        X, T, Y, truth, ob = draw(name, n, 2000 + s)
        kw = dict(epsilon=eps, delta=1e-6, outcome_bounds=ob, accountant=PrivacyAccountant(), random_state=s)
        with warnings.catch_warnings(), reproducible_noise():
            warnings.simplefilter("ignore")
            d = DPDifferenceInMeans(**kw).fit(np.clip(Y, *ob), T)
            fits = {"private difference in means": (d.ate_, *d.conf_int_)}
            for design in ("split", "crossfit"):
                m = DPATE(design=design, x_bounds=XB, out_of_bounds="clip", **kw).fit(Y, T, X=X)
                fits[design] = (m.ate_, *m.conf_int_)
        for k, (a, lo, hi) in fits.items():
            acc.setdefault(k, []).append((a - truth, lo <= truth <= hi))
    return {k: (float(np.sqrt(np.mean(np.array(v)[:, 0] ** 2))), float(np.mean(np.array(v)[:, 1])))
            for k, v in acc.items()}


def run(reps=10, progress=True):
    table = []
    for name in ("k_study", "binary"):
        for n in (2000, 5000, 20000):
            for eps in (1.0, 4.0, 16.0):
                t0 = time.time()
                r = cell(name, n, eps, reps)
                table.append(dict(bed=name, n=n, epsilon=eps, **{k: v for k, v in r.items()}))
                if progress: print(f"  {name} n={n} eps={eps}: {time.time() - t0:.0f} s", flush=True)
    return table


def markdown(table) -> str:
    lines = ["| generator | n | ε | private DIM RMSE (cov.) | split RMSE (cov.) | cross-fitted RMSE (cov.) | "
             "cross-fitted / split |", "|---|---|---|---|---|---|---|"]
    for r in table:
        d, s, c = r["private difference in means"], r["split"], r["crossfit"]
        lines.append(f"| {r['bed']} | {r['n']} | {r['epsilon']:g} | {d[0]:.4g} ({d[1]:.2f}) | {s[0]:.4g} ({s[1]:.2f}) "
                     f"| {c[0]:.4g} ({c[1]:.2f}) | {c[0] / s[0]:.2f} |")
    return "\n".join(lines)


if __name__ == "__main__":
    from _out import run_and_write
    run_and_write(__file__, run, markdown, ', δ = 1e-6, x_bounds = (−5, 5)', default_reps=10)
