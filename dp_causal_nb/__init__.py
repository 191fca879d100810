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
