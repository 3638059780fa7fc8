"""Browser check of notebook 00: the static export and the live panel in JupyterLab.

1. Executes ``notebooks/00_start_here.ipynb`` to HTML in a temporary folder (plotly.js
   inlined through ``CSD_PLOTLY_RENDERER=notebook``), screenshots the page with headless
   Chromium, and parses the HTML: the trace element (class ``csd-trace``) must hold
   ``csd-tok`` spans whose background colour is the colour of their level (LEVEL_COLORS).
2. Starts JupyterLab on 127.0.0.1 (a free port) over a copy of the notebook, drives it with
   Playwright (Debian's Chromium, never a downloaded browser): runs all cells, waits for the
   live panel, moves the lenience slider (the "what changed" readout and the per-pair
   acceptance must appear), types a letter and a negative number into a K cell (the same
   clear ValueError must appear, and the cell keeps what was typed) and edits one K entry
   (trace, stats and the Algorithm-1 picture must change), then steps the round stepper (next or
   prev, then a slider drag: the round figure's title and the "target round r of R" readout must
   follow). The static trace is also
   screenshot through CSS ``grayscale(1)``: neighbouring levels must differ by >= 30 grey
   levels in the pixels, and levels with close greys must differ in underline style.
   Screenshots ``live_panel.png``, ``trace.png`` and ``cascade_tree.png`` (the family's
   Algorithm-1 picture) go to the temporary folder, or to ``--shots docs`` to refresh the
   README pictures.
3. Stops the server by its PID (its process group) in a ``finally`` block.
4. Figures in greyscale: executes every notebook (``notebooks/*.ipynb``, default family) to
   HTML once (notebook 00 reuses step 1's export; ``--executed DIR`` renders the notebooks that
   ``scripts/site.py --keep DIR`` executed instead, without running them again: their plotly outputs
   drawn as the site draws them, plotly.js inlined), opens each page in Chromium, and screenshots
   every plotly figure (``.js-plotly-plot``) through CSS ``grayscale(1)`` as ``NN_figK_grey.png``.
   Measured per figure: for every pair of legend swatches (the symbol drawn beside each legend
   entry), >= 15 % of the pixels inked in either must differ by > 40 grey levels, i.e. no two
   series look alike once colour is gone (lightness, pattern, dash or marker tells them apart); and the
   plot must draw at least 2 grey levels besides the white background (not one flat shade).

Usage: ``.venv/bin/python scripts/browser_check.py [--chromium /usr/bin/chromium] [--keep DIR]
[--shots DIR] [--skip-lab] [--skip-figures | --figures-only] [--figures-of 00,03] [--executed DIR]``
Exit status 0 when every check passed, 1 when one failed, 2 when Chromium is missing or ``--executed`` names no folder.
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from html.parser import HTMLParser
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK = ROOT / "notebooks" / "00_start_here.ipynb"
DOCS = ROOT / "docs"  # replaced in main() by --shots or the temporary folder
sys.path.insert(0, str(ROOT))

CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync"]


class CheckFailed(AssertionError):
    """A browser check did not hold."""


def check(cond: bool, what: str) -> None:
    if not cond:
        raise CheckFailed(what)
    print(f"  ok: {what}")


def child_env(**extra: str) -> dict:
    env = dict(os.environ)
    env.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", TOKENIZERS_PARALLELISM="false",
               PYTHONPATH=str(ROOT) + os.pathsep + env.get("PYTHONPATH", ""))
    env.update(extra)
    return env


# -- 1. static export --------------------------------------------------------------------

class TraceParser(HTMLParser):
    """Collects the csd-trace containers and the csd-tok spans of an HTML page."""

    def __init__(self):
        super().__init__()
        self.traces = 0
        self.tokens: list[dict] = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        classes = (a.get("class") or "").split()
        if "csd-trace" in classes:
            self.traces += 1
        if tag == "span" and "csd-tok" in classes:
            m = re.search(r"background-color:\s*(#[0-9a-fA-F]{6})", a.get("style") or "")
            self.tokens.append({"level": a.get("data-level"), "bg": m.group(1).lower() if m else None})


def static_export(tmp: Path, chromium: str, timeout: int, notebook: Path) -> Path:
    """Execute notebook 00 to HTML with plotly inlined; check the trace; screenshot the page."""
    from csd_lib.viz import LEVEL_COLORS
    print("[1/2] static export of", notebook.name)
    page = export_notebook(notebook, tmp / "export", timeout)   # step 4's export, reused
    print(f"  {page.stat().st_size / 1e6:.1f} MB")
    text = page.read_text(encoding="utf-8")
    parser = TraceParser()
    parser.feed(text)
    check(parser.traces >= 1, f"the page has a csd-trace element ({parser.traces})")
    check(len(parser.tokens) >= 10, f"the trace has csd-tok spans ({len(parser.tokens)})")
    bad = [t for t in parser.tokens if t["bg"] != LEVEL_COLORS.get(t["level"], "").lower()]
    check(not bad, f"every token's background is its level's colour ({len(bad)} wrong)")
    levels = sorted({t["level"] for t in parser.tokens})
    check(len(levels) >= 3, f"tokens come from several levels: {levels}")
    check("Plotly.newPlot" in text and re.search(r"plotly\.js v\d", text) is not None,
          "plotly.js is inlined and figures are drawn by Plotly.newPlot")
    check("target review" in text, "the trace figure with its review slider is in the page")
    shot = tmp / "export.png"
    subprocess.run([chromium, *CHROMIUM_FLAGS, f"--user-data-dir={tmp / 'chromium-profile'}",
                    "--window-size=1200,1400", "--virtual-time-budget=10000", f"--screenshot={shot}",
                    page.as_uri()], env=child_env(), timeout=120, capture_output=True)
    check(shot.exists() and shot.stat().st_size > 10_000, f"headless Chromium screenshot of the export ({shot})")
    return page


# -- 2. live panel in JupyterLab -----------------------------------------------------------

def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_http(url: str, timeout: float) -> None:
    end = time.time() + timeout
    while time.time() < end:
        try:
            with urllib.request.urlopen(url, timeout=5) as r:
                if r.status == 200:
                    return
        except OSError:
            time.sleep(0.5)
    raise CheckFailed(f"JupyterLab did not answer at {url} within {timeout:.0f} s")


def start_lab(root: Path, port: int, log: Path) -> subprocess.Popen:
    cmd = [sys.executable, "-m", "jupyter", "lab", "--no-browser", "--allow-root", "--ip=127.0.0.1",
           f"--port={port}", "--ServerApp.token=", "--ServerApp.password=", f"--ServerApp.root_dir={root}",
           "--ServerApp.open_browser=False", f"--LabApp.workspaces_dir={root / '.workspaces'}",
           "--LabApp.news_url=", "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate"]
    env = child_env(JUPYTER_CONFIG_DIR=str(root / ".jupyter-config"), JUPYTER_RUNTIME_DIR=str(root / ".runtime"),
                    JUPYTERLAB_SETTINGS_DIR=str(root / ".settings"))
    return subprocess.Popen(cmd, cwd=root, env=env, stdout=open(log, "wb"), stderr=subprocess.STDOUT,
                            start_new_session=True)


def stop(proc: subprocess.Popen) -> None:
    """Stop the server and its kernels (its own process group, led by its PID)."""
    if proc.poll() is not None:
        return
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
    except ProcessLookupError:
        pass


def live_panel_check(tmp: Path, chromium: str, timeout: int, notebook: Path) -> None:
    from playwright.sync_api import Error as PlaywrightError
    from playwright.sync_api import sync_playwright
    print("[2/2] live panel in JupyterLab")
    root = tmp / "lab"
    shutil.rmtree(root, ignore_errors=True)
    (root / "notebooks").mkdir(parents=True)
    shutil.copy(notebook, root / "notebooks" / notebook.name)  # never let autosave touch the repo copy
    settings = root / ".settings" / "@jupyterlab" / "apputils-extension"
    settings.mkdir(parents=True)
    (settings / "notification.jupyterlab-settings").write_text('{"fetchNews": "false", "checkForUpdates": false}')
    port = free_port()
    proc = start_lab(root, port, tmp / "jupyterlab.log")
    try:
        wait_http(f"http://127.0.0.1:{port}/lab", 60)
        print(f"  JupyterLab up on port {port} (pid {proc.pid})")
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=chromium, args=["--no-sandbox", "--disable-gpu"],
                                         timeout=60_000)
            try:
                page = browser.new_page(viewport={"width": 1300, "height": 1000})
                page.set_default_timeout(60_000)
                page.goto(f"http://127.0.0.1:{port}/lab/tree/notebooks/{notebook.name}", timeout=90_000)
                page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=90_000)
                time.sleep(3)
                run_all(page)
                try:
                    panel = page.wait_for_selector(".csd-live-panel .csd-trace .csd-tok", timeout=timeout * 1000)
                except PlaywrightError:
                    page.screenshot(path=str(tmp / "lab_failure.png"), full_page=True)
                    raise
                check(panel is not None, "the live panel rendered a coloured trace")
                wait_idle(page, timeout)
                n_plots = page.locator(".jp-OutputArea .js-plotly-plot").count()
                check(n_plots >= 2, f"JupyterLab renders the plotly figures ({n_plots})")
                trace0, stats0 = panel_state(page)
                check("csd-tok" in trace0 and "tokens per target call" in stats0, "trace and stats are filled")
                errors = shown_text(page, ".csd-live-panel .csd-error").strip()
                check(errors == "", "the panel shows no error")

                move_slider(page, ".csd-lenience")
                trace1, stats1 = wait_change(page, trace0, stats0, 120)
                check(trace1 != trace0 and stats1 != stats0, "moving the lenience slider changed trace and stats")
                print(f"  (lenience {levels_changed(trace0, trace1)})")
                diff1 = shown_text(page, ".csd-live-panel .csd-diff")
                check("changed: lenience" in diff1 and "tokens different from greedy AR" in diff1,
                      "the 'what changed' readout names the lenience move and counts tokens against AR")
                print("  (readout: " + " | ".join(diff1.splitlines()[1:4]) + ")")
                if "tokens changed since the previous run: 0; tokens that changed level: 0" in diff1 \
                        and "forward calls: unchanged" in diff1:
                    check("altered no token" in diff1 and "timing noise" in diff1,
                          "a move that changed no token and no call says that only timing noise moved")
                pairs1 = shown_text(page, ".csd-live-panel .csd-pairs")
                check("previous run" in pairs1 and "<-" in pairs1, "per-pair acceptance sits beside the previous run")

                cell = page.locator(".csd-k-0-1 input")
                cell.scroll_into_view_if_needed()
                keep = cell.input_value()
                messages = {}
                for typed, quoted in (("x", "entry 'x'"), ("-1", "entry -1")):
                    cell.fill(typed)
                    cell.press("Enter")
                    err = wait_text(page, ".csd-live-panel .csd-error", quoted, 60)
                    check("ValueError" in err and quoted in err, f"typing {typed!r} into K[0][1] shows the error: "
                                                                 f"{err.strip()[:90]}...")
                    messages[typed] = err.split("):", 1)[-1].strip()
                check(messages["x"] == messages["-1"], "a letter gets the same explanation as a negative entry")
                check(cell.input_value() == "-1", "the K cell keeps what was typed (nothing is swallowed)")
                cell.fill(keep)
                cell.press("Enter")
                wait_text(page, ".csd-live-panel .csd-error", "", 60)
                trace1, stats1 = panel_state(page)

                cell = page.locator(".csd-k-0-0 input")
                cell.scroll_into_view_if_needed()
                old = int(cell.input_value())
                cell.fill(str(old + 3))
                cell.press("Enter")
                trace2, stats2 = wait_change(page, trace1, stats1, 120)
                check(trace2 != trace1 and stats2 != stats1, f"editing K[0][0] {old} -> {old + 3} changed trace and stats")
                print(f"  (K edit {levels_changed(trace1, trace2)})")
                tree_title = wait_text(page, ".csd-live-panel .csd-tree .gtitle", f"[[{old + 3},", 60)
                check(f"[[{old + 3}," in tree_title, f"the Algorithm-1 picture redrew for the new K ({tree_title[:60]})")
                check(page.locator(".csd-live-panel .csd-tok").count() >= 10, "the new trace has coloured tokens")
                check("identical to AR (greedy)" in stats2 and "yes" in stats2, "the stats still say: identical to AR")
                round_stepper_check(page)

                DOCS.mkdir(exist_ok=True)
                page.set_viewport_size({"width": 1300, "height": 3400})  # the whole panel, round and tree included
                time.sleep(2)
                shot(page.locator(".csd-live-panel").first, DOCS / "live_panel.png")
                check((DOCS / "live_panel.png").stat().st_size > 10_000, f"{DOCS / 'live_panel.png'} written")
            finally:
                browser.close()
    finally:
        stop(proc)
        print(f"  JupyterLab stopped (pid {proc.pid})")


def run_all(page, tries: int = 3) -> None:
    """Run > Run All Cells; again when no cell was queued within 30 s (a click while the kernel was
    still starting under load once started nothing)."""
    started = page.locator(".jp-InputPrompt").filter(has_text=re.compile(r"\[(\*|\d+)\]"))
    for _ in range(tries):
        dialog = page.locator(".jp-Dialog .jp-mod-accept")  # e.g. a kernel picker
        if dialog.count():
            dialog.first.click()
        page.locator("li.lm-MenuBar-item", has_text="Run").first.click()
        page.click("li.lm-Menu-item[data-command='runmenu:run-all']")
        end = time.time() + 30
        while time.time() < end:
            if started.count():
                return
            time.sleep(1)
        print("  (Run All queued no cell within 30 s: again)")
    raise CheckFailed(f"Run All started no cell in {tries} tries")


def round_stepper_check(page) -> None:
    """Step the panel's target rounds: the next/prev button, then a drag of the round slider to one end;
    each time the round figure (``csd-rounds``) and the readout must show the new round."""
    title_sel, label_sel = ".csd-live-panel .csd-rounds .gtitle", ".csd-live-panel .csd-round-label"
    wait_idle(page, 120)   # the K edits before this may still be rerunning the generation
    title = wait_text(page, title_sel, "target round", 60)
    for _ in range(20):    # the figure of the last run: the same title twice, 2 s apart
        time.sleep(2)
        again = wait_text(page, title_sel, "target round", 60)
        if again == title:
            break
        title = again
    m = re.search(r"target round (\d+) of (\d+)", title)
    check(m is not None, f"the panel shows one target round unrolled ({title[:80]})")
    r, n = int(m[1]), int(m[2])
    check(n >= 2, f"the generation has several target rounds to step through ({n})")
    rows0 = page.locator(".csd-live-panel .csd-rounds .ytick").all_text_contents()
    button, want = (".csd-round-next", r + 1) if r < n else (".csd-round-prev", r - 1)
    page.locator(f".csd-live-panel {button}").first.click()
    title = wait_text(page, title_sel, f"target round {want} of {n}", 60)
    check(f"target round {want} of {n}" in title, f"clicking {button[11:]} shows round {want} ({title[:80]})")
    label = shown_text(page, label_sel)
    check(f"target round {want} of {n}" in label, f"the readout follows: {label!r}")
    rows1 = page.locator(".csd-live-panel .csd-rounds .ytick").all_text_contents()
    print(f"  (round {r}: {len(rows0)} reviews; round {want}: {len(rows1)} reviews)")
    end = 1 if want > 1 else n   # drag the handle to the far end of the track
    handle = page.locator(".csd-round-slider .noUi-handle").first
    handle.scroll_into_view_if_needed()
    box = handle.bounding_box()
    track = page.locator(".csd-round-slider .noUi-base").first.bounding_box()
    if box is None or track is None:
        raise CheckFailed("no handle found on the round slider")
    x, y = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
    page.mouse.move(x, y)
    page.mouse.down()
    page.mouse.move(track["x"] - 20 if end == 1 else track["x"] + track["width"] + 20, y, steps=10)
    page.mouse.up()
    title = wait_text(page, title_sel, f"target round {end} of {n}", 60)
    check(f"target round {end} of {n}" in title, f"dragging the round slider shows round {end} ({title[:80]})")
    check(f"target round {end} of {n}" in shown_text(page, label_sel), "the readout follows the slider")


def levels_changed(a: str, b: str) -> str:
    """How many tokens of two trace snippets changed level (the header always names the config)."""
    la, lb = (re.findall(r'class="csd-tok" data-level="([^"]+)"', x) for x in (a, b))
    diff = sum(x != y for x, y in zip(la, lb)) + abs(len(la) - len(lb))
    return f"{diff} of {max(len(la), len(lb))} tokens changed level"


def shown_text(page, selector: str) -> str:
    """The rendered text of ``selector``, scrolled into view first.

    JupyterLab 4 skips rendering off-screen cells (CSS ``content-visibility``), and the text of
    an element that is not rendered reads as empty.
    """
    el = page.locator(selector).first
    el.scroll_into_view_if_needed()
    end = time.time() + 5  # rendering follows the scroll by a frame or more
    text = el.inner_text()
    while not text.strip() and time.time() < end:
        time.sleep(0.2)
        text = el.inner_text()
    return text


def panel_state(page) -> tuple[str, str]:
    trace = page.inner_html(".csd-live-panel .csd-trace-view")
    stats = shown_text(page, ".csd-live-panel .csd-stats")
    return trace, stats


def wait_idle(page, timeout: int) -> None:
    """Wait until no cell of the notebook is queued or running ("[*]")."""
    end = time.time() + timeout
    quiet = 0
    while time.time() < end:
        busy = page.locator(".jp-InputPrompt:has-text('[*]')").count()
        quiet = quiet + 1 if busy == 0 else 0
        if quiet >= 3:
            return
        time.sleep(1)
    raise CheckFailed(f"the notebook was still running after {timeout} s")


def wait_text(page, selector: str, expect: str, timeout: int) -> str:
    """The text of ``selector`` once it contains ``expect`` (or is empty, for ``expect=''``).

    The element, or its nearest ancestor in the selector that exists, is kept scrolled into view:
    JupyterLab 4 does not render off-screen cells, so a figure there is never drawn.
    """
    end = time.time() + timeout
    text = ""
    parts = selector.split()
    while time.time() < end:
        shown = next((page.locator(" ".join(parts[:n])) for n in range(len(parts), 0, -1)
                      if page.locator(" ".join(parts[:n])).count()), None)
        if shown is not None:
            shown.first.scroll_into_view_if_needed()
        loc = page.locator(selector)
        text = (loc.first.text_content() or "") if loc.count() else ""  # text_content: SVG titles too
        if (expect in text) if expect else not text.strip():
            return text
        time.sleep(0.5)
    return text


def wait_change(page, trace: str, stats: str, timeout: int) -> tuple[str, str]:
    end = time.time() + timeout
    while time.time() < end:
        t, s = panel_state(page)
        if t != trace and s != stats:
            return t, s
        time.sleep(0.5)
    return panel_state(page)


def move_slider(page, cls: str) -> None:
    """Drag the slider's handle to the right (a real mouse drag, released once). When the readout did
    not move (the page re-laid out under the pointer while figures rendered), focus the handle and
    press the right arrow once instead: one step, as a user would with the keyboard."""
    handle = page.locator(f"{cls} .noUi-handle").first
    handle.scroll_into_view_if_needed()
    box = handle.bounding_box()
    track = page.locator(f"{cls} .noUi-target, {cls} .noUi-base").first.bounding_box()
    if box is None or track is None:
        raise CheckFailed(f"no slider handle found for {cls}")
    readout = page.locator(f"{cls} .widget-readout").first
    before = readout.inner_text() if readout.count() else None
    x, y = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
    page.mouse.move(x, y)
    page.mouse.down()
    page.mouse.move(x + min(60, track["x"] + track["width"] - x - 2), y, steps=8)
    page.mouse.up()
    time.sleep(2)
    if before is not None and readout.inner_text() == before:
        print(f"  (the drag left {cls} at {before}; one right-arrow key press instead)")
        handle.focus()
        page.keyboard.press("ArrowRight")


def shot(locator, path: Path) -> None:
    tmp = path.with_name(path.name + ".tmp.png")
    locator.scroll_into_view_if_needed()
    locator.screenshot(path=str(tmp), timeout=30_000)
    os.replace(tmp, path)


_TOKEN_BOXES_JS = """e => { const r0 = e.getBoundingClientRect();
  return [...e.querySelectorAll('.csd-tok')].map(s => { const r = s.getClientRects()[0]; const cs = getComputedStyle(s);
    return {level: s.dataset.level, x: r.left - r0.left, y: r.top - r0.top, w: r.width, h: r.height,
            deco: cs.textDecorationLine + ' ' + cs.textDecorationStyle}; }); }"""

# the most common grey value inside each box of a PNG (decoded by the browser's own canvas)
_BOX_GREY_JS = """async ({b64, boxes}) => { const img = new Image(); img.src = 'data:image/png;base64,' + b64;
  await img.decode(); const c = document.createElement('canvas'); c.width = img.width; c.height = img.height;
  const ctx = c.getContext('2d'); ctx.drawImage(img, 0, 0);
  return boxes.map(b => { const w = Math.max(1, Math.floor(b.w) - 2), h = Math.max(1, Math.floor(b.h) - 2);
    const d = ctx.getImageData(Math.ceil(b.x) + 1, Math.ceil(b.y) + 1, w, h).data; const hist = new Map();
    for (let i = 0; i < d.length; i += 4) { const v = Math.round((d[i] + d[i + 1] + d[i + 2]) / 3);
      hist.set(v, (hist.get(v) || 0) + 1); }
    let best = null, n = -1; for (const [v, k] of hist) if (k > n) { n = k; best = v; } return best; }); }"""


def greyscale_levels(page, selector: str, path: Path) -> tuple[dict, dict]:
    """Screenshot ``selector`` through CSS grayscale(1); per level, the median grey of its token boxes."""
    import base64
    el = page.locator(selector).first
    el.scroll_into_view_if_needed()
    el.evaluate("e => { e.style.filter = 'grayscale(1)'; }")
    try:
        png = el.screenshot(timeout=30_000)
    finally:
        el.evaluate("e => { e.style.filter = ''; }")
    path.write_bytes(png)
    boxes = el.evaluate(_TOKEN_BOXES_JS)
    greys = page.evaluate(_BOX_GREY_JS, {"b64": base64.b64encode(png).decode(), "boxes": boxes})
    by: dict = {}
    deco: dict = {}
    for b, v in zip(boxes, greys):
        by.setdefault(b["level"], []).append(v)
        deco[b["level"]] = b["deco"]
    return {lv: sorted(vs)[len(vs) // 2] for lv, vs in by.items()}, deco


def check_greyscale(page, selector: str, path: Path) -> None:
    """Neighbouring levels (LEVEL_ORDER) present in the trace differ in grey; close greys differ in underline."""
    from csd_lib.viz import LEVEL_ORDER
    grey, deco = greyscale_levels(page, selector, path)
    print(f"  greyscale of each level (0-255): {grey}")
    pairs = [(a, b) for a, b in zip(LEVEL_ORDER, LEVEL_ORDER[1:]) if a in grey and b in grey]
    check(len(pairs) >= 2, f"the trace shows neighbouring levels to compare: {pairs}")
    for a, b in pairs:
        check(abs(grey[a] - grey[b]) >= 30, f"in greyscale {a} ({grey[a]}) and {b} ({grey[b]}) differ by >= 30")
    levels = sorted(grey)
    for i, a in enumerate(levels):
        for b in levels[i + 1:]:
            if abs(grey[a] - grey[b]) < 30:
                check(deco[a] != deco[b], f"{a} and {b} look alike in grey but differ in underline "
                                          f"({deco[a]!r} vs {deco[b]!r})")


def tree_shot(tmp: Path, chromium: str, family: str) -> None:
    """Render the Algorithm-1 picture of the family's default K and screenshot it to cascade_tree.png."""
    from playwright.sync_api import sync_playwright
    from csd_lib import load_family
    from csd_lib.viz import cascade_tree_figure
    fam = load_family(family)
    html_path = tmp / "cascade_tree.html"
    fig = cascade_tree_figure(fam, title=f"Algorithm 1 for {fam.name}: K = {fam.default_k}, lenience "
                                         f"{fam.default_lenience:g}<br><sup>each box drafts for the box above "
                                         f"it; siblings draft left to right; the parent then reviews the block"
                                         f"</sup>")
    fig.write_html(html_path, include_plotlyjs=True, config={"displayModeBar": False, "staticPlot": True})
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, args=["--no-sandbox", "--disable-gpu"],
                                     timeout=60_000)
        try:
            page = browser.new_page(viewport={"width": int(fig.layout.width) + 40, "height": 900})
            page.goto(html_path.as_uri(), timeout=60_000)
            plot = page.wait_for_selector(".js-plotly-plot .main-svg", timeout=30_000)
            check(plot is not None, "the Algorithm-1 picture renders in Chromium")
            texts = page.locator(".js-plotly-plot .annotation-text").all_text_contents()
            check(any("K[0]" in t for t in texts), "the picture lists the target's row of K")
            DOCS.mkdir(exist_ok=True)
            shot(page.locator(".js-plotly-plot").first, DOCS / "cascade_tree.png")
        finally:
            browser.close()
    check((DOCS / "cascade_tree.png").stat().st_size > 10_000, f"{DOCS / 'cascade_tree.png'} written")


