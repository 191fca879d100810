"""The documentation website: configuration, stored outputs, and every page checked in a real (headless) browser.

The browser tests need the site (`python tools/build_docs.py` builds `_docs/`) and Debian's `chromium` +
`chromium-driver` (selenium drives that binary; nothing is downloaded). Locally they are skipped when either is
missing; under CI (`CI=true`) a missing site or browser is a failure. Screenshots go to `ci-artifacts/screenshots/`.
The site search (Pagefind, indexed by the build) is tested by typing queries into the search box of a page.
"""
import contextlib, functools, html, html.parser, http.server, json, os, re, shutil, socket, sys, threading, time
import urllib.error, urllib.parse, urllib.request
from pathlib import Path
import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "_docs"
SHOTS = ROOT / "ci-artifacts" / "screenshots"
CHROMIUM, DRIVER = shutil.which("chromium") or "/usr/bin/chromium", shutil.which("chromedriver") or "/usr/bin/chromedriver"
sys.path.insert(0, str(ROOT / "tools"))
import build_docs, run_nbs  # noqa: E402

def _need(ok, why):
    if ok: return
    if os.environ.get("CI"): pytest.fail(why)
    pytest.skip(why)


# ---------------------------------------------------------------- configuration (fast, no browser)
def test_quarto_yml_single_source():
    "nbs/_quarto.yml (read by nbdev_docs) cannot diverge from the root _quarto.yml: it is a link to it."
    link = ROOT / "nbs" / "_quarto.yml"
    assert link.is_symlink() and link.resolve() == (ROOT / "_quarto.yml").resolve(), \
        "nbs/_quarto.yml must be a symlink to ../_quarto.yml (edit the root file only)"
    assert link.read_text() == (ROOT / "_quarto.yml").read_text()

def test_nbdev_yml_is_what_nbdev_generates():
    "nbdev_docs rewrites nbs/nbdev.yml from settings.ini: the committed file must already be that."
    from nbdev.quarto import _nbdev_yml
    from nbdev.config import get_config
    cfg = get_config(path=ROOT)
    vals = {k: cfg[k] for k in ["title", "description", "branch", "git_url", "doc_host", "doc_baseurl"]}
    vals["doc_path"] = cfg.doc_path.name
    assert (ROOT / "nbs" / "nbdev.yml").read_text() == _nbdev_yml.format(**vals)

def test_custom_sidebar_is_kept():
    "The sidebar lives in _quarto.yml; nbdev must not regenerate one (custom_sidebar = True)."
    from nbdev.config import get_config
    assert get_config(path=ROOT).custom_sidebar
    assert "sidebar.yml" not in " ".join(build_docs.load_quarto()["metadata-files"])

SECTIONS = ["Get started", "Tutorials", "For teachers", "Theory", "API", "Experiments"]

def test_every_notebook_in_the_sidebar():
    "A new notebook must be added to one section of _quarto.yml (Get started, Tutorials, For teachers, Theory, ...)."
    assert [s for s, _ in build_docs.sidebar_sections()] == SECTIONS
    probs = build_docs.check_sidebar()
    assert not probs, "\n".join(probs)

def test_solutions_are_in_the_teachers_section():
    "Lesson solutions are listed under 'For teachers', not next to the lessons; the teacher's page links to each."
    sections = dict(build_docs.sidebar_sections())
    solutions = sorted(str(p.relative_to(ROOT / "nbs")) for p in (ROOT / "nbs" / "tutorials").glob("*_solutions.ipynb"))
    assert solutions and sorted(sections["For teachers"]) == solutions
    assert not [p for p in sections["Tutorials"] if p.endswith("_solutions.ipynb")]
    page = json.loads((ROOT / "nbs" / "tutorials" / "index.ipynb").read_text(encoding="utf-8"))
    md = "".join("".join(c["source"]) for c in page["cells"] if c["cell_type"] == "markdown")
    for p in solutions: assert f"]({Path(p).name})" in md, f"the teacher's page does not link to {p}"

