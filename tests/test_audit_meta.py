"""Audits of the DP meta-learners (dp_causal_nb.meta) on near-tight adversarial replace-one neighbours, and the
broken-on-purpose controls the auditor must catch (bounds read from the data; a partition chosen from T).

Near-tight design (built in tests/_fixtures.py, used by every test_audit_meta*.py file): a one-covariate design whose
public feature map (StandardizeToBounds: (x, 1)/√2 on x_bounds (-1, 1)) is two-dimensional; all records sit at x = 1;
the replaced record changes only its outcome (lo → hi) or its arm, which moves ONE module's released coefficient along
u = φ(1) by about 2B/(nλ); the split puts that module's part at ~90 % of the records (the record lands there with that
probability); the other modules get a huge public λ, so their releases are (nearly) constant and do not blur the
statistic; the audited module gets λ = 100, where the ridge sensitivity bound 2B(1 + R/√λ)/(nλ) is within 10 % of the
achieved shift. The statistic is the released coefficient projected on u (the privacy loss concentrates on that one
number)."""
import numpy as np
from dp_causal_nb.audit import audit_mechanism
from dp_causal_nb.meta import DPTLearner, DPDRLearner
from _fixtures import EPS, DELTA, U, WEAK_N, pair, coef_mechanism, neighbours, mechanism

RUNS = 100

# ---- broken on purpose ----------------------------------------------------------------------------------------------
class _LeakyDR(DPDRLearner):
    "Broken on purpose: the outcome bounds are read from the data (what the paper's public code lets DP-EBM do)."
    def fit(self, Y, T, *, X):
        self.outcome_bounds = (float(np.min(Y)) - 1e-3, float(np.max(Y)) + 1e-3)
        return super().fit(Y, T, X=X)

def test_meta_audit_catches_bounds_read_from_data():
    D0, D1 = neighbours(hi=1.0)
    D0 = (D0[0] + np.linspace(-1e-3, 1e-3, WEAK_N), D0[1], D0[2])   # a tiny public-looking range on D0 ...
    D1 = (np.r_[1.0, D0[0][1:]], D1[1], D1[2])                 # ... and one large outcome on D1
    res = audit_mechanism(mechanism(_LeakyDR), D0, D1, n_runs=RUNS, batch=False, delta=DELTA, random_state=0,
                          statistic=lambda y: np.abs(np.asarray(y)), progress=False)
    assert res.violates(EPS), res

class _SplitOnT(DPTLearner):
    """Broken on purpose: the partition is chosen from T — each arm's model on that arm's records, the limit of
    stratifying the split on T (the paper's code stratifies its split on T). Part sizes, and so the noise scale of each
    released model, then depend on the data; parallel composition does not apply."""
    def _stages(self, mods, idx, Y, T, X, yb, k):
        return super()._stages(mods, {f"outcome{a}": np.flatnonzero(T == a) for a in (0, 1)}, Y, T, X, yb, k)

def test_meta_audit_catches_partition_chosen_from_T():
    D0, D1 = pair(12, 0, 0.0, 1, 0.0, bg_t=0)          # record 0's arm flips: the treated part has 1 record, then 2 ...
    D0[1][1] = D1[1][1] = 1                            # ... (record 1 is treated in both)
    res = audit_mechanism(coef_mechanism(_SplitOnT, "outcome1", EPS), D0, D1, n_runs=1000, batch=False, delta=DELTA,
                          random_state=0, statistic=lambda c: np.abs(np.asarray(c) @ U), progress=False)
    assert res.violates(EPS), res
    ok = audit_mechanism(coef_mechanism(DPTLearner, "outcome1", EPS), D0, D1, n_runs=400, batch=False, delta=DELTA,
                         random_state=0, statistic=lambda c: np.abs(np.asarray(c) @ U), progress=False)
    assert not ok.violates(EPS), ok                    # the library's data-free partition on the same neighbours
