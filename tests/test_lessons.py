"""Classroom lessons (nbs/tutorials): structure, cleanliness, run-time budgets and the run times the teacher's page shows.

`nbdev_test` already executes every lesson and solutions notebook in CI (the solutions assert the exercises' facts),
so these tests do not run the lessons again. The run-time budget is checked from the `--timing` lines of the CI's
`nbdev_test` log (`.ci-nbdev-test.log`). The times shown to teachers are measured by `test_record_lesson_times`
(DP_LESSON_TIMING=1: each notebook in a new Python process, first run after installing and later runs), which writes
nbs/tutorials/lesson_times.json; a cell of the teacher's page prints that file, and a test checks the page is current.
"""
import json, os, pathlib, re, time
import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
TUT = ROOT / "nbs" / "tutorials"
LESSONS = sorted(p for p in TUT.glob("[0-9][0-9]_*.ipynb") if not p.stem.endswith("_solutions"))
BUDGET_S = 120          # per notebook; the measured times are in lesson_times.json (shown on the teacher's page)

def _cells(path):
    return json.loads(path.read_text(encoding="utf-8"))["cells"]

def _src(cell):
    s = cell["source"]
    return s if isinstance(s, str) else "".join(s)

def _exercises(path):
    return [m.group(1) for c in _cells(path) if c["cell_type"] == "markdown"
            for m in re.finditer(r"^###\s+Exercise\s+(\d+)", _src(c), flags=re.M)]

def test_there_are_four_lessons_and_a_teachers_page():
    assert len(LESSONS) >= 4, [p.name for p in LESSONS]
    page = TUT / "index.ipynb"
    assert page.exists()
    text = "\n".join(_src(c) for c in _cells(page))
    assert 'pip install -e ".[class]"' in text and "jupyter lab" in text
    for p in LESSONS: assert p.name in text, f"the teacher's page does not list {p.name}"

def test_teachers_install_commands_can_work():
    """The package is on no index: every `pip install` of it on the teacher's page installs from the clone (`-e .`) or
    from the wheel file (named as `python -m build` names it), and every extra it names is an extra of the package."""
    import configparser
    cfg = configparser.ConfigParser()
    cfg.read(ROOT / "settings.ini")
    extras = {k.removesuffix("_requirements") for k in cfg["DEFAULT"] if k.endswith("_requirements")}
    text = "\n".join(_src(c) for c in _cells(TUT / "index.ipynb") if c["cell_type"] == "markdown")
    cmds = re.findall(r"^pip install .*$", text, flags=re.M)
    assert cmds
    for cmd in cmds:
        if "build" in cmd.split(): continue
        assert " -e " in cmd or ".whl" in cmd, f"{cmd!r} looks the package up on an index, where it is not"
        for extra in re.findall(r"\[(\w+)\]", cmd): assert extra in extras, f"{cmd!r}: no extra {extra!r}"
    wheel = f"dp_causal_nb-{cfg['DEFAULT']['version']}-py3-none-any.whl"   # the name `python -m build` gives the wheel
    assert set(re.findall(r"dp_causal_nb-\S+?\.whl", text)) == {wheel}, f"the page's wheel is not {wheel}"

@pytest.mark.parametrize("lesson", LESSONS, ids=lambda p: p.stem)
def test_lesson_structure(lesson):
    cells = _cells(lesson)
    first_md = next(_src(c) for c in cells if c["cell_type"] == "markdown")
    assert "Learning goals" in first_md and "Prerequisites" in first_md, "goals and prerequisites belong at the top"
    ex = _exercises(lesson)
    assert 3 <= len(ex) <= 5 and ex == [str(i + 1) for i in range(len(ex))], ex
    md = "\n".join(_src(c) for c in cells if c["cell_type"] == "markdown")
    assert re.search(r"###\s+Exercise\s+\d+\s*\(predict before you run\)", md), "no 'predict before you run' exercise"
    assert any(c["cell_type"] == "code" and "plt." in _src(c) for c in cells), "a lesson has at least one figure"

@pytest.mark.parametrize("lesson", LESSONS, ids=lambda p: p.stem)
def test_solutions_answer_every_exercise(lesson):
    sol = lesson.with_name(lesson.stem + "_solutions.ipynb")
    assert sol.exists(), f"{sol.name} is missing"
    assert _exercises(sol) == _exercises(lesson)
    # each exercise section of the solutions contains at least one code cell with an assert
    section, asserted = None, {}
    for c in _cells(sol):
        m = re.search(r"^###\s+Exercise\s+(\d+)", _src(c), flags=re.M) if c["cell_type"] == "markdown" else None
        if m: section = m.group(1); asserted.setdefault(section, False)
        elif c["cell_type"] == "code" and section and re.search(r"^\s*assert\b", _src(c), flags=re.M):
            asserted[section] = True
    assert all(asserted.values()) and asserted, f"exercises without an asserted answer: {asserted}"

@pytest.mark.parametrize("nb", sorted(TUT.glob("*.ipynb")), ids=lambda p: p.stem)
def test_tutorials_are_clean_and_export_nothing(nb):
    for c in _cells(nb):
        src = _src(c)
        assert not re.search(r"^#\|\s*(default_exp|export)", src, flags=re.M), "lessons export nothing"
        if c["cell_type"] == "code":   # outputs are stored for the docs site (tools/run_nbs.py; CI checks they are current)
            assert c.get("execution_count") is None, "store lessons clean (nbdev_clean)"