def test_page_titles_are_human():
    "Sidebar entries and page headings are the notebooks' `# Title` lines: words a reader looks for, not module names."
    import nbformat
    for rel in build_docs.all_notebooks():
        nb = nbformat.read(ROOT / "nbs" / rel, as_version=4)
        first = next(c.source for c in nb.cells if c.cell_type == "markdown").splitlines()[0]
        assert first.startswith("# "), f"nbs/{rel}: the first markdown cell must start with '# Title'"
        title, module = first[2:].strip(), build_docs.module_of(rel)
        if rel == "index.ipynb": continue   # the home page is titled with the project's name
        assert not re.fullmatch(r"[a-z0-9_]+", title), f"nbs/{rel}: title {title!r} is an identifier, not a title"
        if module: assert title != module.split(".")[-1], f"nbs/{rel}: the title is the module name"

def test_no_raw_markdown_tables():
    "Every markdown table converts to a table (a `|` inside `$...$` splits a cell: write \\lvert/\\rvert)."
    bad = build_docs.raw_markdown_tables()
    assert not bad, "\n".join(f"nbs/{p}: {line}" for p, line in bad)

def test_raw_table_check_can_fail():
    from nbconvert.filters.markdown_mistune import markdown2html_mistune
    broken = "| | $|x|$ | y |\n|---|---|---|\n| a | 1 | 2 |"
    assert build_docs.raw_tables(markdown2html_mistune(broken)) == ["| | $|x|$ | y |"]
    assert build_docs.raw_tables(markdown2html_mistune(broken.replace("$|x|$", r"$\lvert x\rvert$"))) == []

def test_sidebar_check_can_fail(tmp_path):
    cfg = build_docs.load_quarto()
    cfg["website"]["sidebar"]["contents"][2]["contents"] = cfg["website"]["sidebar"]["contents"][2]["contents"][1:] + ["99_nope.ipynb"]
    probs = build_docs.check_sidebar(cfg)
    assert any("is not in the sidebar" in p for p in probs) and any("99_nope.ipynb" in p for p in probs)

def test_quarto_options_adapted():
    "`#| echo: false` hides the code (show_doc cells), `#| include: false` drops a cell, site links become relative."
    import nbformat
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell("#| echo: false\n#| output: asis\nshow_doc(f)", outputs=[nbformat.v4.new_output(
            "execute_result", {"text/markdown": "[source](https://x/y.py#L1){target=\"_blank\" style=\"float:right\"}"})]),
        nbformat.v4.new_code_cell("#| include: false\nsecret = 1"),
        nbformat.v4.new_markdown_cell(f"see [`f`]({build_docs._site_prefix()}core.html#f)")])
    build_docs.adapt_for_nbconvert(nb, "../")
    assert len(nb.cells) == 2 and nb.cells[0].metadata["dp_hide_input"] and nb.cells[0].source == "show_doc(f)"
    assert nb.cells[0].outputs[0]["data"]["text/markdown"] == "[source](https://x/y.py#L1)"
    assert nb.cells[1].source == "see [`f`](../core.html#f)"


# Notebooks whose '> description' still spans several lines (nbdev cuts the subtitle to the first line): their
# owners should join the lines. New notebooks must not be added here.
CUT_DESCRIPTIONS_ALLOWED = set()   # every notebook's '> description' is one line

def test_descriptions_are_one_line():
    "nbdev keeps only the first line of a notebook's '> description' (page subtitle, module docstring)."
    cut = set(build_docs.cut_descriptions())
    assert not cut - CUT_DESCRIPTIONS_ALLOWED, f"write the '> description' on one line in {sorted(cut - CUT_DESCRIPTIONS_ALLOWED)}"
    assert "06c_rkhs.ipynb" not in cut and "00_core.ipynb" not in cut


