"""Speed of the secure samplers against numpy's floating-point ones (the table nb01a prints), and of a
Gaussian-process path answered on the grid (notebook 10, item 8) against the same path with numpy's draws.

    python tests/benchmarks/bench_noise.py                         # 10^6 draws, a 10^4-point path
    python tests/benchmarks/bench_noise.py --n 100000 --gp-points 2000
"""
import argparse, time, warnings
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

def gp_path_row(points:int=10 ** 4) -> tuple:
    """(what, secure seconds, numpy seconds, ratio) for one Gaussian-process path answered at `points` new points in one
    batch: `PrivateCATEFunction` (whitened values on the grid) against the former path (Cholesky factor times numpy's
    standard normal draws), on the same fit and points."""
    from scipy import linalg
    from dp_causal_nb.functional import private_kernel_function
    from dp_causal_nb.rkhs import SquaredLoss, unnormalised_kernel
    from dp_causal_nb.accounting import PrivacyAccountant
    rng = np.random.default_rng(1)
    X, Q = rng.uniform(0, 1, (200, 2)), rng.uniform(0, 1, (points, 2))
    kw = dict(bandwidth=0.3, lam=0.1, loss=SquaredLoss(1.0), x_bounds=(0, 1), epsilon=1.0, delta=1e-5)
    f = private_kernel_function(X, np.sin(3 * X[:, 0]), accountant=PrivacyAccountant(), max_points=points, **kw)
    def numpy_path():
        S = unnormalised_kernel(Q, Q, f.bandwidth) + f.jitter * np.eye(points)
        u = linalg.cholesky(S, lower=True) @ rng.standard_normal(points)
        return f._fit.predict(Q) + np.exp(f._log_amp) * u
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)     # the path's advice for large m (a shareable release)
        f(Q)
    secure = time.perf_counter() - t0
    plain = _best(numpy_path, repeat=1)
    return (f"a {points}-point Gaussian-process path", secure, plain, secure / plain)

def report(n:int=10 ** 6, gp_points:int=10 ** 4) -> str:
    "The benchmark as a markdown table."
    lines = ["| draws | secure (s) | numpy (s) | ratio |", "|---|---|---|---|"]
    lines += [f"| {w} | {a:.4f} | {b:.4f} | {r:.1f}× |" for w, a, b, r in [*rows(n), gp_path_row(gp_points)]]
    return "\n".join(lines)

if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--n", type=int, default=10 ** 6)
    p.add_argument("--gp-points", type=int, default=10 ** 4)
    a = p.parse_args()
    print(report(a.n, a.gp_points))