def _ci_timings():
    log = ROOT / ".ci-nbdev-test.log"
    if not log.exists(): return None
    out = {}
    for line in log.read_text(encoding="utf-8", errors="replace").splitlines():
        m = re.match(r"^(\S+\.ipynb):\s+(\d+)\s+secs\s*$", line.strip())
        if m: out[m.group(1)] = int(m.group(2))
    return out or None

@pytest.mark.parametrize("lesson", LESSONS, ids=lambda p: p.stem)
def test_lesson_run_time_within_budget(lesson):
    "Under CI: each lesson's `nbdev_test --timing` time is within the budget (the recorded times are checked below)."
    times = _ci_timings()
    if times is None: pytest.skip("no nbdev_test timing log (CI writes .ci-nbdev-test.log)")
    assert lesson.name in times, f"{lesson.name} was not timed by nbdev_test"
    assert times[lesson.name] < BUDGET_S, f"{lesson.name}: {times[lesson.name]} s >= {BUDGET_S} s"


# ---------------------------------------------------------------- the run times the teacher's page shows
TIMES = TUT / "lesson_times.json"       # written by test_record_lesson_times; read by a cell of the teacher's page
_RUN = ("import sys; from execnb.nbio import read_nb; from execnb.shell import CaptureShell; "
        "CaptureShell().run_all(read_nb(sys.argv[1]), exc_stop=True)")

def run_time(nb, cold):
    """Wall time (s) of `nb` run top to bottom in a new Python process, every cell, in its folder: what "Restart
    kernel and run all cells" costs a student. `cold`: with empty bytecode and matplotlib caches, as the first run after
    `pip install` can be at worst (every imported module compiled, matplotlib's font list built; pip usually compiles
    the bytecode while installing, so a real first run is often closer to the later runs)."""
    import subprocess, sys, tempfile
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "MPLBACKEND": "Agg"}
        if cold: env.update(PYTHONPYCACHEPREFIX=f"{tmp}/pycache", MPLCONFIGDIR=f"{tmp}/mpl")
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-c", _RUN, nb.name], cwd=nb.parent, env=env, check=True,
                       stdin=subprocess.DEVNULL, capture_output=True)
        return time.perf_counter() - t0

def test_record_lesson_times():
    """DP_LESSON_TIMING=1: run every lesson and solutions notebook (first run after installing, then a later run) and
    write the times to nbs/tutorials/lesson_times.json; then refresh the teacher's page (tools/run_nbs.py)."""
    if os.environ.get("DP_LESSON_TIMING") != "1": pytest.skip("set DP_LESSON_TIMING=1 to measure and record the run times")
    import datetime, platform, sys
    nbs = sorted(TUT.glob("[0-9][0-9]_*.ipynb"))
    load = os.getloadavg()[0]
    first = {nb.name: round(run_time(nb, cold=True), 1) for nb in nbs}
    later = {nb.name: round(run_time(nb, cold=False), 1) for nb in nbs}
    rec = {"how": "each notebook run top to bottom in a new Python process (tests/test_lessons.py::run_time)",
           "machine": f"{os.cpu_count()} cores, {platform.system()} {platform.machine()}, Python {platform.python_version()}",
           "load": f"{load:.1f} before, {os.getloadavg()[0]:.1f} after (1-minute load average)",
           "date": datetime.date.today().isoformat(),
           "seconds": {n: {"first run": first[n], "later runs": later[n]} for n in first}}
    TIMES.write_text(json.dumps(rec, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    for n in first: print(f"{n}: first run {first[n]} s, later runs {later[n]} s", file=sys.stderr)
    assert all(t < BUDGET_S for t in list(first.values()) + list(later.values()))

def test_recorded_times_cover_every_notebook():
    "The recorded times name every lesson and solutions notebook, and each is within the budget."
    rec = json.loads(TIMES.read_text(encoding="utf-8"))
    assert set(rec["seconds"]) == {p.name for p in TUT.glob("[0-9][0-9]_*.ipynb")}, "re-record: DP_LESSON_TIMING=1"
    assert all(0 < t < BUDGET_S for v in rec["seconds"].values() for t in v.values())

def test_teachers_page_shows_the_recorded_times():
    "The teacher's page prints the run times from lesson_times.json in a stored output: no hand-typed numbers."
    cells = _cells(TUT / "index.ipynb")
    cell = next(c for c in cells if c["cell_type"] == "code" and "lesson_times.json" in _src(c))
    shown = "".join("".join(o.get("text", "")) for o in cell["outputs"] if o.get("output_type") == "stream")
    rec = json.loads(TIMES.read_text(encoding="utf-8"))
    for name, v in rec["seconds"].items():
        assert re.search(rf"{re.escape(name)}\s+{v['first run']:.0f} s\s+{v['later runs']:.0f} s", shown), \
            f"the teacher's page does not show the recorded times of {name}: run tools/run_nbs.py nbs/tutorials/index.ipynb"
    md = "\n".join(_src(c) for c in cells if c["cell_type"] == "markdown")
    assert not re.search(r"\b\d+\s*s\b.*\bper lesson|lesson \d takes about", md), "run times are read from the record"