# ---------------------------------------------------------------- stored outputs
def test_staleness_check_detects_changes(tmp_path):
    nb = json.loads((ROOT / "nbs" / "00_core.ipynb").read_text())
    m = {"nbs/00_core.ipynb": {"code": run_nbs.code_hash(nb), "outputs": run_nbs.outputs_hash(nb)}}
    assert run_nbs.stale(m, ["nbs/00_core.ipynb"]) == []
    code = next(c for c in nb["cells"] if c["cell_type"] == "code")
    code["source"] = list(code["source"]) + ["\nx = 1"]
    assert run_nbs.code_hash(nb) != m["nbs/00_core.ipynb"]["code"]
    assert run_nbs.stale({}, ["nbs/00_core.ipynb"])[0][1] == "no stored outputs recorded"

def test_py2nb_round_trip_keeps_outputs(tmp_path):
    "tools/py2nb.py: unchanged code cells keep their stored outputs; a changed cell loses them."
    import subprocess, nbformat
    nbp, pyp = tmp_path / "t.ipynb", tmp_path / "t.py"
    out = nbformat.v4.new_output("stream", name="stdout", text="42\n")
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# t"),
                                         nbformat.v4.new_code_cell("print(42)", outputs=[out]),
                                         nbformat.v4.new_code_cell("print(1)", outputs=[out])])
    nbformat.write(nb, nbp)
    py2nb = [sys.executable, str(ROOT / "tools" / "py2nb.py")]
    subprocess.run(py2nb + ["--back", str(nbp), str(pyp)], check=True)
    pyp.write_text(pyp.read_text().replace("print(1)", "print(2)").replace("# t", "# t, edited"))
    subprocess.run(py2nb + [str(pyp), str(nbp)], check=True)
    cells = json.loads(nbp.read_text())["cells"]
    assert cells[1]["outputs"] and cells[1]["outputs"][0]["text"] == ["42\n"]
    assert cells[2]["outputs"] == []


# ---------------------------------------------------------------- hand-typed result tables
def _md(*cells):
    "A notebook (as stored JSON) of markdown cells, and code cells for the strings that start with 'code:'."
    return {"cells": [{"cell_type": "code", "id": f"c{i}", "source": c[5:], "outputs": []} if c.startswith("code:")
                      else {"cell_type": "markdown", "id": f"c{i}", "source": c} for i, c in enumerate(cells)]}

_TYPED = "| ε | classic σ | exact δ |\n|---|---|---|\n| 0.1 | 48.44805 | 2.6e-09 |\n| 10 | 0.48448 | **2.3e-05** |"

def test_hand_typed_tables_are_found():
    "Numeric tables under a 'Measured' paragraph or heading are reported; the check can fail."
    found = lambda *cells: [h for _, h in run_nbs.hand_typed_tables(_md(*cells))]
    assert found("Measured:\n\n" + _TYPED) == ["| ε | classic σ | exact δ |"]
    assert found("Run by hand on the full grid (7 s), measured once:\n" + _TYPED)
    assert found("### Measured results", "code:x = 1", "Full grid:\n\n" + _TYPED)            # under a heading
    assert found("Measured by hand (mean ± sd):\n\n**Dataset 1**\n\n| method | ε=1 | ε=∞ |\n|---|---|---|\n"
                 "| non-private |  | 1.53 ± 0.036 |\n| private | 38 ± 15 |  |")
    assert found("Output (deterministic):\n\n| n | wall (s) | RSS (MB) |\n|---|---|---|\n| 250 000 | **14.2** | 245 |")

def test_hand_typed_check_leaves_other_tables_alone():
    "Tables of definitions, or numbers nobody measured, are not reported; nor are tables in code cell outputs."
    found = lambda *cells: run_nbs.hand_typed_tables(_md(*cells))
    assert not found("In all four settings:\n\n| setting | d | propensity |\n|---|---|---|\n| low overlap | 1 | expit(6x) |")
    assert not found("The losses:\n\n" + _TYPED)                                  # numbers, but no 'measured' cue
    assert not found("Measured:\n\n| loss | L | zone |\n|---|---|---|\n| absolute | one | none |\n| huber | two | some |")
    assert not found("## Measured", "code:print( + _TYPED + )")            # a cell computes it: fine

