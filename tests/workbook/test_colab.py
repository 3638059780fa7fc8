"""Colab from any fork: the setup cell (run twice, as after a restart), the URL and branch rewrite, the badges."""
import importlib.metadata
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from csd_lib import config

ROOT = config.REPO_ROOT
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
SCRIPT = ROOT / "scripts" / "set_repo_url.py"
MODULE = ROOT / "scripts" / "colab.py"  # tooling next to its script, not part of csd_lib
_spec = importlib.util.spec_from_file_location("colab", MODULE)
colab = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(colab)
A, B = "https://github.com/alice/csd-fork", "https://github.com/bob/other-name"
GIT_ENV = dict(GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@t", GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@t")


# -- the setup cell, executed ---------------------------------------------------------

@pytest.fixture
def fake_colab(tmp_path):
    """A folder for PYTHONPATH with a fake ``google.colab`` and a fake ``pip`` that logs its argv."""
    fake = tmp_path / "fake"
    (fake / "google" / "colab").mkdir(parents=True)  # google stays a namespace package
    (fake / "google" / "colab" / "__init__.py").write_text("")
    (fake / "google" / "colab" / "output.py").write_text(
        "def enable_custom_widget_manager():\n    print('CUSTOM-WIDGET-MANAGER-ON')\n")
    (fake / "pip").mkdir()
    (fake / "pip" / "__init__.py").write_text("")
    log = tmp_path / "pip_calls.jsonl"
    (fake / "pip" / "__main__.py").write_text(
        f"import json, sys\nwith open({str(log)!r}, 'a') as f:\n    f.write(json.dumps(sys.argv[1:]) + '\\n')\n")
    # torch (and only torch) visible to `python -S`, as on a runtime where csd-workbook is not installed yet
    site = tmp_path / "site"
    site.mkdir()
    torch_dist = importlib.metadata.distribution("torch")
    (site / "torch").symlink_to(Path(torch_dist.locate_file("torch")))
    dist_info = next(f for f in torch_dist.files if f.name == "METADATA").locate().parent  # torch-*.dist-info
    (site / dist_info.name).symlink_to(dist_info)
    return fake, site, log


RUNNER = """
import json, sys
import google.colab  # Colab has it imported before any cell runs
src = open(sys.argv[1]).read()
for _ in range(int(sys.argv[2])):
    exec(compile(src, "setup-cell", "exec"), {"__name__": "__main__"})
out = dict(path0=sys.path[0], count=sys.path.count(sys.argv[3]))
if sys.argv[4] == "import":
    import csd_lib
    out["csd_lib"] = csd_lib.__file__
print("RESULT " + json.dumps(out))
"""


def run_cell(tmp_path, fake, site, url, where, times=1, bare=True, do_import=False, branch="main"):
    cell = tmp_path / "cell.py"
    cell.write_text(colab.setup_cell_source(url, branch, str(where)))
    runner = tmp_path / "runner.py"
    runner.write_text(RUNNER)
    cwd = tmp_path / "content"
    cwd.mkdir(exist_ok=True)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(fake)] + ([str(site)] if bare else [])),
               TMPDIR=str(tmp_path), GIT_TERMINAL_PROMPT="0")
    cmd = [sys.executable] + (["-S"] if bare else []) + [str(runner), str(cell), str(times), str(where),
                                                          "import" if do_import else "-"]
    p = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=120)
    res = next((json.loads(ln[7:]) for ln in p.stdout.splitlines() if ln.startswith("RESULT ")), None)
    return p, res


def pip_calls(log):
    return [json.loads(ln) for ln in log.read_text().splitlines()] if log.exists() else []


def git(*args, cwd=None):
    return subprocess.run(["git", *args], cwd=cwd, env=dict(os.environ, **GIT_ENV), check=True,
                          capture_output=True, text=True).stdout.strip()


@pytest.fixture
def origin(tmp_path):
    """A local copy of this repository (file:// URL) with a branch 'dev' one commit past its default
    branch, so that a clone of the default branch is told apart from a clone of 'dev'."""
    bare = tmp_path / "origin.git"
    git("clone", "-q", "--bare", "--shared", str(ROOT), str(bare))
    dev = git("-C", str(bare), "commit-tree", "HEAD^{tree}", "-p", "HEAD", "-m", "dev")
    git("-C", str(bare), "branch", "dev", dev)
    return bare.as_uri(), dev


