"""dp_causal_nb: differentially private causal inference, with every privacy constant derived, checked and audited.

Each release is (ε, δ)-DP (or μ-GDP) for public inputs the user declares (outcome and covariate bounds, clipping
levels, the data split), is charged to a privacy accountant before any noise is drawn, and publishes only noised
numbers. The main estimators, importable from here:

- `DPATE`: private average treatment effect with a private interval: the difference in means for a declared
  randomised trial, else AIPW (or IPW, G-formula) with DP nuisance models on a public split (covariate bounds
  declared) or the model-agnostic fold ensemble of Lebeda et al.
- `DPCATE`: private conditional average treatment effect (R- or DR-learner, second stage released once);
  `release_cate_function` and `release_shareable_cate_function` release the whole CATE function.
- `DPSLearner`, `DPTLearner`, `DPXLearner`, `DPRLearner`, `DPDRLearner`: private meta-learners.
- `DPLogisticRegression`, `DPRidgeRegression`: DP empirical risk minimisation.
- `Schema`: a public declaration of covariate columns, so data frames with categorical columns go in as they are.
- `PrivacyAccountant`, `GDPAccountant`, `default_accountant`: the budget ledger; `audit_mechanism`: an empirical audit.

The command line `dp-causal` (`dp-causal ate --help`) runs the same estimators on a CSV file.

Examples
--------
>>> import numpy as np
>>> from dp_causal_nb import DPATE
>>> rng = np.random.default_rng(0)
>>> T = rng.integers(0, 2, 1000)
>>> Y = np.clip(0.3 * T + rng.normal(0, 0.5, 1000), -2, 2)
>>> print(DPATE(epsilon=1.0, delta=1e-6, outcome_bounds=(-2, 2), randomized=True).fit(Y, T).summary())
DP-ATE [dim, difference in means, no nuisance models, n=1000]: ...
"""
__version__ = "0.1.0"

# The main estimators and helpers, importable from the package root (`from dp_causal_nb import DPATE`).
# Loaded lazily (PEP 562), so `import dp_causal_nb.core` does not pay for scikit-learn.
_EXPORTS = {
    "DPATE": "ate", "meta_analysis": "ate", "cross_fit_ate": "ate",
    "DPCATE": "cate",
    "DPSLearner": "meta", "DPTLearner": "meta", "DPXLearner": "meta", "DPRLearner": "meta", "DPDRLearner": "meta",
    "release_cate_function": "functional", "release_shareable_cate_function": "functional",
    "SharedCATEFunction": "functional", "PublishedCATEValues": "functional",
    "DPLogisticRegression": "erm", "DPRidgeRegression": "erm",
    "PrivacyAccountant": "accounting", "GDPAccountant": "accounting", "default_accountant": "accounting",
    "set_default_accountant": "accounting",
    "audit_mechanism": "audit", "BudgetError": "core", "PrivacyLeakWarning": "core",
    "Schema": "schema", "infer_schema": "schema",
}
__all__ = sorted(_EXPORTS)

def __getattr__(name):
    if name in _EXPORTS:
        import importlib
        return getattr(importlib.import_module(f".{_EXPORTS[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

def __dir__(): return sorted(list(globals()) + __all__)
