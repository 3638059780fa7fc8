"""Colab tooling: the repository URL and branch (set in one place), the notebooks' setup cell and badges.

Used by scripts/set_repo_url.py only; it is not part of the ``csd_lib`` package (nor of its wheel).
A fork points everything at itself with one command, run in a clone of the fork::

    python scripts/set_repo_url.py https://github.com/OWNER/REPO [--branch BRANCH]

It rewrites :data:`REPO_URL` and :data:`BRANCH` below, every "Open in Colab" badge and the setup
cell of every notebook (:func:`setup_cell_source`, one template for all notebooks).

The setup cell only acts on Colab (elsewhere it only finds a checkout's ``csd_lib`` when the
package is not installed). On Colab it clones :data:`BRANCH` of the repository, or updates the
clone when the cell runs again (after a runtime restart the folder is still there, and ``git clone``
refuses to write into it), installs it with ``pip install -e .[real]`` (the real-model extra:
``datasets`` fetches GSM8K and MMLU, so notebooks 01/02 and MaG's bigram table use the real data
online; ``accelerate``, ``sentencepiece``, ``protobuf`` for the real families), and turns on Colab's
custom widget manager for the live panels. The install keeps Colab's own CUDA build of torch: pip
gets a constraint pinning torch to the installed version, so it installs or upgrades the other
dependencies (transformers in its tested range, plotly, ...) and, were one of them to need another torch, stops
with an error instead of downloading one. If the clone fails, the cell says what to do: set the
URL with the script above, or upload a wheel (``pip wheel . --no-deps -w dist``; the wheel carries
the tiny families) and ``pip install`` it.
"""
from __future__ import annotations

import json
import re

# The repository and branch that the badges and setup cells point at (the URL is a placeholder
# until the maintainer sets the real one). Change them with scripts/set_repo_url.py, never by hand
# alone: the script rewrites these two lines and every notebook together.
REPO_URL = "https://github.com/csd-workbook/csd-workbook"
BRANCH = "main"
COLAB_DIR = "/content/csd-workbook"  # where the setup cell clones on Colab
SETUP_MARKER = "# Setup, written by scripts/set_repo_url.py"  # first line of every setup cell
SETUP_CELL_ID = "csd-setup"           # the cell id, where the notebook format has ids

_GITHUB = re.compile(r"^(?:https://github\.com/|git@github\.com:)([\w.-]+)/([\w.-]+?)(?:\.git)?/?$")
_BADGE = re.compile(r"https://colab\.research\.google\.com/github/[\w.-]+/[\w.-]+/blob/[\w./-]+?/"
                    r"(?P<path>notebooks/[\w.-]+\.ipynb)")
_BRANCH = re.compile(r"^(?!.*\.\.)(?!.*\.lock(?:/|$))\w[\w.-]*(?:/\w[\w.-]*)*$")  # a plain git branch name
_CONSTANTS = ("REPO_URL", "BRANCH")

