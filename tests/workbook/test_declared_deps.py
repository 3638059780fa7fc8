"""Everything the library and the notebooks import is declared and pinned; requirements.txt pins every package;
requires-python matches the code; the cache folder follows XDG."""
from __future__ import annotations

import ast
import importlib.metadata
import json
import re
import sys
import tomllib
from pathlib import Path

from csd_lib import config

ROOT = Path(__file__).resolve().parents[2]
# Provided by the runtime, never installed by us: google.colab exists only on Colab (setup cell).
RUNTIME_ONLY = {"google"}


def _imports(source: str) -> set[str]:
    out = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            out |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            out.add(node.module.split(".")[0])
    return out


def imported_modules() -> set[str]:
    mods = set()
    for f in (ROOT / "csd_lib").rglob("*.py"):
        mods |= _imports(f.read_text(encoding="utf-8"))
    for nb in (ROOT / "notebooks").glob("*.ipynb"):
        for cell in json.loads(nb.read_text(encoding="utf-8"))["cells"]:
            if cell["cell_type"] == "code":
                src = "".join(cell["source"])
                mods |= _imports("\n".join(ln for ln in src.splitlines() if not ln.lstrip().startswith(("%", "!"))))
    return {m for m in mods if m not in sys.stdlib_module_names and m != "csd_lib" and m not in RUNTIME_ONLY}


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _names(specs) -> set[str]:
    return {_norm(re.split(r"[<>=!~\[; ]", s.strip(), maxsplit=1)[0]) for s in specs if s.strip()}


def declared() -> tuple[set[str], set[str]]:
    """(names in pyproject's dependencies and extras, names in requirements.txt)."""
    proj = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    specs = list(proj["dependencies"]) + [s for v in proj.get("optional-dependencies", {}).values() for s in v]
    req = [ln.split("#")[0] for ln in (ROOT / "requirements.txt").read_text(encoding="utf-8").splitlines()]
    return _names(specs), _names(req)


def test_every_import_is_declared_and_pinned():
    dists = importlib.metadata.packages_distributions()
    needed = {_norm(dists.get(m, [m])[0]) for m in imported_modules()}
    assert {"torch", "transformers", "huggingface-hub", "pandas"} <= needed  # the scan sees real imports
    in_pyproject, in_requirements = declared()
    assert needed - in_pyproject == set(), "imported but not declared in pyproject.toml"
    assert needed - in_requirements == set(), "imported but not listed in requirements.txt"


def test_requirements_pin_every_package():
    """requirements.txt is the lock for the README commands and CI: one exact version per package."""
    lines = [ln.split("#")[0].strip() for ln in (ROOT / "requirements.txt").read_text(encoding="utf-8").splitlines()]
    floating = [ln for ln in lines if ln and not re.fullmatch(r"[A-Za-z0-9][\w.-]*==[\w.+!]+", ln)]
    assert floating == [], "pin these as NAME==VERSION"


def test_requires_python_matches_the_code():
    """The oldest Python that pyproject.toml claims parses every file and has every module the tests import."""
    spec = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["requires-python"]
    m = re.fullmatch(r">=\s*3\.(\d+)", spec)
    assert m, f"requires-python {spec!r}: write it as >=3.N"
    oldest = (3, int(m[1]))
    files = [f for d in ("csd_lib", "scripts", "tests", "solutions") for f in (ROOT / d).rglob("*.py")]
    for f in files:
        ast.parse(f.read_text(encoding="utf-8"), filename=str(f), feature_version=oldest)
    if any("tomllib" in _imports(f.read_text(encoding="utf-8")) for f in files):
        assert oldest >= (3, 11), "tomllib is new in Python 3.11"
    env = re.search(r"^\s*-\s*python=3\.(\d+)\s*$", (ROOT / "environment.yml").read_text(encoding="utf-8"), re.M)
    assert env and (3, int(env[1])) == oldest, "environment.yml's python= should be the oldest supported"
    assert sys.version_info[:2] >= oldest


def test_cache_dir_follows_csd_cache_dir_then_xdg_then_home(monkeypatch, tmp_path):
    monkeypatch.setattr(config, "CACHE_DIR", str(tmp_path / "mine"))
    monkeypatch.setattr(config, "XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert config.cache_dir() == tmp_path / "mine"
    monkeypatch.setattr(config, "CACHE_DIR", None)
    assert config.cache_dir() == tmp_path / "xdg" / "csd-workbook"
    monkeypatch.setattr(config, "XDG_CACHE_HOME", None)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert config.cache_dir() == tmp_path / "home" / ".cache" / "csd-workbook"