def test_no_new_hand_typed_tables():
    "No notebook holds more hand-typed result tables than run_nbs.HAND_TABLES_ALLOWED grants (their notebooks' to fix)."
    bad = run_nbs.hand_typed()
    assert not bad, "\n".join(f"{p}: {w}" for p, w in bad)
    assert all((ROOT / p).exists() for p in run_nbs.HAND_TABLES_ALLOWED)


# ---------------------------------------------------------------- the browser check
class _Links(html.parser.HTMLParser):
    def __init__(self): super().__init__(); self.ids = set()
    def handle_starttag(self, tag, attrs):
        for k, v in attrs:
            if k in ("id", "name") and v: self.ids.add(v)

@contextlib.contextmanager
def serve(directory):
    "Serve `directory` on 127.0.0.1 (an ephemeral port) in a thread; yield the base URL."
    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *a): pass
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(directory)))
    th = threading.Thread(target=srv.serve_forever, daemon=True); th.start()
    try: yield f"http://127.0.0.1:{srv.server_address[1]}/"
    finally: srv.shutdown(); srv.server_close()

@contextlib.contextmanager
def browser():
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1280,900",
              "--hide-scrollbars"):
        opts.add_argument(a)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    drv = webdriver.Chrome(service=Service(DRIVER), options=opts)
    try: yield drv
    finally: drv.quit()

_PAGE_JS = r"""
const body = document.body.cloneNode(true);
body.querySelectorAll('pre, code, script, style, mjx-container, .jp-CodeMirrorEditor')
    .forEach(e => e.remove());
const text = body.textContent;
// code, printed output or a table wider than its box that no box between it and its cell lets the reader scroll
const clipped = Array.from(document.querySelectorAll('.jp-Cell pre, .jp-Cell table')).filter(el => {
  if (el.scrollWidth <= el.clientWidth + 1) return false;
  for (let e = el; e && !e.classList.contains('jp-Cell'); e = e.parentElement)
    if (['auto', 'scroll'].includes(getComputedStyle(e).overflowX)) return false;
  return true;
}).map(el => el.textContent.trim().slice(0, 60));
return {
  clipped: clipped.slice(0, 3), nClipped: clipped.length,
  pageOverflow: document.documentElement.scrollWidth > document.documentElement.clientWidth + 1,
  title: document.title,
  rawTex: (text.match(/\$\$|\\\(|\\\)|\\\[|\\\]|\\[A-Za-z]{2,}|\$[^$\n]+\$/g) || []).slice(0, 5),
  mathErrors: document.querySelectorAll('.MathJax_Error, merror, .mjx-merror').length,
  typeset: document.querySelectorAll('.MathJax, .MathJax_Display, mjx-container').length,
  badImages: Array.from(document.images).filter(i => !(i.complete && i.naturalWidth > 0)).map(i => i.src.slice(0, 100)),
  nImages: document.images.length,
  links: Array.from(document.querySelectorAll('a[href]')).map(a => a.href).filter(h => h.startsWith(location.origin)),
  headings: Array.from(document.querySelectorAll('h1, h2, h3, h4')).map(h => h.textContent.replace(/[#¶]\s*$/, '').trim()),
  // a markdown table the converter left as text: a paragraph with a |---|---| row
  rawTables: Array.from(document.querySelectorAll('main p')).map(p => p.textContent)
      .filter(t => /^\s*\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)+\|?\s*$/m.test(t)).map(t => t.trim().slice(0, 60)),
  searchBox: document.querySelectorAll('#dp-search input').length,
};
"""

