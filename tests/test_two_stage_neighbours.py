"""DP-2ERM and the composition baseline (`dp_causal_nb.two_stage`) on replace-one neighbours: a release behaves the
same on both apart from its noise (invariant 4). What must hold: the weight bound is computed so that no rounding puts
one neighbour's clipped propensity with the top outcome above it, and a propensity penalty below erm's floor is refused
from the public input alone, before the data are read."""
import numpy as np
from dp_causal_nb.accounting import PrivacyAccountant
from _fixtures import fit_outcome


def test_composition_baseline_weight_bound_rounding():
    """(1/c)·(hi−lo) can round one ulp above (hi−lo)/c: a clipped propensity with the top outcome must not raise on one
    neighbour only."""
    from dp_causal_nb.two_stage import CompositionBaselineClassifier
    clip, lo, hi = 0.07, 0.0, 7.0
    assert (1 / clip) * (hi - lo) > (hi - lo) / clip          # the rounding this test is about
    r = np.random.default_rng(1); n = 200
    X = r.uniform(-1, 1, (n, 2)); X[:, 0] = np.sign(X[:, 0])
    T = (X[:, 0] > 0).astype(int); T[:3] = 0; X[:3, 0] = 1.0
    Y = r.uniform(0, 1, n)
    outs = []
    for top in (7.0, 6.0):                                      # neighbours: record 0's outcome only
        Yv = Y.copy(); Yv[0] = top; acc = PrivacyAccountant(epsilon=10)
        m = CompositionBaselineClassifier(epsilon=4.0, x_bounds=(-1, 1), outcome_bounds=(lo, hi), propensity_clip=clip,
                                          propensity_lam=1e-3, accountant=acc, random_state=0)
        outs.append(fit_outcome(lambda: m.fit(X, T, T=T, outcome=Yv)) + ([s.label for s in acc.ledger],))
    assert outs[0] == outs[1] and outs[0][0] is None


def test_tiny_propensity_penalty_refused_before_the_data():
    "Below erm's floor the exact solve would fail on a collinear dataset only: refused from the public input alone."
    from dp_causal_nb.two_stage import DP2ERMClassifier
    n = 20; T = np.r_[np.ones(13, int), np.zeros(7, int)]; y = T.copy()
    X0 = np.ones((n, 1)); X1 = X0.copy(); X1[0, 0] = -0.7
    fit = lambda X: DP2ERMClassifier("ipw_estimated", propensity_lam=1e-18, x_bounds=(-1, 1), epsilon=1.0,
                                     accountant=PrivacyAccountant(), random_state=0).fit(X, y, T=T)
    outs = [fit_outcome(lambda X=X: fit(X)) for X in (X0, X1)]
    assert outs[0] == outs[1] and outs[0][0][0] == "ValueError" and "propensity_lam" in outs[0][0][1]