_TEMPLATE = '''\
{marker} from scripts/colab.py: use it to change URL or branch.
# On Colab: clone this workbook's branch (or update the clone), install it with the real-model extra
# keeping Colab's torch, and turn on the widget manager. Elsewhere: find csd_lib. Safe to re-run.
def _setup(url={url!r}, branch={branch!r}, where={where!r}):
    import importlib.metadata as md, importlib.util, subprocess, sys, tempfile
    from pathlib import Path
    importlib.invalidate_caches()
    if "google.colab" not in sys.modules:  # your own Jupyter: `pip install -e .`, or run from notebooks/
        if importlib.util.find_spec("csd_lib") is None and (Path.cwd().parent / "csd_lib").is_dir():
            sys.path.insert(0, str(Path.cwd().parent))
        return
    from google.colab import output
    output.enable_custom_widget_manager()  # the live panels are ipywidgets 8
    where = Path(where)
    if (where / ".git").is_dir():  # a re-run or a restart: update the clone, never clone over it
        if subprocess.run(["git", "-C", str(where), "pull", "-q", "--ff-only"]).returncode:
            print(f"could not update {{where}}; using it as it is")
    elif importlib.util.find_spec("csd_lib") is not None:  # installed from an uploaded wheel
        where = None
    elif subprocess.run(["git", "clone", "-q", "--depth", "1", "--branch", branch, url, str(where)]).returncode:
        print(f"Could not clone branch {{branch}} of {{url}}. Either\\n"
              "- point the notebooks at a repository that exists: in a clone of it, run\\n"
              "  python scripts/set_repo_url.py https://github.com/OWNER/REPO [--branch B], commit and push; or\\n"
              "- build a wheel where you have the repository (pip wheel . --no-deps -w dist), upload\\n"
              "  dist/csd_workbook-*.whl here (Files panel), run !pip install csd_workbook-*.whl\\n"
              "  and re-run this cell.")
        raise RuntimeError(f"could not clone {{url}}; see above")
    try:
        md.distribution("csd-workbook")
        md.distribution("datasets")  # from the [real] extra: GSM8K and MMLU, not the synthetic splits
    except md.PackageNotFoundError:  # first run on this runtime: install, pinning the torch it has
        pin = Path(tempfile.gettempdir()) / "csd-keep-torch.txt"
        pin.write_text(f"torch=={{md.version('torch')}}\\n" if importlib.util.find_spec("torch") else "")
        what = ["-e", f"{{where}}[real]"] if where else ["csd-workbook[real]"]  # a wheel: add its extra only
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", *what, "-c", str(pin)], check=True)
    if where and str(where) not in sys.path:
        sys.path.insert(0, str(where))  # this kernel sees the editable install only after a restart


_setup()
del _setup'''


def github_url(url: str) -> tuple[str, str]:
    """(owner, repo) of a GitHub repository URL; ValueError for anything else."""
    m = _GITHUB.match(url.strip())
    if not m:
        raise ValueError(f"{url!r} is not a GitHub repository URL; Colab opens notebooks from GitHub only: "
                         f"pass https://github.com/OWNER/REPO")
    return m[1], m[2]


def check_branch(branch: str) -> str:
    """``branch`` when it is a plain git branch name; ValueError for anything else."""
    if not _BRANCH.match(branch):
        raise ValueError(f"{branch!r} is not a branch name; pass one such as main or dev/colab")
    return branch


def badge_url(url: str, notebook: str, branch: str = BRANCH) -> str:
    """The Colab link of ``notebook`` (e.g. 'notebooks/00_start_here.ipynb') in a GitHub repository."""
    owner, repo = github_url(url)
    check_branch(branch)
    return f"https://colab.research.google.com/github/{owner}/{repo}/blob/{branch}/{notebook}"


def setup_cell_source(url: str = REPO_URL, branch: str = BRANCH, where: str = COLAB_DIR) -> str:
    """The source of every notebook's setup cell (the first code cell), cloning ``branch`` of ``url``
    into ``where``."""
    return _TEMPLATE.format(marker=SETUP_MARKER, url=url, branch=check_branch(branch), where=where)


def _constant(name: str) -> re.Pattern:
    return re.compile(rf'^{name} = "[^"\n]*"', re.M)


def get_constants(module_text: str) -> tuple[str, str]:
    """(REPO_URL, BRANCH) as set in the text of this module."""
    values = []
    for name in _CONSTANTS:
        found = _constant(name).findall(module_text)
        if len(found) != 1:
            raise ValueError(f'expected exactly one line starting with {name} = "..." in scripts/colab.py')
        values.append(json.loads(found[0].removeprefix(f"{name} = ")))
    return values[0], values[1]


def set_constants(module_text: str, url: str, branch: str) -> str:
    """The text of this module with REPO_URL set to ``url`` and BRANCH to ``branch``."""
    get_constants(module_text)
    for name, value in zip(_CONSTANTS, (url, branch)):
        module_text = _constant(name).sub(lambda _, line=f"{name} = {json.dumps(value)}": line, module_text)
    return module_text


def _lines(text: str) -> list[str]:
    return text.splitlines(keepends=True)