def check_pages(base, pages, *, drv, mathjax_timeout=60, shots=None):
    """Load each page; return ({page: [problems]}, {page: info}). A page without problems maps to []."""
    from selenium.webdriver.support.ui import WebDriverWait
    problems, infos, link_cache = {}, {}, {}
    def get(url):
        if url not in link_cache:
            try:
                with urllib.request.urlopen(url, timeout=20) as r: link_cache[url] = (r.status, r.read())
            except urllib.error.HTTPError as e: link_cache[url] = (e.code, b"")
        return link_cache[url]
    for page in pages:
        url, probs = base + page, []
        status, _ = get(url)
        if status != 200: probs.append(f"HTTP {status}")
        drv.get_log("browser")                       # drop the previous page's messages
        drv.get(url)
        try: WebDriverWait(drv, mathjax_timeout).until(lambda d: d.execute_script("return window.__mathjaxDone === true"))
        except Exception: probs.append("MathJax did not finish typesetting (not loaded?)")
        info = drv.execute_script(_PAGE_JS)
        if not info["title"].strip(): probs.append("no <title>")
        errs = [e["message"][:200] for e in drv.get_log("browser") if e["level"] == "SEVERE"]
        if errs: probs.append(f"JavaScript console errors: {errs}")
        if info["rawTex"]: probs.append(f"untypeset math left on the page: {info['rawTex']}")
        if info["mathErrors"]: probs.append(f"{info['mathErrors']} MathJax errors")
        if info["badImages"]: probs.append(f"images not loaded: {info['badImages']}")
        if info["nClipped"]: probs.append(f"{info['nClipped']} code/output blocks cut off (no scrolling): {info['clipped']}")
        if info["pageOverflow"]: probs.append("the page is wider than the window")
        if info["rawTables"]: probs.append(f"markdown table shown as raw text: {info['rawTables']}")
        if not info["searchBox"]: probs.append("no search box")
        for link in sorted(set(info["links"])):
            target, _, frag = link.partition("#")
            st, body = get(target)
            if st != 200: probs.append(f"broken internal link {link} (HTTP {st})"); continue
            if frag and target.endswith(".html"):
                p = _Links(); p.feed(body.decode("utf-8", "replace"))
                ids = {urllib.parse.unquote(i) for i in p.ids}      # nbconvert percent-encodes non-ASCII ids
                if urllib.parse.unquote(frag) not in ids: probs.append(f"broken anchor {link}")
        if shots and page in shots:
            SHOTS.mkdir(parents=True, exist_ok=True)
            drv.save_screenshot(str(SHOTS / shots[page]))
            if info["nImages"]:   # and one at the page's first figure
                drv.execute_script("document.images[0].scrollIntoView({block: 'center'})")
                drv.save_screenshot(str(SHOTS / shots[page].replace(".png", "_figure.png")))
        problems[page], infos[page] = probs, info
    return problems, infos

@pytest.fixture(scope="module")
def site_pages():
    _need((DOCS / "pages.json").exists(), "the site is not built: run `python tools/build_docs.py`")
    _need(Path(CHROMIUM).exists() and Path(DRIVER).exists(), "Debian chromium / chromium-driver not installed")
    return json.loads((DOCS / "pages.json").read_text())

@pytest.mark.slow     # every page in a real browser: minutes (CI runs it)
def test_site_in_browser(site_pages):
    "Every page: HTTP 200, a title, no console errors, math typeset, images loaded, internal links resolve, nothing cut off."
    pages = sorted(site_pages)
    shots = {"index.html": "home.png", "mechanisms.html": "theory_mechanisms.png",
             "tutorials/epsilon_delta.html": "tutorial_epsilon_delta.png"}
    assert set(shots) <= set(pages)
    t = time.time()
    with serve(DOCS) as base, browser() as drv:
        problems, infos = check_pages(base, pages, drv=drv, shots=shots)
    # links into a page at an anchor that page lacks: nbdev's add_links links every symbol in _modidx (private helpers,
    # methods without a show_doc entry); the Quarto site has the same dead anchors. Reported, not fatal.
    anchors = {p: [x for x in v if x.startswith("broken anchor")] for p, v in problems.items()}
    if any(anchors.values()): print("dead anchors (link to an existing page, at no entry):", {p: v for p, v in anchors.items() if v})
    bad = {p: [x for x in v if not x.startswith("broken anchor")] for p, v in problems.items()}
    bad = {p: v for p, v in bad.items() if v}
    assert not bad, "\n".join(f"{p}: {'; '.join(v)}" for p, v in bad.items())
    assert sum(i["typeset"] for i in infos.values()) > 100, "almost no typeset math on the whole site"
    # the API page documents every public estimator (a class with `fit` importable from the package root)
    import dp_causal_nb
    ests = [n for n in dp_causal_nb.__all__ if isinstance(getattr(dp_causal_nb, n), type) and hasattr(getattr(dp_causal_nb, n), "fit")]
    assert {"DPATE", "DPCATE"} <= set(ests)
    heads = set(infos["api.html"]["headings"])
    missing = [n for n in ests + ["DPATE.fit", "DPCATE.fit", "DPCATE.effect", "PrivacyAccountant.spend"] if n not in heads]
    assert not missing, f"API page lacks entries for {missing}"
    print(f"{len(pages)} pages checked in {time.time() - t:.0f} s; screenshots in {SHOTS}")
    assert sorted(site_pages.values()) == [f"nbs/{p}" for p in build_docs.all_notebooks()], "a notebook has no page"

