"""Shared pytest settings. Tests run with reproducible noise (a seeded release repeats, as the docs' numbers do),
fixtures of every scope included; a test marked `os_noise` runs under the library's default instead: noise from fresh
OS entropy whatever the seed."""
import pytest
from dp_causal_nb.core import reproducible_noise, use_reproducible_noise

def pytest_configure(config):
    config.addinivalue_line("markers", "os_noise: run under the default noise policy (fresh OS entropy)")
    use_reproducible_noise()

@pytest.fixture(autouse=True)
def _noise_policy(request):
    with reproducible_noise(request.node.get_closest_marker("os_noise") is None):
        yield
