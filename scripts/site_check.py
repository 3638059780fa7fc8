"""Open every page of a built site (scripts/site.sh OUT) in headless Chromium with the network off.

Per page, at a projector's 1280x720: no console error, no request leaving OUT (every request that is not
a file under OUT is aborted and counted), every figure drawn (plotly figures counted against the number
the builder wrote, images loaded), no sideways scrolling and body text of at least 14 px. Every internal
link must name a file of the site (and its #anchor an element of that page). On the explorer, moving the
k11 and lenience sliders must change the trace and the numbers; on the slides, every slide is visited and
its figure drawn. ``--shots DIR`` saves site_index.png, site_notebook.png and site_explorer.png there.

Usage: ``.venv/bin/python scripts/site_check.py OUT [--chromium /usr/bin/chromium] [--shots docs]``
Exit status 0 when every check passed, 1 when one failed, 2 when Chromium or Playwright is missing.
Drives Debian's Chromium through Playwright (never ``playwright install``).
"""
from __future__ import annotations

import argparse
import json
import re
import shutil
import sys
import time
from pathlib import Path
from urllib.parse import unquote, urlparse

VIEW = {"width": 1280, "height": 720}


class CheckFailed(AssertionError):
    """A check of the site did not hold."""


def check(cond: bool, what: str) -> None:
    if not cond:
        raise CheckFailed(what)
    print(f"  ok: {what}")


def open_page(browser, out: Path, name: str):
    """A page of the site loaded with requests outside ``out`` aborted; (page, console errors, blocked URLs)."""
    page = browser.new_page(viewport=VIEW)
    errors, blocked, root = [], [], out.resolve().as_uri()
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))

    def route(r):
        url = r.request.url
        if url.startswith(root + "/") or url.startswith(("data:", "blob:", "about:")):
            return r.continue_()
        blocked.append(url)
        return r.abort()
    page.route("**/*", route)
    page.goto((out / name).resolve().as_uri(), wait_until="load", timeout=120_000)
    return page, errors, blocked


def drawn_figures(page) -> int:
    """Plotly figures that drew their SVG."""
    return page.locator(".js-plotly-plot .main-svg").count() and page.evaluate(
        "() => [...document.querySelectorAll('.js-plotly-plot')].filter(e => e.querySelector('.main-svg')).length")


def readable(page, name: str) -> None:
    wide = page.evaluate("() => document.documentElement.scrollWidth")
    check(wide <= VIEW["width"] + 2, f"{name}: no sideways scrolling at 1280x720 (page width {wide})")
    size = page.evaluate("() => parseFloat(getComputedStyle(document.querySelector('main') || document.body).fontSize)")
    check(size >= 14, f"{name}: body text {size:.0f} px")


def links_resolve(out: Path, pages: list[str]) -> int:
    """Every relative link of every page names a site file (and an id on it); the number of links checked."""
    ids = {p: set(re.findall(r'\b(?:id|name)="([^"]+)"', (out / p).read_text(encoding="utf-8"))) for p in pages}
    bad, n = [], 0
    for p in pages:
        for href in re.findall(r'<a [^>]*href="([^"]+)"', (out / p).read_text(encoding="utf-8")):
            u = urlparse(href)
            if u.scheme or href.startswith("//"):
                continue
            n += 1
            target = unquote(u.path) or p
            if not (out / target).is_file():
                bad.append(f"{p} -> {href}")
            elif u.fragment and target.endswith(".html") and not {u.fragment, unquote(u.fragment)} & ids.get(target, set()):
                bad.append(f"{p} -> {href} (no such anchor)")
    check(not bad, f"{n} internal links resolve" + (f"; broken: {bad[:10]}" if bad else ""))
    return n


def explorer_moves(page) -> None:
    """The k11 and lenience sliders change the trace and the numbers."""
    def state():
        return (page.locator("#csd-ex-trace").get_attribute("data-key"), page.inner_html("#csd-ex-trace"),
                page.inner_text("#csd-ex-stats"))

    def move(slider: str) -> None:
        page.evaluate("""s => { const r = document.querySelector(s); r.value = (+r.value + 1) % (+r.max + 1);
                                r.dispatchEvent(new Event('input', {bubbles: true})); }""", slider)
    before = state()
    check(page.locator("#csd-ex-trace .csd-tok").count() > 5, "explorer: the trace shows coloured tokens")
    move("#csd-ex-k11")
    after = state()
    check(after[0] != before[0] and after[1] != before[1] and after[2] != before[2],
          f"explorer: the k11 slider changed the trace and the numbers ({before[0]} -> {after[0]})")
    move("#csd-ex-len")
    third = state()
    check(third[0] != after[0], f"explorer: the lenience slider picks another recorded run ({third[0]})")
    title0 = page.inner_text("#csd-ew-best")
    page.evaluate("""() => { const r = document.querySelector('#csd-ew-alpha'); r.value = 0.5;
                            r.dispatchEvent(new Event('input', {bubbles: true})); }""")
    check(page.inner_text("#csd-ew-best") != title0, "explorer: the EWIF alpha slider redraws the curves")