def trace_shot(page_path: Path, chromium: str) -> None:
    """Screenshot the static trace (the csd-trace element) of the exported page to docs/trace.png."""
    from playwright.sync_api import sync_playwright
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, args=["--no-sandbox", "--disable-gpu"],
                                     timeout=60_000)
        try:
            page = browser.new_page(viewport={"width": 1100, "height": 900})
            page.goto(page_path.as_uri(), timeout=60_000)
            el = page.locator(".csd-trace").first
            DOCS.mkdir(exist_ok=True)
            shot(el, DOCS / "trace.png")
            check_greyscale(page, ".csd-trace", page_path.parent / "trace_grey.png")
            # the plotly trace figure: click its slider and check that the replay shows a review
            fig = page.locator(".js-plotly-plot:has(.slider-container)").first
            fig.scroll_into_view_if_needed()
            before = fig.locator(".gtitle").first.text_content() or ""
            rail = fig.locator(".slider-rail-touch-rect").first.bounding_box()
            check(rail is not None, "the trace figure has a step slider")
            page.mouse.click(rail["x"] + rail["width"] * 0.2, rail["y"] + rail["height"] / 2)
            deadline = time.time() + 20
            after = before
            while after == before and time.time() < deadline:
                time.sleep(0.3)
                after = fig.locator(".gtitle").first.text_content() or ""
            check(after.startswith("review ") and after != before,
                  f"the slider replays a target review in the exported page ({after!r})")
            shot(fig, page_path.parent / "trace_replay.png")
        finally:
            browser.close()
    check((DOCS / "trace.png").stat().st_size > 5_000, f"{DOCS / 'trace.png'} written")