@pytest.mark.slow     # every page in a real browser: minutes (CI runs it)
def test_browser_check_catches_broken_pages(site_pages, tmp_path):
    "Negative control: a page whose equations were not typeset, a missing figure, a dead link, code cut off: all caught."
    for f in ("mathjax", "site.css", "styles.css", "pagefind"):
        (tmp_path / f).symlink_to(DOCS / f)
    good = (DOCS / "mechanisms.html").read_text(encoding="utf-8")
    assert "$$" in good or "\\(" in good or "$" in good
    (tmp_path / "good.html").write_text(good, encoding="utf-8")
    (tmp_path / "nomath.html").write_text(good.replace("mathjax/tex-chtml-full.js", "mathjax/missing.js"), encoding="utf-8")
    (tmp_path / "nofig.html").write_text(good.replace("</main>", '<img src="figure_missing.png"></main>'), encoding="utf-8")
    (tmp_path / "deadlink.html").write_text(good.replace("</main>", '<a href="no_such_page.html">x</a></main>'), encoding="utf-8")
    (tmp_path / "rawtable.html").write_text(good.replace("</main>", "<p>| a | $x$ |\n|---|---|\n| 1 | 2 |</p></main>"),
                                            encoding="utf-8")
    (tmp_path / "clipped.html").write_text(good.replace("</main>", '<div class="jp-Cell"><div style="overflow: hidden; '
                                           f'width: 20rem"><pre>{"long_line = 1; " * 40}</pre></div></div></main>'), encoding="utf-8")
    with serve(tmp_path) as base, browser() as drv:
        problems, _ = check_pages(base, ["good.html", "nomath.html", "nofig.html", "deadlink.html", "clipped.html",
                                         "rawtable.html"], drv=drv, mathjax_timeout=10)
    good_probs = [p for p in problems["good.html"] if "broken internal link" not in p and "broken anchor" not in p]
    assert not good_probs, good_probs            # the control page is fine apart from links to pages not copied here
    assert any("untypeset math" in p for p in problems["nomath.html"]), problems["nomath.html"]
    assert any("MathJax did not finish" in p for p in problems["nomath.html"])
    assert any("images not loaded" in p for p in problems["nofig.html"]), problems["nofig.html"]
    assert any("no_such_page.html" in p for p in problems["deadlink.html"]), problems["deadlink.html"]
    assert any("cut off" in p and "long_line" in p for p in problems["clipped.html"]), problems["clipped.html"]
    assert any("raw text" in p and "| a |" in p for p in problems["rawtable.html"]), problems["rawtable.html"]


# ---------------------------------------------------------------- site search (Pagefind)
_RESULTS_JS = """
return Array.from(document.querySelectorAll('#dp-search .pagefind-ui__result')).map(r => ({
  title: r.querySelector('.pagefind-ui__result-title').textContent.trim(),
  href: r.querySelector('a.pagefind-ui__result-link').href,
  subs: Array.from(r.querySelectorAll('.pagefind-ui__result-nested a')).map(a => a.href)}));
"""