def _text(cell: dict) -> str:
    src = cell["source"]
    return src if isinstance(src, str) else "".join(src)


def _set_text(cell: dict, text: str) -> None:
    if _text(cell) != text:
        cell["source"] = text if isinstance(cell["source"], str) else _lines(text)


def _drop_legacy(cell: dict, other_code: str) -> None:
    """Remove the old inline Colab block (``if "google.colab" in sys.modules:`` ... and the
    ``try: import csd_lib`` fallback) from a cell, and the imports only it used."""
    lines = _text(cell).split("\n")
    start = next((i for i, ln in enumerate(lines) if ln.startswith('if "google.colab" in sys.modules:')), None)
    if start is None:
        return
    end = start + 1
    while end < len(lines) and lines[end].startswith((" ", "\t")):
        end += 1
    if lines[end:end + 2] == ["try:", "    import csd_lib"] and lines[end + 2].startswith("except ImportError"):
        end += 3
        while end < len(lines) and lines[end].startswith((" ", "\t")):
            end += 1
    del lines[start:end]
    if 0 < start < len(lines) and lines[start - 1] == lines[start] == "":  # one blank line where it was
        del lines[start]
    rest = "\n".join(lines) + "\n" + other_code
    for name, line in (("subprocess", "import subprocess"), ("sys", "import sys"), ("Path", "from pathlib import Path")):
        if line in lines and len(re.findall(rf"\b{name}\b", rest)) == 1:  # only its own import line
            lines.remove(line)
    while lines and not lines[0].strip():
        lines.pop(0)
    _set_text(cell, "\n".join(lines))


def rewrite_notebook(text: str, url: str, branch: str = BRANCH, where: str = COLAB_DIR) -> str:
    """A notebook's JSON text with its Colab badges and setup cell pointing at ``branch`` of ``url``.

    Everything else stays byte for byte: the JSON layout (indent 1, key order) is kept and
    only the badge links and the setup cell change. A notebook without a setup cell gets one
    before its first code cell, and loses the older inline Colab block of that cell. Idempotent.
    """
    github_url(url)
    nb = json.loads(text)
    layout = next((kw for kw in (dict(sort_keys=False), dict(sort_keys=True))
                   if json.dumps(nb, indent=1, ensure_ascii=False, **kw) == text.rstrip("\n")), None)
    if layout is None:
        raise ValueError("this notebook is not in Jupyter's JSON layout (indent 1); open and save it in "
                         "Jupyter (or nbformat.write it) first, so that a rewrite changes only its links")
    cells = nb["cells"]
    for cell in cells:
        if cell["cell_type"] == "markdown":
            _set_text(cell, _BADGE.sub(lambda m: badge_url(url, m["path"], branch), _text(cell)))
    code = [c for c in cells if c["cell_type"] == "code"]
    setup = [c for c in code if _text(c).startswith(SETUP_MARKER)]
    if len(setup) > 1:
        raise ValueError(f"{len(setup)} setup cells (cells starting with {SETUP_MARKER!r}); keep only the first one")
    if not code:
        raise ValueError("the notebook has no code cell to put the setup cell before")
    source = setup_cell_source(url, branch, where)
    if setup:
        cell = setup[0]
        _set_text(cell, source)
    else:
        first = code[0]
        _drop_legacy(first, "\n".join(_text(c) for c in code[1:]))
        cell = {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [], "source": _lines(source)}
        if nb.get("nbformat", 4) > 4 or nb.get("nbformat_minor", 0) >= 5:
            cell["id"] = SETUP_CELL_ID
        order = [k for k in first if k in cell] + [k for k in cell if k not in first]
        cell = {k: cell[k] for k in order}
        cells.insert(cells.index(first), cell)
    if cell.get("outputs") or cell.get("execution_count") is not None:
        cell["outputs"], cell["execution_count"] = [], None
    out = json.dumps(nb, indent=1, ensure_ascii=False, **layout)
    return out + "\n" * (len(text) - len(text.rstrip("\n")))