# -- 4. every notebook's figures in greyscale ---------------------------------------------

def export_notebook(notebook: Path, out: Path, timeout: int) -> Path:
    """Execute ``notebook`` (default family) to HTML in ``out``, plotly.js inlined; the page's path."""
    t0 = time.time()
    subprocess.run([sys.executable, "-m", "jupyter", "nbconvert", "--to", "html", "--execute",
                    f"--ExecutePreprocessor.timeout={timeout}", "--output-dir", str(out), str(notebook)],
                   check=True, env=child_env(CSD_PLOTLY_RENDERER="notebook"), timeout=timeout + 60,
                   capture_output=True)
    page = out / (notebook.stem + ".html")
    print(f"  {notebook.name} executed and exported in {time.time() - t0:.0f} s")
    return page


def site_builder():
    """scripts/site.py as a module (its name would shadow the standard library's ``site`` on sys.path)."""
    import importlib.util
    spec = importlib.util.spec_from_file_location("csd_site", ROOT / "scripts" / "site.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def render_executed(notebook: Path, executed: Path, out: Path) -> Path:
    """Render the executed copy of ``notebook`` in ``executed`` (``scripts/site.py --keep``) to HTML in ``out``
    without running it: plotly outputs drawn by plotly.js inlined in the page (site.site_cells); the page's path.
    A missing copy, or one whose code differs from the notebook's, raises CheckFailed (never a stale figure)."""
    import nbformat
    import plotly
    from nbconvert import HTMLExporter
    path = executed / notebook.name
    if not path.is_file():
        raise CheckFailed(f"--executed {executed} holds no {notebook.name}")
    nb = nbformat.read(str(path), as_version=4)
    code = [c.source for c in nbformat.read(str(notebook), as_version=4).cells if c.cell_type == "code"]
    if [c.source for c in nb.cells if c.cell_type == "code"] != code:
        raise CheckFailed(f"{path}: its code differs from {notebook} (executed from another version)")
    n_fig = site_builder().site_cells(nb)
    body, _ = HTMLExporter().from_notebook_node(nb)
    if n_fig:  # as plotly's notebook renderer: plotly.js only in a page that draws a figure
        plotly_js = (Path(plotly.__file__).parent / "package_data" / "plotly.min.js").read_text(encoding="utf-8")
        if "<head>" not in body:
            raise CheckFailed(f"nbconvert's page for {notebook.name} has no <head> to put plotly.js in")
        body = body.replace("<head>", f"<head>\n<script>{plotly_js}</script>", 1)
    out.mkdir(parents=True, exist_ok=True)
    page = out / (notebook.stem + ".html")
    page.write_text(body, encoding="utf-8")
    print(f"  {notebook.name} rendered from {path} (not executed again)")
    return page


# per legend entry: the box of the symbol plotly draws left of its name (40 px: bar swatch, line,
# marker), relative to the figure; every entry of a legend gets the same box size, so swatches align
_LEGEND_BOXES_JS = """e => { const r0 = e.getBoundingClientRect();
  return [...e.querySelectorAll('.legend .traces')].map(t => { const r = t.getBoundingClientRect();
    return {name: (t.querySelector('.legendtext') || {}).textContent || '', x: r.left - r0.left,
            y: r.top - r0.top + r.height / 2 - 8, w: 40, h: 16}; }); }"""

# the grey pixels of each box of a PNG (one list per box, rows of the box's width) and the number
# of grey levels (steps of 16) other than the white background that cover >= 200 pixels
_GREY_PIXELS_JS = """async ({b64, boxes}) => { const img = new Image(); img.src = 'data:image/png;base64,' + b64;
  await img.decode(); const c = document.createElement('canvas'); c.width = img.width; c.height = img.height;
  const ctx = c.getContext('2d'); ctx.drawImage(img, 0, 0);
  const all = ctx.getImageData(0, 0, img.width, img.height).data; const hist = new Array(17).fill(0);
  for (let i = 0; i < all.length; i += 4) hist[Math.round((all[i] + all[i + 1] + all[i + 2]) / 3 / 16)]++;
  const levels = hist.slice(0, 16).filter(n => n >= 200).length;
  const px = boxes.map(b => { const d = ctx.getImageData(Math.round(b.x), Math.round(b.y), b.w, b.h).data;
    const out = []; for (let i = 0; i < d.length; i += 4) out.push((d[i] + d[i + 1] + d[i + 2]) / 3); return out; });
  return {levels, px}; }"""


def swatch_distance(a: list[float], b: list[float]) -> float:
    """How unlike two legend swatches look in grey: of the pixels inked in either (grey < 215), the share
    whose grey differs by more than 40 (0: identical, e.g. two hues of one lightness; 1: nothing shared)."""
    ink = [(x, y) for x, y in zip(a, b) if min(x, y) < 215]
    return sum(abs(x - y) > 40 for x, y in ink) / max(1, len(ink))


def greyscale_figures(page, shots: Path, prefix: str, min_distance: float = 0.15) -> list[str]:
    """Screenshot every plotly figure of ``page`` through grayscale(1); the problems found (none: [])."""
    import base64
    problems = []
    plots = page.locator(".js-plotly-plot")
    n = plots.count()
    check(n >= 1, f"{prefix}: the page draws plotly figures ({n})")
    for k in range(n):
        el = plots.nth(k)
        el.scroll_into_view_if_needed()
        title = (el.locator(".gtitle").first.text_content() if el.locator(".gtitle").count() else "") or ""
        el.evaluate("e => { e.style.filter = 'grayscale(1)'; }")
        try:
            png = el.screenshot(timeout=30_000, animations="disabled")
        finally:
            el.evaluate("e => { e.style.filter = ''; }")
        path = shots / f"{prefix}_fig{k + 1}_grey.png"
        path.write_bytes(png)
        boxes = el.evaluate(_LEGEND_BOXES_JS)
        res = page.evaluate(_GREY_PIXELS_JS, {"b64": base64.b64encode(png).decode(), "boxes": boxes})
        dist = {(i, j): swatch_distance(res["px"][i], res["px"][j])
                for i in range(len(boxes)) for j in range(i + 1, len(boxes))}
        alike = [(boxes[i]["name"], boxes[j]["name"]) for (i, j), d in dist.items() if d < min_distance]
        closest = min(dist.values(), default=None)
        gap = f"closest legend pair {closest:.2f}" if closest is not None else "no legend"
        print(f"  {path.name}: {len(boxes)} legend entries, {gap}, {res['levels']} grey levels "
              f"({title[:60]!r})")
        if res["levels"] < 2:
            problems.append(f"{path.name}: only {res['levels']} grey levels")
        if alike:
            problems.append(f"{path.name}: legend entries alike in greyscale: {alike}")
    return problems


def figures_check(tmp: Path, chromium: str, timeout: int, notebooks: list[Path], shots: Path,
                  exported: dict[str, Path], executed: Path | None = None) -> None:
    """Step 4: every notebook's figures screenshot in greyscale, legend entries told apart. Each page is step 1's
    export, else rendered from ``executed`` (scripts/site.py --keep) when given, else executed here."""
    from playwright.sync_api import sync_playwright
    print(f"[4] figures of {len(notebooks)} notebooks in greyscale")
    shots.mkdir(parents=True, exist_ok=True)
    problems = []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, args=["--no-sandbox", "--disable-gpu"],
                                     timeout=60_000)
        try:
            for nb in notebooks:
                try:
                    page_path = exported.get(nb.name) or (
                        render_executed(nb, executed, tmp / "export") if executed is not None
                        else export_notebook(nb, tmp / "export", timeout))
                except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as e:  # check the others
                    problems.append(f"{nb.name} did not execute: {str(e)[:200]}")
                    continue
                except CheckFailed as e:
                    problems.append(str(e))
                    continue
                if "Plotly.newPlot" not in page_path.read_text(encoding="utf-8", errors="replace"):
                    print(f"  ok: {nb.name[:2]}: its outputs hold no plotly figure (nothing to read in greyscale)")
                    continue
                page = browser.new_page(viewport={"width": 1200, "height": 900})
                try:
                    page.goto(page_path.as_uri(), timeout=120_000)
                    page.wait_for_selector(".js-plotly-plot .main-svg", timeout=60_000)
                    time.sleep(1)
                    problems += greyscale_figures(page, shots, nb.name[:2])
                finally:
                    page.close()
        finally:
            browser.close()
    for p in problems:
        print("  problem:", p)
    check(not problems, f"every figure of {len(notebooks)} notebooks reads in greyscale "
                        f"({len(problems)} problems; screenshots in {shots})")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--chromium", default="/usr/bin/chromium")
    ap.add_argument("--timeout", type=int, default=300, help="seconds for executing the notebook")
    ap.add_argument("--keep", default=None, help="keep the temporary files in this folder")
    ap.add_argument("--skip-lab", action="store_true", help="skip the live panel in JupyterLab")
    ap.add_argument("--skip-figures", action="store_true", help="skip step 4 (every notebook's figures)")
    ap.add_argument("--figures-only", action="store_true", help="only step 4 (every notebook's figures)")
    ap.add_argument("--figures-of", default="", help="step 4 on these notebooks only, by number: e.g. 00,03")
    ap.add_argument("--executed", default=None, type=Path,
                    help="step 4 renders the notebooks executed into this folder (scripts/site.py --keep DIR) "
                         "instead of executing them again")
    ap.add_argument("--notebook", default=str(NOTEBOOK), help="the notebook to check (default: 00_start_here)")
    ap.add_argument("--family", default="tiny-t5", help="the family whose Algorithm-1 picture is drawn")
    ap.add_argument("--shots", default=None,
                    help="folder for the screenshots (default: the temporary folder; `--shots docs` refreshes "
                         "the README pictures)")
    args = ap.parse_args()
    if not (Path(args.chromium).exists() or shutil.which(args.chromium)):
        print(f"browser check: Chromium not found at {args.chromium}; install it with "
              f"`apt-get install -y chromium` or pass --chromium PATH")
        return 2
    try:
        from playwright.sync_api import Error as PlaywrightError
    except ImportError:
        print("browser check: Playwright for Python is missing; `pip install playwright` "
              "(never `playwright install`: the check uses Debian's Chromium)")
        return 2
    if args.executed is not None and not args.executed.is_dir():
        print(f"browser check: --executed {args.executed} is not a folder of executed notebooks "
              f"(scripts/site.py OUT --keep DIR writes one)")
        return 2
    tmp = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="csd-browser-"))
    tmp.mkdir(parents=True, exist_ok=True)
    global DOCS
    DOCS = Path(args.shots).resolve() if args.shots else tmp
    try:
        notebook = Path(args.notebook).resolve()
        exported = {}
        if not args.figures_only:
            exported[notebook.name] = static_export(tmp, args.chromium, args.timeout, notebook)
            trace_shot(exported[notebook.name], args.chromium)
            tree_shot(tmp, args.chromium, args.family)
            if not args.skip_lab:
                live_panel_check(tmp, args.chromium, args.timeout, notebook)
        if not args.skip_figures:
            wanted = [n.strip() for n in args.figures_of.split(",") if n.strip()]
            nbs = [nb for nb in sorted((ROOT / "notebooks").glob("*.ipynb")) if not wanted or nb.name[:2] in wanted]
            figures_check(tmp, args.chromium, args.timeout, nbs, DOCS, exported, args.executed)
    except (CheckFailed, PlaywrightError, subprocess.CalledProcessError, subprocess.TimeoutExpired) as e:
        detail = getattr(e, "stderr", None)
        print(f"browser check FAILED: {e}")
        if detail:
            print(detail.decode(errors="replace")[-3000:] if isinstance(detail, bytes) else detail[-3000:])
        print(f"(temporary files kept in {tmp})")
        return 1
    if not args.keep:
        shutil.rmtree(tmp, ignore_errors=True)
    print("browser check passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