def search(drv, base, page, query, timeout=30):
    "Type `query` into the search box of `page`; return the results shown [{title, href, subs}]."
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait
    drv.get(base + page)
    box = WebDriverWait(drv, timeout).until(lambda d: d.find_element(By.CSS_SELECTOR, "#dp-search input"))
    box.send_keys(query)
    seen = []
    def settled(d):
        "The results of the whole query (the UI searches as one types): non-empty and unchanged over three polls."
        message = d.execute_script("const m = document.querySelector('#dp-search .pagefind-ui__message');"
                                   "return m ? m.textContent : '';")
        r = d.execute_script(_RESULTS_JS) if query in message else None
        seen.append(r)
        return r if r and len(seen) > 2 and seen[-3] == seen[-2] == r else False
    return WebDriverWait(drv, timeout, poll_frequency=0.5).until(settled)

def test_site_search(site_pages):
    "The search box of any page finds a page by its words: 'Lemma 1' leads to the RKHS page, with heading links."
    _need((DOCS / "pagefind" / "pagefind-ui.js").exists(), "no search index: run `python tools/build_docs.py`")
    assert "rkhs.html" in site_pages and "tutorials/private_ate.html" in site_pages
    with serve(DOCS) as base, browser() as drv:
        found = search(drv, base, "tutorials/private_ate.html", "Lemma 1")
        top = [r["href"] for r in found[:3]]
        assert any(h.startswith(base + "rkhs.html") for h in top), found
        rkhs = next(r for r in found if r["href"].startswith(base + "rkhs.html"))
        assert rkhs["title"] == "Lemma 1: RKHS sensitivity"
        found = search(drv, base, "index.html", "sensitivity")
        assert len(found) >= 3, found
        subs = [s for r in found for s in r["subs"]]
        assert any("#" in s for s in subs), "no result links to a heading"
        for r in found[:5]:                       # results and their heading links land on existing anchors
            page = _Links()
            with urllib.request.urlopen(r["href"], timeout=20) as resp: page.feed(resp.read().decode())
            ids = {urllib.parse.unquote(i) for i in page.ids}
            for sub in r["subs"]: assert urllib.parse.unquote(sub.partition("#")[2]) in ids, sub
        SHOTS.mkdir(parents=True, exist_ok=True)
        drv.save_screenshot(str(SHOTS / "search_sensitivity.png"))


# ---------------------------------------------------------------- search snippets read math as text (no browser)
def test_math_reads_as_text():
    "A formula's plain-text reading (what the search index holds for it): symbols, fractions, scripts, no TeX left."
    cases = {r"(\varepsilon,\delta)": "(ε,δ)", r"\frac{\varepsilon}{2}": "ε/2", r"\frac12": "1/2",
             r"\hat\theta_i^\top": "θ̂ᵢᵀ", r"\sqrt{2\log(1.25/\delta)}\,\Delta_2/\varepsilon": "√(2 log(1.25/δ)) Δ₂/ε",
             r"(\max_i\varepsilon_i,\ \max_i\delta_i)": "(maxᵢεᵢ, maxᵢδᵢ)", r"\mathbb{E}[Y\mid X=x]": "𝔼[Y| X=x]",
             r"\lVert\psi_1(x)\rVert_2=1": "‖ψ₁(x)‖₂=1", r"f^{-1}(S)": "f⁻¹(S)", r"x_{\text{noise}}": "x_noise",
             r"\begin{cases}a,&x\le m,\\ b&x>m\end{cases}": "a, x≤ m,; b x>m"}
    for tex, text in cases.items(): assert build_docs.tex_to_text(tex) == text, (tex, build_docs.tex_to_text(tex))

