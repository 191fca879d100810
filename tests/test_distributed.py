"""The Dask path (optional extra `dp_causal_nb[distributed]`): a DPATE fit and an audit of DPATE releases run through
`joblib.parallel_backend("dask")` on a LocalCluster of 2 worker processes (127.0.0.1) give exactly the local results
for the same seeds; the accountant stays on the client and is charged once; the cluster is shut down by the test
within a bounded time and leaves no worker process behind. Skipped (with the reason) when dask is not installed."""
import logging, time
import numpy as np
import pytest

distributed = pytest.importorskip("distributed", reason="dask[distributed] is not installed (pip install 'dp_causal_nb[distributed]')")
psutil = pytest.importorskip("psutil", reason="psutil (a dependency of distributed) is missing")
import joblib

from dp_causal_nb.accounting import PrivacyAccountant
from dp_causal_nb.core import reproducible_noise
from dp_causal_nb.ate import DPATE
from dp_causal_nb.audit import audit_mechanism
from dp_causal_nb.datasets import ate_k_study

STOP_S = 30          # bound on the shutdown of the client and the cluster


@pytest.fixture(scope="module")
def client():
    before = {p.pid for p in psutil.Process().children(recursive=True)}
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                                       dashboard_address=":0", silence_logs=logging.ERROR)
    c = None
    try:
        c = distributed.Client(cluster, timeout=60)
        yield c
    finally:
        t0 = time.perf_counter()
        if c is not None: c.close(timeout=STOP_S)
        cluster.close(timeout=STOP_S)
        stopped = time.perf_counter() - t0
        # multiprocessing's resource tracker is a per-parent helper (not a worker) that exits with this process
        left = [p for p in psutil.Process().children(recursive=True) if p.pid not in before and p.is_running()
                and p.status() != psutil.STATUS_ZOMBIE and "multiprocessing.resource_tracker" not in " ".join(p.cmdline())]
        assert stopped < 2 * STOP_S, f"cluster shutdown took {stopped:.0f} s"
        assert not left, f"worker processes left behind: {[(p.pid, ' '.join(p.cmdline())[:200]) for p in left]}"


def _data():
    ds = ate_k_study(2000, random_state=0)
    kw = dict(epsilon=4.0, delta=1e-6, n_folds=8, outcome_bounds=ds.outcome_bounds, random_state=3)
    return ds, kw


def test_dpate_on_cluster_equals_local_and_charges_once(client):
    ds, kw = _data()
    local = DPATE(accountant=PrivacyAccountant(), **kw).fit(ds.Y, ds.T, X=ds.X)
    acc = PrivacyAccountant(10.0, 1e-5)
    with joblib.parallel_backend("dask"):
        m = DPATE(n_jobs=2, accountant=acc, **kw).fit(ds.Y, ds.T, X=ds.X)
    assert (m.ate_, m.stderr_, m.conf_int_) == (local.ate_, local.stderr_, local.conf_int_)
    assert len(acc.ledger) == 1 and acc.ledger[0].label == "DPATE(aipw, K=8)"
    assert acc.spent == (4.0, 1e-6)                 # charged once, on the client
    assert client.run(lambda: 1)                     # the workers are alive: the fit really had a cluster to use


def _dpate_release(data, rng):
    "One DPATE release on `data` (G estimator, fixed public folds) charging its own ledger, made where it runs."
    X, T, Y = data
    with reproducible_noise():   # seeded from the audit's chunk streams only (else OS entropy is mixed in: no equality)
        m = DPATE(estimator="g", epsilon=1.0, delta=1e-5, n_folds=4, outcome_bounds=(-1, 1),
                  accountant=PrivacyAccountant(), random_state=rng)
        return m.fit(Y, T, X=X, folds=np.arange(len(Y)) % 4).ate_raw_


def test_audit_on_cluster_equals_local(client):
    rng = np.random.default_rng(0)
    n = 24; X = rng.uniform(-1, 1, (n, 1)); T = np.arange(n) % 2; Y = np.clip(X[:, 0] * T, -1, 1)
    D0, D1 = (X, T, Y), (X, T, np.where(np.arange(n) == 0, 1.0, Y))   # replace one outcome
    kw = dict(n_runs=100, delta=1e-5, batch=False, random_state=7, chunk_size=25)
    local = audit_mechanism(_dpate_release, D0, D1, n_jobs=1, **kw)
    with joblib.parallel_backend("dask"):
        dist = audit_mechanism(_dpate_release, D0, D1, n_jobs=2, **kw)
    assert (dist.epsilon_lower, dist.threshold, dist.fpr, dist.fnr) == (local.epsilon_lower, local.threshold, local.fpr, local.fnr)
    assert local.epsilon_lower < 1.0