def test_setup_cell_clones_the_saved_branch_once_and_reruns(tmp_path, fake_colab, origin):
    fake, site, log = fake_colab
    where = tmp_path / "content" / "csd-workbook"
    url, dev = origin

    p, res = run_cell(tmp_path, fake, site, url, where, branch="dev")  # a fresh runtime
    assert p.returncode == 0, p.stderr
    assert "CUSTOM-WIDGET-MANAGER-ON" in p.stdout
    assert (where / ".git").is_dir() and (where / "csd_lib" / "engine" / "cascade.py").is_file()
    assert git("-C", str(where), "rev-parse", "HEAD") == dev  # the branch the notebooks name, not the default
    assert git("-C", str(where), "rev-parse", "--abbrev-ref", "HEAD") == "dev"
    assert res == dict(path0=str(where), count=1)
    pin = tmp_path / "csd-keep-torch.txt"
    assert pip_calls(log) == [["install", "-q", "-e", f"{where}[real]", "-c", str(pin)]]  # with the real extra
    assert pin.read_text() == f"torch=={importlib.metadata.version('torch')}\n"  # Colab's torch is kept

    p, res = run_cell(tmp_path, fake, site, url, where, times=2, branch="dev")  # a restart, the cell run twice
    assert p.returncode == 0, p.stderr
    assert "could not update" not in p.stdout and "Could not clone" not in p.stdout
    assert res == dict(path0=str(where), count=1)

    log.unlink()  # csd-workbook installed (this venv): no pip, and csd_lib comes from the clone
    p, res = run_cell(tmp_path, fake, site, url, where, bare=False, do_import=True, branch="dev")
    assert p.returncode == 0, p.stderr
    assert pip_calls(log) == [] and res["csd_lib"] == str(where / "csd_lib" / "__init__.py")


def test_setup_cell_adds_the_extra_to_an_uploaded_wheel(tmp_path, fake_colab):
    """csd_lib importable (a wheel) but the real extra missing: pip adds the extra, nothing is cloned."""
    fake, site, log = fake_colab
    (site / "csd_lib").symlink_to(ROOT / "csd_lib")
    where = tmp_path / "content" / "csd-workbook"
    p, res = run_cell(tmp_path, fake, site, (tmp_path / "no-such-repo").as_uri(), where)
    assert p.returncode == 0, p.stderr
    assert not where.exists() and res["count"] == 0
    assert pip_calls(log) == [["install", "-q", "csd-workbook[real]", "-c", str(tmp_path / "csd-keep-torch.txt")]]


def test_setup_cell_failed_clone_says_what_to_do(tmp_path, fake_colab):
    fake, site, log = fake_colab
    where = tmp_path / "content" / "csd-workbook"
    p, res = run_cell(tmp_path, fake, site, (tmp_path / "no-such-repo").as_uri(), where)
    assert p.returncode != 0 and res is None and "RuntimeError: could not clone" in p.stderr
    assert "scripts/set_repo_url.py" in p.stdout and "pip wheel . --no-deps" in p.stdout
    assert not where.exists() and pip_calls(log) == []


