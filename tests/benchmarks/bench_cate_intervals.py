#!/usr/bin/env python
"""Benchmark: coverage of DPCATE's intervals for the TRUE CATE (not a test; writes a markdown table).

`effect_interval` (sampling + privacy noise) and `noise_interval` (privacy noise only) at a fixed public query set of
50 points drawn from the design, `ate_interval` / `ate_noise_interval` for the average CATE over those points, and
`ate_interval` over a public sample of 2000 points (its average is close to the ATE), at ε ∈ {1, 4, 16, ∞}, for
final="auto" (the rule) and final="ridge" (calibration "parameter"). Each repetition draws a fresh data set and
fresh noise. Coverage at points = the share of (repetition, point) pairs covered; the width is the
median over them.

Usage: python tests/benchmarks/bench_cate_intervals.py [reps]   (default 50; writes tests/benchmarks/cate_intervals.md)
"""
import sys, time, warnings
from pathlib import Path
import numpy as np
from threadpoolctl import threadpool_limits
from dp_causal_nb.accounting import PrivacyAccountant
from dp_causal_nb.cate import DPCATE
from dp_causal_nb.core import reproducible_noise
from dp_causal_nb.datasets import make_oprescu_dgp

EPS = (1.0, 4.0, 16.0, np.inf)
DESIGNS = (("d = 2 (random features)", 2, 4000), ("d = 2 (random features)", 2, 16000),
           ("d = 10 (affine shape)", 10, 16000))
OUT = Path(__file__).with_name("cate_intervals.md")

def run(p, n, eps, final, reps, seed0=0):
    dgp = make_oprescu_dgp(p, 1, support_size=2, random_state=0)
    Xq = dgp.sample(50, random_state=10_000).X
    tau_q = dgp.cate(Xq)
    Xw = dgp.sample(2000, random_state=20_000).X           # a large public sample: its average is close to the ATE
    tau_w = dgp.cate(Xw).mean()
    rows = dict(pt=[], pt_noise=[], avg=[], avg_noise=[], w_pt=[], w_avg=[], wide=[])
    for r in range(reps):
        ds = dgp.sample(n, random_state=seed0 + r)
        est = DPCATE(final=final, epsilon=eps, delta=1e-5, x_bounds=ds.x_bounds, outcome_bounds=ds.outcome_bounds,
                     accountant=PrivacyAccountant(), random_state=seed0 + r).fit(ds.Y, ds.T, X=ds.X)
        lo, hi = est.effect_interval(Xq)
        nlo, nhi = est.noise_interval(Xq)
        alo, ahi = est.ate_interval(Xq)
        blo, bhi = est.ate_noise_interval(Xq)
        t = tau_q.mean()
        rows["pt"].append(np.mean((lo <= tau_q) & (tau_q <= hi)))
        rows["pt_noise"].append(np.mean((nlo <= tau_q) & (tau_q <= nhi)))
        rows["avg"].append(alo <= t <= ahi)
        rows["avg_noise"].append(blo <= t <= bhi)
        rows["w_pt"].append(np.median(hi - lo))
        rows["w_avg"].append(ahi - alo)
        wlo, whi = est.ate_interval(Xw)
        rows["wide"].append(wlo <= tau_w <= whi)
    return {k: float(np.mean(v)) if not k.startswith("w") else float(np.median(v)) for k, v in rows.items()}

def main(reps=50):
    t0 = time.time()
    lines = [f"Coverage of the true CATE by DPCATE's 95 % intervals ({reps} repetitions per row; δ = 1e-5; 50 public "
             "query points; `effect_interval`/`ate_interval` = sampling + privacy noise, `noise_interval` = privacy "
             "noise only). Written by tests/benchmarks/bench_cate_intervals.py.", "",
             "| design | n | final | ε | points: effect_interval | points: noise_interval | median width | "
             "average: ate_interval | average: ate_noise_interval | width | average over 2000 points: ate_interval |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for name, p, n in DESIGNS:
        for final in ("auto", "ridge"):
            for eps in EPS:
                # one thread: no oversubscription; the noise seeded from each repetition's random_state (the table repeats)
                with warnings.catch_warnings(), threadpool_limits(1), reproducible_noise():
                    warnings.simplefilter("ignore")
                    m = run(p, n, eps, final, reps)
                lines.append(f"| {name} | {n} | {final} | {eps:g} | {m['pt']:.1%} | {m['pt_noise']:.1%} | "
                             f"{m['w_pt']:.3g} | {m['avg']:.1%} | {m['avg_noise']:.1%} | {m['w_avg']:.3g} | "
                             f"{m['wide']:.1%} |")
                print(lines[-1], flush=True)
    lines += ["", f"(run time {time.time() - t0:.0f} s)"]
    OUT.write_text("\n".join(lines) + "\n")

if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 50)
