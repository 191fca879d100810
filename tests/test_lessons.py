"""Classroom lessons (nbs/tutorials): structure, cleanliness, and run-time budgets.

`nbdev_test` already executes every lesson and solutions notebook in CI (the solutions assert the exercises' facts),
so these tests do not run the lessons again. The run-time budget is checked from the `--timing` lines of the CI's
`nbdev_test` log (`.ci-nbdev-test.log`); outside CI, set DP_LESSON_TIMING=1 to execute each lesson here instead.
"""
import json, os, pathlib, re, time
import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
TUT = ROOT / "nbs" / "tutorials"
LESSONS = sorted(p for p in TUT.glob("[0-9][0-9]_*.ipynb") if not p.stem.endswith("_solutions"))
BUDGET_S = 120          # per lesson; measured ≈ 3–22 s on a 2-core machine (see the teacher's page)

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
    assert 'pip install "dp_causal_nb[class]"' in text and "jupyter lab" in text
    for p in LESSONS: assert p.name in text, f"the teacher's page does not list {p.name}"

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
    times = _ci_timings()
    if times is not None:
        assert lesson.name in times, f"{lesson.name} was not timed by nbdev_test"
        assert times[lesson.name] < BUDGET_S, f"{lesson.name}: {times[lesson.name]} s >= {BUDGET_S} s"
        return
    if os.environ.get("DP_LESSON_TIMING") != "1":
        pytest.skip("no nbdev_test timing log; set DP_LESSON_TIMING=1 to run the lesson here")
    from execnb.nbio import read_nb
    from execnb.shell import CaptureShell
    t0 = time.perf_counter()
    cwd = os.getcwd(); os.chdir(lesson.parent)
    try: CaptureShell().run_all(read_nb(lesson), exc_stop=True)
    finally: os.chdir(cwd)
    took = time.perf_counter() - t0
    print(f"{lesson.name}: {took:.1f} s")
    assert took < BUDGET_S