def test_setup_cell_off_colab_finds_the_checkout(tmp_path):
    """Without google.colab the cell clones nothing; from notebooks/ it finds csd_lib one level up."""
    clone = tmp_path / "checkout"
    shutil.copytree(ROOT / "csd_lib", clone / "csd_lib", ignore=shutil.ignore_patterns("__pycache__"))
    (clone / "notebooks").mkdir()
    code = colab.setup_cell_source("https://github.com/x/y", where=str(tmp_path / "never")) + \
        "\nimport sys; print(sys.path[0])"
    p = subprocess.run([sys.executable, "-S", "-c", code], cwd=clone / "notebooks", capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == str(clone) and not (tmp_path / "never").exists()


# -- the rewrite ------------------------------------------------------------------------

def badges(nb_text):
    return re.findall(r"https://colab\.research\.google\.com/github/[^)\"\s]+", nb_text)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_rewrite_is_idempotent_and_touches_only_links_and_setup(path):
    orig = path.read_text(encoding="utf-8")
    a = colab.rewrite_notebook(orig, A)
    assert colab.rewrite_notebook(a, A) == a  # idempotent, byte for byte
    assert colab.rewrite_notebook(colab.rewrite_notebook(a, B), A) == a  # only URL-dependent text moves
    nb, before = json.loads(a), json.loads(orig)
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    assert "".join(code[0]["source"]) == colab.setup_cell_source(A)
    assert sum("".join(c["source"]).startswith(colab.SETUP_MARKER) for c in code) == 1
    assert all(not c["outputs"] and c["execution_count"] is None for c in code)
    assert badges(orig) and all(u.startswith(f"https://colab.research.google.com/github/alice/csd-fork/blob/main/"
                                             f"notebooks/") for u in badges(a))
    assert f"notebooks/{path.name}" in badges(a)[0]
    # every other cell is unchanged, except the old inline Colab block of the first code cell
    old = [c for c in before["cells"] if not "".join(c["source"]).startswith(colab.SETUP_MARKER)]
    new = [c for c in nb["cells"] if not "".join(c["source"]).startswith(colab.SETUP_MARKER)]
    assert len(old) == len(new)
    for o, n in zip(old, new):
        so, sn = "".join(o["source"]), "".join(n["source"])
        if o["cell_type"] == "markdown":
            assert re.sub(r"colab\.research\.google\.com/github/[^)]+", "", so) == \
                re.sub(r"colab\.research\.google\.com/github/[^)]+", "", sn)
        elif so != sn:
            assert 'if "google.colab" in sys.modules' in so and "google.colab" not in sn.replace(
                '"google.colab" in sys.modules else', "")
        assert {k: v for k, v in o.items() if k != "source"} == {k: v for k, v in n.items() if k != "source"}
    compile(colab.setup_cell_source(A), "setup-cell", "exec")
    dev = colab.rewrite_notebook(a, A, "dev")  # another branch: the badges and the clone follow it
    assert all("/blob/dev/notebooks/" in u for u in badges(dev))
    setup = next(c for c in json.loads(dev)["cells"] if c["cell_type"] == "code")
    assert "".join(setup["source"]) == colab.setup_cell_source(A, "dev")
    assert colab.rewrite_notebook(dev, A) == a


def test_rewrite_refuses_what_it_cannot_do():
    text = NOTEBOOKS[0].read_text(encoding="utf-8")
    with pytest.raises(ValueError, match="GitHub"):
        colab.rewrite_notebook(text, "https://gitlab.com/a/b")
    for bad in ("", "-x", "a..b", "a b", "x.lock", "dev/"):
        with pytest.raises(ValueError, match="not a branch name"):
            colab.rewrite_notebook(text, A, bad)
    with pytest.raises(ValueError, match="indent 1"):
        colab.rewrite_notebook(json.dumps(json.loads(text), indent=2), A)
    nb = json.loads(colab.rewrite_notebook(text, A))
    setup = next(c for c in nb["cells"] if c["cell_type"] == "code")  # the first code cell is the setup cell
    nb["cells"].insert(5, setup)
    with pytest.raises(ValueError, match="2 setup cells"):
        colab.rewrite_notebook(json.dumps(nb, indent=1, ensure_ascii=False) + "\n", A)


def test_constants_round_trip():
    text = MODULE.read_text()
    assert colab.get_constants(text) == (colab.REPO_URL, colab.BRANCH)
    changed = colab.set_constants(text, A, "feature/colab-1.x")
    assert colab.get_constants(changed) == (A, "feature/colab-1.x")
    assert colab.set_constants(changed, colab.REPO_URL, colab.BRANCH) == text
    with pytest.raises(ValueError, match="exactly one line starting with BRANCH"):
        colab.get_constants(text.replace("\nBRANCH = ", "\nBRANCH_ = "))
    assert colab.badge_url(A + ".git", "notebooks/00_start_here.ipynb", "dev") == \
        "https://colab.research.google.com/github/alice/csd-fork/blob/dev/notebooks/00_start_here.ipynb"


def test_script_on_copies(tmp_path):
    shutil.copytree(ROOT / "notebooks", tmp_path / "notebooks", ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
    module = tmp_path / "colab.py"
    shutil.copy(MODULE, module)
    args = [sys.executable, str(SCRIPT), "--notebooks", str(tmp_path / "notebooks"), "--module", str(module)]
    run = lambda *a: subprocess.run(args + list(a), capture_output=True, text=True)  # noqa: E731
    assert run(A + ".git/").returncode == 0
    assert colab.get_constants(module.read_text()) == (A, "main")
    snap = {p.name: p.read_bytes() for p in (tmp_path / "notebooks").glob("*.ipynb")}
    p = run("--check")  # the URL now in the module
    assert p.returncode == 0 and "up to date" in p.stdout
    p = run(B, "--check")
    assert p.returncode == 1 and p.stdout.count("would change") == len(snap) + 1
    assert {p.name: p.read_bytes() for p in (tmp_path / "notebooks").glob("*.ipynb")} == snap
    assert run("https://example.com/x/y").returncode == 2
    assert run("--branch", "a..b").returncode == 2 and colab.get_constants(module.read_text()) == (A, "main")

    assert run("--branch", "dev").returncode == 0  # the branch is saved with the URL ...
    assert colab.get_constants(module.read_text()) == (A, "dev")
    p = run("--check")  # ... so that --check (and the next run) uses it
    assert p.returncode == 0 and "up to date: " + A + " (branch dev)" in p.stdout
    for nb in (tmp_path / "notebooks").glob("*.ipynb"):
        text = nb.read_text()
        assert "/blob/dev/notebooks/" in text and "branch='dev'" in text and "/blob/main/" not in text
    assert run("--check", "--branch", "main").returncode == 1


def test_notebooks_follow_repo_url():
    """The committed notebooks carry REPO_URL's badges and setup cell (else run scripts/set_repo_url.py)."""
    p = subprocess.run([sys.executable, str(SCRIPT), "--check"], capture_output=True, text=True)
    assert p.returncode == 0, f"notebooks out of sync with scripts/colab.py; run python scripts/set_repo_url.py\n" \
                              f"{p.stdout}{p.stderr}"
