"""Where should NUISANCE_SHRINKAGE_LIMIT sit? Tuning beds only.

The limit is a public threshold on `nuisance_shrinkage`, the proxy of how far a private outcome model is shrunk toward
its centre: at or above it DPATE's default does not clip the scores (Theorem 2b) and design='auto' runs the split
design where only the split design's models adjust. This script sweeps candidate limits on the tuning generators
(`datasets.ate_k_study`, d = 20; `datasets.ate_binary`, d = 10; a 36-column `datasets.MixedDGP` that is not the
80-column evaluation bed) and reports the default DPATE's RMSE against the true ATE and its coverage, with the
private difference in means as a row. Fits are paired across limits (same data, same noise seed) and run once per
distinct decision (reproducible noise: the pairs share their noise too). The evaluation beds (bench_ate_beds.py) never enter. Not collected by pytest.
Run: python tests/benchmarks/bench_ate_shrinkage_limit.py [--reps R] [--out FILE]
"""
import time, warnings
import numpy as np

# (switch, limit): the cross-fitted design gives way to the split design at cross-fitted shrinkage >= switch (where
# the split design's models can adjust, shrinkage < limit); scores are clipped below the limit
LIMITS = ((0.95, 0.95), (0.8, 0.8), (0.85, 0.85), (0.9, 0.9), (0.98, 0.98), (0.99, 0.99),
          (0.8, 0.95), (0.85, 0.95), (0.9, 0.95), (0.85, 0.99))
CELLS = [("k_study", 2000, 1.0), ("k_study", 2000, 4.0), ("k_study", 5000, 1.0), ("k_study", 5000, 4.0),
         ("binary", 2000, 1.0), ("binary", 5000, 1.0),
         ("mixed36", 3000, 1.0), ("mixed36", 3000, 4.0), ("mixed36", 3000, 16.0),
         ("mixed36", 8000, 1.0), ("mixed36", 8000, 4.0)]


def draw(name, n, seed):
    "(X, T, Y, true ATE, outcome_bounds, x_bounds) of one draw of a tuning generator."
    from dp_causal_nb import datasets
    if name == "mixed36":
        ds = datasets.MixedDGP(n_continuous=10, n_binary=15, levels=(3, 4, 4)).sample(n, random_state=seed)
        return ds.X, ds.T, ds.Y, float(ds.tau.mean()), tuple(ds.outcome_bounds), ds.x_bounds
    ds = dict(k_study=datasets.ate_k_study, binary=datasets.ate_binary)[name](n, random_state=seed)
    return ds.X, ds.T, ds.Y, ds.ate, ds.outcome_bounds, (-5.0, 5.0)


def decision(n, d, eps, rule):
    "The public decisions a (switch, limit) rule controls on (n, d, ε): (design run, scores clipped?)."
    switch, limit = rule
    from dp_causal_nb import ate
    mu = ate.gdp_mu(eps, 1e-6)
    shrink = {dz: ate.score_budget("aipw", dz, n, d, (mu, eps, 1e-6),
                                   split=ate.default_split("aipw") if dz == "split" else None).shrink
              for dz in ("crossfit", "split")}
    design = "split" if shrink["crossfit"] >= switch and shrink["split"] < limit else "crossfit"
    return design, shrink[design] < limit, shrink