def test_math_is_indexed_as_text():
    """Each formula MathJax typesets in <main> is kept for MathJax but ignored by Pagefind, and followed by a hidden
    plain-text reading that Pagefind indexes; code, scripts, attributes, an escaped dollar and the rest of the page
    are left as they were."""
    page = ('<head><script>MathJax = {tex: {inlineMath: [["$", "$"]]}}</script><title>$t$</title></head><body>'
            '<nav>$n$</nav><main data-pagefind-body><p title="$a$">Budget $(\\varepsilon,\\delta)$, costs \\$5;'
            '</p><p>$$\\frac{a}{b} &lt; 1$$ and \\(x^2\\)</p><pre>print("$x$")</pre><code>$HOME</code></main></body>')
    out = build_docs.index_math_text(page)
    ignored = re.findall(r"<span data-pagefind-ignore>(.*?)</span>", out)
    readings = re.findall(r'<span class="dp-math-text" hidden>(.*?)</span>', out)
    assert ignored == ["$(\\varepsilon,\\delta)$", "$$\\frac{a}{b} &lt; 1$$", "\\(x^2\\)"], ignored
    assert readings == ["(ε,δ)", "a/b &lt; 1", "x²"], readings
    assert re.sub(r"<span data-pagefind-ignore>|</span>|<span class=\"dp-math-text\" hidden>[^<]*", "", out) == page

def _pagefind_fragments():
    "{page url: indexed text} from the built index (Pagefind 1.x fragments: gzip, a signature, then JSON)."
    import gzip
    out = {}
    for f in (DOCS / "pagefind" / "fragment").glob("*.pf_fragment"):
        raw = gzip.decompress(f.read_bytes()).decode("utf-8")
        doc = json.loads(raw[raw.index("{"):])
        out[doc["url"]] = doc["content"]
    return out

_TEX = re.compile(r"\$[^$\n]{1,80}\$|\\[A-Za-z]{2,}|\\[()\[\]]")

def _code_text(page_html):
    "The text of a page's code and printed output (<pre>, <code>), whitespace collapsed: where TeX is verbatim."
    blocks = re.findall(r"<(pre|code)\b[^>]*>(.*?)</\1>", page_html, flags=re.S)
    return " ".join(" ".join(html.unescape(re.sub(r"<[^>]+>", "", b)).split()) for _, b in blocks)

def _tex_in_prose(content, code):
    "The TeX-looking strings of indexed text that do not come from the page's code (a search snippet would show them)."
    return [t for t in _TEX.findall(content) if t not in code]

def test_tex_in_prose_check_can_fail():
    assert _tex_in_prose("budget $(\\varepsilon,\\delta)$ and \\frac12", "") == ["$(\\varepsilon,\\delta)$", "\\frac"]
    assert _tex_in_prose('budget (ε,δ); ax.set_xlabel("$x_0$")', 'ax.set_xlabel("$x_0$")') == []

def test_search_index_holds_no_tex():
    """What Pagefind shows in a result snippet is indexed text: on every page it holds the plain-text reading of each
    formula, not its TeX source (`$\\varepsilon$`, `\\frac{...}`); TeX-looking text is left only where it is code."""
    _need((DOCS / "pagefind" / "fragment").is_dir(), "no search index: run `python tools/build_docs.py`")
    fragments = _pagefind_fragments()
    assert len(fragments) == len(json.loads((DOCS / "pages.json").read_text())), "a page is missing from the index"
    bad = {}
    for url, content in fragments.items():
        page = DOCS / (url.lstrip("/") + ("index.html" if url.endswith("/") else ""))
        left = _tex_in_prose(content, _code_text(page.read_text(encoding="utf-8")))
        if left: bad[url] = left[:5]
    assert not bad, f"TeX source in the search index (shown in result snippets): {bad}"
    assert "(ε,δ)" in fragments["/accounting.html"] and "Σᵢ" in fragments["/accounting.html"]


def test_readme_module_table_lists_every_notebook():
    "The module table of nbs/index.ipynb (the README) names every notebook of nbs/ and no notebook that is gone."
    nb = json.loads((ROOT / "nbs" / "index.ipynb").read_text())
    text = "".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown")
    listed = set(re.findall(r"^\| `(\d\d[a-z]?_[a-z0-9_]+)` \|", text, flags=re.M))
    present = {p.stem for p in (ROOT / "nbs").glob("[0-9]*.ipynb")}
    assert listed == present, f"missing from the README table: {sorted(present - listed)}; gone: {sorted(listed - present)}"
