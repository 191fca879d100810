"""Speed of the secure samplers against numpy's floating-point ones (the table nb01a prints).

    python tests/benchmarks/bench_noise.py            # 10^6 draws
    python tests/benchmarks/bench_noise.py --n 100000
"""
import argparse, time
import numpy as np
from dp_causal_nb.secure_noise import rounded_gaussian, discrete_laplace, grid_release, plan_gaussian

def _best(fn, repeat:int=3) -> float:
    "Best wall time of `repeat` calls, in seconds."
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)

def rows(n:int=10 ** 6, vector:int=10 ** 4) -> list:
    "(what, secure seconds, numpy seconds, ratio) for n scalar draws and one release of a `vector`-long value."
    rng = np.random.default_rng(0)
    s = 6000
    plan = plan_gaussian(1.0, 0.5, vector)
    value = rng.uniform(-1, 1, vector)
    cases = [(f"{n:.0e} Gaussian draws", lambda: rounded_gaussian(s, n, rng), lambda: rng.normal(0, s, n)),
             (f"{n:.0e} Laplace draws", lambda: discrete_laplace(s, n, rng), lambda: rng.laplace(0, s, n)),
             (f"one {vector}-coordinate Gaussian release", lambda: grid_release(value, plan, rng),
              lambda: value + rng.normal(0, 1.0, vector))]
    out = []
    for what, secure, plain in cases:
        a, b = _best(secure), _best(plain)
        out.append((what, a, b, a / b))
    return out

def report(n:int=10 ** 6) -> str:
    "The benchmark as a markdown table."
    lines = ["| draws | secure (s) | numpy (s) | ratio |", "|---|---|---|---|"]
    lines += [f"| {w} | {a:.4f} | {b:.4f} | {r:.0f}× |" for w, a, b, r in rows(n)]
    return "\n".join(lines)

if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--n", type=int, default=10 ** 6)
    print(report(p.parse_args().n))
