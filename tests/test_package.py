"""Packaging tests: the library imports without development tools, exports match notebooks, README is current."""
import importlib, json, pathlib, pkgutil, subprocess, sys

ROOT = pathlib.Path(__file__).resolve().parent.parent

def test_runtime_imports_no_dev_packages():
    "Importing every module pulls in no nbdev/fastcore/execnb/IPython (they are development-only)."
    code = ("import importlib, pkgutil, sys, dp_causal_nb\n"
            "mods=[m.name for m in pkgutil.iter_modules(dp_causal_nb.__path__, 'dp_causal_nb.') if not m.name.endswith('_modidx')]\n"
            "[importlib.import_module(m) for m in mods]\n"
            "print(sorted(k for k in ('nbdev','fastcore','execnb','IPython') if k in sys.modules))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd="/", check=True)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr

def test_every_module_comes_from_a_notebook():
    "Each module in dp_causal_nb/ is declared by a `#| default_exp` in some notebook (no hand-written modules)."
    declared = set()
    for nb in (ROOT / "nbs").glob("*.ipynb"):
        for c in json.loads(nb.read_text())["cells"]:
            src = "".join(c["source"])
            for line in src.splitlines():
                if line.replace(" ", "").startswith("#|default_exp"): declared.add(line.split()[-1])
    mods = {p.stem for p in (ROOT / "dp_causal_nb").glob("*.py") if p.stem not in ("__init__", "_modidx")}
    assert mods <= declared, f"modules without a notebook: {sorted(mods - declared)}"

def test_readme_is_generated_from_index():
    out = subprocess.run([sys.executable, str(ROOT / "tools" / "make_readme.py"), "--check"], capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr

def test_version_matches_settings():
    import configparser, dp_causal_nb
    cfg = configparser.ConfigParser(); cfg.read(ROOT / "settings.ini")
    assert dp_causal_nb.__version__ == cfg["DEFAULT"]["version"]


def test_root_exports_are_lazy_and_complete():
    "The main estimators import from the package root without making `import dp_causal_nb` heavy."
    import subprocess, sys
    code = ("import sys, dp_causal_nb as d; assert 'sklearn' not in sys.modules, 'eager import'; "
            "from dp_causal_nb import DPATE, DPCATE, PrivacyAccountant, SharedCATEFunction; "
            "from dp_causal_nb.ate import DPATE as A; assert DPATE is A; "
            "assert all(hasattr(d, n) for n in d.__all__); print('ok')")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr


def test_package_docstring_says_what_the_library_is():
    "help(dp_causal_nb) says what the library is, names the main estimators and the command, and its example runs."
    import doctest, dp_causal_nb
    doc = dp_causal_nb.__doc__ or ""
    assert all(name in doc for name in ("differentially private", "DPATE", "DPCATE", "Schema", "dp-causal")), doc
    assert doctest.testmod(dp_causal_nb, optionflags=doctest.ELLIPSIS).failed == 0