def cell(name, n, eps, reps):
    from dp_causal_nb import ate
    from dp_causal_nb.accounting import PrivacyAccountant
    from dp_causal_nb.dim import DPDifferenceInMeans
    from dp_causal_nb.core import reproducible_noise
    X0 = draw(name, n, 0)[0]
    d = X0.shape[1]
    decisions = {L: decision(n, d, eps, L)[:2] for L in LIMITS}
    shrink = decision(n, d, eps, LIMITS[0])[2]
    acc = {}
    for s in range(reps):
        X, T, Y, truth, ob, xb = draw(name, n, 3000 + s)
        kw = dict(epsilon=eps, delta=1e-6, outcome_bounds=ob, random_state=s)
        with warnings.catch_warnings(), reproducible_noise():   # paired: the same noise under every rule
            warnings.simplefilter("ignore")
            dm = DPDifferenceInMeans(accountant=PrivacyAccountant(), **kw).fit(np.clip(Y, *ob), T)
            acc.setdefault("private difference in means", []).append((dm.ate_ - truth, dm.conf_int_[0] <= truth
                                                                      <= dm.conf_int_[1]))
            done, saved = {}, (ate.DESIGN_SWITCH_SHRINKAGE, ate.NUISANCE_SHRINKAGE_LIMIT)
            for L in LIMITS:
                if decisions[L] not in done:
                    ate.DESIGN_SWITCH_SHRINKAGE, ate.NUISANCE_SHRINKAGE_LIMIT = L
                    try:
                        m = ate.DPATE(x_bounds=xb, out_of_bounds="clip", accountant=PrivacyAccountant(), **kw)
                        m.fit(Y, T, X=X)
                        done[decisions[L]] = (m.ate_ - truth, m.conf_int_[0] <= truth <= m.conf_int_[1])
                    finally:
                        ate.DESIGN_SWITCH_SHRINKAGE, ate.NUISANCE_SHRINKAGE_LIMIT = saved
                acc.setdefault(L, []).append(done[decisions[L]])
    out = {k: (float(np.sqrt(np.mean(np.array(v)[:, 0] ** 2))), float(np.mean(np.array(v)[:, 1])))
           for k, v in acc.items()}
    return out, decisions, shrink


def run(reps=10, progress=True):
    table = []
    for name, n, eps in CELLS:
        t0 = time.time()
        r, dec, shrink = cell(name, n, eps, reps)
        table.append(dict(bed=name, n=n, epsilon=eps, result=r, decisions=dec, shrink=shrink))
        if progress: print(f"  {name} n={n} eps={eps}: {time.time() - t0:.0f} s", flush=True)
    return table


def markdown(table) -> str:
    head = " | ".join(f"switch {L[0]:g}, limit {L[1]:g}" for L in LIMITS)
    lines = ["| generator | n | ε | shrinkage (cross-fitted, split) | private DIM RMSE (cov.) | " + head + " |",
             "|---|---|---|---|---|" + "---|" * len(LIMITS)]
    mean_ratio = {L: [] for L in LIMITS}
    for r in table:
        d = r["result"]["private difference in means"]
        cells = []
        for L in LIMITS:
            rm, cv = r["result"][L]
            design, clipped = r["decisions"][L]
            cells.append(f"{rm:.4g} ({cv:.2f}) {design[:5]}{', clip' if clipped else ''}")
            mean_ratio[L].append(np.log(rm / d[0]))
        lines.append(f"| {r['bed']} | {r['n']} | {r['epsilon']:g} | {r['shrink']['crossfit']:.3f}, "
                     f"{r['shrink']['split']:.3f} | {d[0]:.4g} ({d[1]:.2f}) | " + " | ".join(cells) + " |")
    lines.append("| geometric mean RMSE / private DIM |  |  |  |  | "
                 + " | ".join(f"{np.exp(np.mean(mean_ratio[L])):.3f}" for L in LIMITS) + " |")
    cov = {L: [r["result"][L][1] for r in table] for L in LIMITS}
    lines.append("| mean coverage |  |  |  |  | " + " | ".join(f"{np.mean(cov[L]):.3f}" for L in LIMITS) + " |")
    lines.append("| cells with coverage < 0.90 |  |  |  |  | "
                 + " | ".join(str(int(np.sum(np.array(cov[L]) < 0.9))) for L in LIMITS) + " |")
    return "\n".join(lines)


if __name__ == "__main__":
    from _out import run_and_write
    run_and_write(__file__, run, markdown, ', δ = 1e-6; each cell: the default DPATE (design run, clip = scores '
                  'clipped) at that limit', default_reps=10)
