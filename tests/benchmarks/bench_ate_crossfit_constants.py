"""How much of (ε, δ) should the cross-fitted AIPW design spend on its nuisance models?

Tuning beds only: the two DP-ATE simulation generators (`datasets.ate_k_study`, d = 20, and `datasets.ate_binary`,
d = 10) at n ∈ {5 000, 20 000} and ε ∈ {1, 4, 16}, δ = 1e-6, x_bounds = (−5, 5) — the beds of
bench_ate_design_rule.py. The public shares read from this table are then reported on the evaluation beds
(bench_ate_beds.py, bench_ate_paper_binary.py), which never served to choose them. For each cell the cross-fitted
design (design='crossfit', forced, whatever design='auto' would pick) runs with the nuisance share s
(`CROSSFIT_NUISANCE_SHARE`, default 1/2) set to each value in SHARES; the table gives the RMSE of the released ATE
against the true ATE and the coverage of the 95 % interval, and says whether the public proxy (`score_budget`:
`nuisance_shrinkage` at the default share below NUISANCE_SHRINKAGE_LIMIT) lets the scores be clipped ("clipped") or
keeps the worst-case score range ("worst case").
Not collected by pytest.
Run: python tests/benchmarks/bench_ate_crossfit_constants.py [--reps R] [--out FILE]
"""
import contextlib, time, warnings
import numpy as np

XB = (-5.0, 5.0)
SHARES = (0.2, 0.3, 0.5, 0.7)
CELLS = [(g, n, e) for g in ("k_study", "binary") for n in (5000, 20000) for e in (1.0, 4.0, 16.0)]


@contextlib.contextmanager
def nuisance_share(s):
    "Run the cross-fitted design with nuisance share s (the module's public constant, restored after)."
    import dp_causal_nb.ate as ate
    old = ate.CROSSFIT_NUISANCE_SHARE
    ate.CROSSFIT_NUISANCE_SHARE = s
    try: yield
    finally: ate.CROSSFIT_NUISANCE_SHARE = old


def regime(name, n, eps) -> str:
    "Whether the default cross-fitted release clips its scores (public arithmetic only)."
    from dp_causal_nb.ate import score_budget
    from dp_causal_nb.mechanisms import gdp_mu
    d = dict(k_study=20, binary=10)[name]
    sb = score_budget("aipw", "crossfit", n, d, (gdp_mu(eps, 1e-6), eps, 1e-6))
    return "clipped" if sb.rho > 0 else "worst case"


def cell(name, n, eps, reps):
    "(RMSE, coverage) of the cross-fitted design per nuisance share on one (generator, n, ε)."
    from dp_causal_nb.accounting import PrivacyAccountant
    from dp_causal_nb.ate import DPATE
    from dp_causal_nb.core import reproducible_noise
    from bench_ate_design_rule import draw
    acc = {s: [] for s in SHARES}
    for r in range(reps):
        X, T, Y, truth, ob = draw(name, n, 2000 + r)
        for s in SHARES:
            with warnings.catch_warnings(), reproducible_noise(), nuisance_share(s):
                warnings.simplefilter("ignore")
                m = DPATE(design="crossfit", x_bounds=XB, out_of_bounds="clip", epsilon=eps, delta=1e-6,
                          outcome_bounds=ob, accountant=PrivacyAccountant(), random_state=r).fit(Y, T, X=X)
            acc[s].append((m.ate_ - truth, m.conf_int_[0] <= truth <= m.conf_int_[1]))
    return {s: (float(np.sqrt(np.mean(np.array(v)[:, 0] ** 2))), float(np.mean(np.array(v)[:, 1])))
            for s, v in acc.items()}


def run(reps=30, progress=True):
    table = []
    for name, n, eps in CELLS:
        t0 = time.time()
        table.append(dict(bed=name, n=n, epsilon=eps, regime=regime(name, n, eps), rmse=cell(name, n, eps, reps)))
        if progress: print(f"  {name} n={n} eps={eps}: {time.time() - t0:.0f} s", flush=True)
    return table


def markdown(table) -> str:
    lines = ["| generator | n | ε | scores (s = 1/2) | " + " | ".join(f"s = {s:g}: RMSE (cov.)" for s in SHARES) + " |",
             "|---|---|---|---|" + "---|" * len(SHARES)]
    for r in table:
        best = min(SHARES, key=lambda s: r["rmse"][s][0])
        cells = [f"{'**' if s == best else ''}{r['rmse'][s][0]:.4g}{'**' if s == best else ''} ({r['rmse'][s][1]:.2f})"
                 for s in SHARES]
        lines.append(f"| {r['bed']} | {r['n']} | {r['epsilon']:g} | {r['regime']} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


if __name__ == "__main__":
    from _out import run_and_write
    run_and_write(__file__, run, markdown, ', δ = 1e-6, x_bounds = (−5, 5); bold: the lowest RMSE of the row', default_reps=30)
