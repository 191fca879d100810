"""Shared pytest settings. Tests run with reproducible noise (a seeded release repeats, as the docs' numbers do),
fixtures of every scope included; a test marked `os_noise` runs under the library's default instead: noise from fresh
OS entropy whatever the seed. A test marked `slow` (declared in pyproject.toml) runs only with `--run-slow`, as CI
runs the suite; the default run keeps every file under a minute. One OpenMP thread unless the environment says
otherwise: the boosting nuisances (ε = ∞) spin their threads on a shared, busy CPU (minutes instead of a second)."""
import os
os.environ.setdefault("OMP_NUM_THREADS", "1")   # read when the OpenMP runtime loads: before any test imports sklearn
import pytest
from dp_causal_nb.core import reproducible_noise, use_reproducible_noise

def pytest_configure(config):
    config.addinivalue_line("markers", "os_noise: run under the default noise policy (fresh OS entropy)")
    use_reproducible_noise()

@pytest.fixture(autouse=True)
def _noise_policy(request):
    with reproducible_noise(request.node.get_closest_marker("os_noise") is None):
        yield

def pytest_addoption(parser):
    parser.addoption("--run-slow", action="store_true", default=False,
                     help="also run the tests marked slow (CI does: .ci/run)")

def pytest_collection_modifyitems(config, items):
    if config.getoption("--run-slow"): return
    skip = pytest.mark.skip(reason="slow: run with --run-slow")
    for item in items:
        if item.get_closest_marker("slow") is not None: item.add_marker(skip)
