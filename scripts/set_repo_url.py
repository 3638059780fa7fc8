"""Point the workbook at a repository: REPO_URL, the Colab badges and every notebook's setup cell.

    python scripts/set_repo_url.py https://github.com/OWNER/REPO   # a fork: run once, commit, push
    python scripts/set_repo_url.py --check                          # CI: are the notebooks in sync?

It rewrites ``REPO_URL`` in csd_lib/colab.py, the "Open in Colab" links in the notebooks'
Markdown and their setup cell (``csd_lib.colab.setup_cell_source``). Nothing else in a
notebook changes, byte for byte, and running it twice changes nothing the second time.
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# csd_lib/colab.py alone (it imports only the standard library), not the whole package with torch
_spec = importlib.util.spec_from_file_location("csd_colab", ROOT / "csd_lib" / "colab.py")
colab = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(colab)


def write_atomic(path: Path, text: str) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    with os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
        f.write(text)
    os.replace(tmp, path)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("url", nargs="?", default=None,
                    help="https://github.com/OWNER/REPO (default: the REPO_URL now in --module)")
    ap.add_argument("--branch", default=colab.BRANCH, help="branch the Colab badges open (default %(default)s)")
    ap.add_argument("--notebooks", type=Path, default=ROOT / "notebooks", help="folder of .ipynb files")
    ap.add_argument("--module", type=Path, default=ROOT / "csd_lib" / "colab.py", help="file holding REPO_URL")
    ap.add_argument("--check", action="store_true", help="change nothing; exit 1 if a file would change")
    args = ap.parse_args(argv)
    try:
        url = (args.url or colab.get_constant(args.module.read_text(encoding="utf-8"))).strip()
        url = url.rstrip("/").removesuffix(".git")
        colab.github_url(url)
        paths = sorted(args.notebooks.glob("*.ipynb"))
        if not paths:
            raise ValueError(f"no notebooks in {args.notebooks}; pass --notebooks DIR")
        changes = {args.module: colab.set_constant(args.module.read_text(encoding="utf-8"), url)}
        for path in paths:
            try:
                changes[path] = colab.rewrite_notebook(path.read_text(encoding="utf-8"), url, args.branch)
            except ValueError as e:
                raise ValueError(f"{path}: {e}") from None
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    changed = [p for p, text in changes.items() if p.read_text(encoding="utf-8") != text]
    for path in changed:
        if not args.check:
            write_atomic(path, changes[path])
        print(("would change " if args.check else "changed ") + str(path))
    if not changed:
        print(f"up to date: {url} (branch {args.branch})")
    return 1 if args.check and changed else 0


if __name__ == "__main__":
    sys.exit(main())
