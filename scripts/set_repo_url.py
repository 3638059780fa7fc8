"""Point the workbook at a repository and branch: REPO_URL, BRANCH, the Colab badges, every setup cell.

    python scripts/set_repo_url.py https://github.com/OWNER/REPO   # a fork: run once, commit, push
    python scripts/set_repo_url.py --branch dev                     # the same URL, another branch
    python scripts/set_repo_url.py --check                          # CI: are the notebooks in sync?

It rewrites ``REPO_URL`` and ``BRANCH`` in scripts/colab.py (saved there, so that ``--check``
and the next run use them), the "Open in Colab" links in the notebooks' Markdown and their setup
cell (``colab.setup_cell_source``). Nothing else in a notebook changes, byte for byte, and
running it twice changes nothing the second time.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

import colab  # scripts/colab.py, next to this script (standard library only)

ROOT = Path(__file__).resolve().parent.parent


def write_atomic(path: Path, text: str) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    with os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
        f.write(text)
    os.replace(tmp, path)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("url", nargs="?", default=None,
                    help="https://github.com/OWNER/REPO (default: the REPO_URL now in --module)")
    ap.add_argument("--branch", default=None,
                    help="branch the badges open and the setup cell clones (default: the BRANCH now in --module)")
    ap.add_argument("--notebooks", type=Path, default=ROOT / "notebooks", help="folder of .ipynb files")
    ap.add_argument("--module", type=Path, default=ROOT / "scripts" / "colab.py",
                    help="file holding REPO_URL and BRANCH")
    ap.add_argument("--check", action="store_true", help="change nothing; exit 1 if a file would change")
    args = ap.parse_args(argv)
    try:
        module_text = args.module.read_text(encoding="utf-8")
        saved_url, saved_branch = colab.get_constants(module_text)
        url = (args.url or saved_url).strip().rstrip("/").removesuffix(".git")
        colab.github_url(url)
        branch = colab.check_branch((args.branch or saved_branch).strip())
        paths = sorted(args.notebooks.glob("*.ipynb"))
        if not paths:
            raise ValueError(f"no notebooks in {args.notebooks}; pass --notebooks DIR")
        changes = {args.module: colab.set_constants(module_text, url, branch)}
        for path in paths:
            try:
                changes[path] = colab.rewrite_notebook(path.read_text(encoding="utf-8"), url, branch)
            except ValueError as e:
                raise ValueError(f"{path}: {e}") from None
    except (ValueError, OSError) as e:  # a bad URL or branch, a missing file
        print(f"error: {e}", file=sys.stderr)
        return 2
    changed = [p for p, text in changes.items() if p.read_text(encoding="utf-8") != text]
    for path in changed:
        if not args.check:
            write_atomic(path, changes[path])
        print(("would change " if args.check else "changed ") + str(path))
    if not changed:
        print(f"up to date: {url} (branch {branch})")
    return 1 if args.check and changed else 0


if __name__ == "__main__":
    sys.exit(main())
