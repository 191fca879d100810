"""`objective_release` (nbs/04_dp_erm.ipynb) is a public release: under a caller's np.seterr(all="raise") no
floating-point event may raise on some data only. A large public offset makes the first damped trial step of the
solver long (the Hessian is nearly Λ'·I where every σ(o) is near 0 or 1), so its logaddexp underflows on a neighbour
whose one record disagrees with the offset (on the stream below, not on the data where none does; on other
streams on both)."""
import numpy as np
import pytest

from dp_causal_nb.core import reproducible_noise
from dp_causal_nb.erm import objective_perturbation_params, objective_plan, objective_release
from dp_causal_nb.secure_noise import noise_rng

N, D, EPS, LAM, O = 2000, 2, 20.0, 1e-6, -50.0


def _pair():
    X = np.random.default_rng(0).normal(size=(N, D))
    X /= np.linalg.norm(X, axis=1)[:, None]
    y = np.zeros(N)
    y1 = y.copy()
    y1[0] = 1.0                                          # record 0 replaced: the label the offset makes unlikely
    return X, y, y1


def _release(X, y, mode):
    cal = lambda e1, d1: objective_perturbation_params(e1, d1, n=N, lam=LAM, lipschitz=1.0, curvature=0.25,
                                                       norm_bound=1.0, weight_bound=1.0)
    plan = objective_plan(EPS, 1e-5, n=N, d=D, lam=LAM, calibrate=cal, offset=O)
    with reproducible_noise(), np.errstate(all=mode):
        return objective_release(X, y, None, plan, noise_rng(0, "x"))   # a stream on which only y1 raised unguarded


@pytest.mark.parametrize("which", [1, 2])
def test_no_floating_point_event_raises(which):
    X, y, y1 = _pair()
    yy = (y, y1)[which - 1]
    got = _release(X, yy, "raise")
    assert np.array_equal(got, _release(X, yy, "ignore"))   # the guard changes no value
    assert np.all(np.isfinite(got))