def slides_walk(page) -> int:
    """Visit every slide; the figures (plotly, pictures, traces) drawn over the deck."""
    n = page.evaluate("() => Reveal.getTotalSlides()")
    for _ in range(n):
        page.evaluate("() => Reveal.next()")
        time.sleep(0.3)
    plots = page.evaluate("() => document.querySelectorAll('.csd-slide-fig .main-svg').length > 0 ? "
                          "document.querySelectorAll('.csd-slide-fig[data-drawn]').length : 0")
    want = page.locator(".csd-slide-fig").count()
    check(plots == want, f"slides: {plots} of {want} plotly figures drawn")
    imgs = page.evaluate("() => [...document.querySelectorAll('.slides img')].filter(i => i.naturalWidth > 0).length")
    check(imgs == page.locator(".slides img").count(), f"slides: {imgs} pictures loaded")
    notes = page.locator("aside.notes").count()
    check(notes >= n - 1, f"slides: {n} slides, {notes} with speaker notes")
    return plots + imgs + page.locator(".slides .csd-trace").count()


def check_page(browser, out: Path, name: str, summary: dict, shots: Path | None) -> int:
    page, errors, blocked = open_page(browser, out, name)
    try:
        time.sleep(1.0)
        count = drawn_figures(page) or 0
        if name == "slides.html":
            count = slides_walk(page)
        elif name in summary["figures"]:
            check(count == summary["figures"][name], f"{name}: {count} of {summary['figures'][name]} figures drawn")
        elif name == "explorer.html":
            check(count == 2, f"explorer: {count} figures drawn (acceptance, EWIF)")
            explorer_moves(page)
        elif name == "figures.html":
            count = page.evaluate("() => [...document.images].filter(i => i.complete && i.naturalWidth > 0).length")
            check(count == page.locator("img").count() and count > 0, f"figures: {count} pictures loaded")
        if name != "slides.html":
            readable(page, name)
        if shots and name in ("index.html", "explorer.html") or shots and name == summary.get("shot_notebook"):
            label = {"index.html": "index", "explorer.html": "explorer"}.get(name, "notebook")
            page.screenshot(path=str(shots / f"site_{label}.png"))
        check(not errors, f"{name}: no console errors" + (f" ({errors[:3]})" if errors else ""))
        check(not blocked, f"{name}: no request leaves the site" + (f" ({blocked[:3]})" if blocked else ""))
        return count
    finally:
        page.close()


def run(out: Path, chromium: str, shots: Path | None) -> dict[str, int]:
    """Every check; the figures counted per page."""
    from playwright.sync_api import sync_playwright
    summary = json.loads((out / "site.json").read_text(encoding="utf-8"))
    pages = summary["pages"]
    nb_pages = sorted(summary["figures"])
    summary["shot_notebook"] = next((p for p in nb_pages if p.startswith("00")), nb_pages[0] if nb_pages else None)
    check(summary["site_bytes"] < 30e6, f"the site is {summary['site_bytes'] / 1e6:.1f} MB (< 30 MB)")
    links_resolve(out, pages)
    if shots:
        shots.mkdir(parents=True, exist_ok=True)
    counts = {}
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, timeout=60_000, args=[
            "--no-sandbox", "--disable-gpu", "--proxy-server=127.0.0.1:9", "--proxy-bypass-list=<-loopback>",
            "--disable-background-networking", "--disable-component-update"])
        try:
            for name in pages:
                counts[name] = check_page(browser, out, name, summary, shots)
        finally:
            browser.close()
    print("figures per page:", json.dumps(counts))
    return counts


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path, help="the built site (scripts/site.sh OUT)")
    ap.add_argument("--chromium", default="/usr/bin/chromium")
    ap.add_argument("--shots", type=Path, default=None, help="save the three screenshots here (e.g. docs)")
    args = ap.parse_args(argv)
    if not (Path(args.chromium).exists() or shutil.which(args.chromium)):
        print(f"site check: Chromium not found at {args.chromium}; `apt-get install -y chromium` or pass --chromium")
        return 2
    try:
        from playwright.sync_api import Error as PlaywrightError
    except ImportError:
        print("site check: Playwright for Python is missing (never `playwright install`: Debian's Chromium is used)")
        return 2
    if not (args.out / "site.json").is_file():
        print(f"site check: {args.out} is not a built site (no site.json); run bash scripts/site.sh {args.out}")
        return 2
    try:
        run(args.out, args.chromium, args.shots)
    except (CheckFailed, PlaywrightError) as e:
        print(f"site check FAILED: {e}")
        return 1
    print("site check passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
