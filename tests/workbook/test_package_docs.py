"""Every package's docstring names each of its modules and subpackages.

A package's ``__init__`` docstring is its table of contents: a module it does not name is a
module a reader cannot find. The modules are read from the folders as they are now, so a module
added, moved or renamed fails here until its package's docstring says where it is. A module counts
as named when the docstring holds its dotted path (``csd_lib.engine.tree``, as in
``:mod:`~csd_lib.engine.tree```) or its bare name in double backticks (````tree````).
"""
import ast
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
LIB = REPO / "csd_lib"
PACKAGES = sorted(p.parent for p in LIB.rglob("__init__.py"))


def members(package: Path) -> list[str]:
    """The modules and subpackages of ``package``, dunder files (``__init__``, ``__main__``) left out."""
    mods = [p.stem for p in package.glob("*.py") if not p.stem.startswith("__")]
    subs = [p.parent.name for p in package.glob("*/__init__.py")]
    return sorted(mods + subs)


def unnamed(package: Path) -> list[str]:
    """The members of ``package`` that its docstring does not name."""
    doc = ast.get_docstring(ast.parse((package / "__init__.py").read_text(encoding="utf-8"))) or ""
    dotted = ".".join(package.relative_to(REPO).parts)
    return [m for m in members(package)
            if not re.search(rf"\b{re.escape(dotted)}\.{m}\b", doc) and f"``{m}``" not in doc]


def test_the_check_sees_a_missing_module(tmp_path):
    pkg = tmp_path / "csd_lib_like"
    pkg.mkdir()
    (pkg / "__init__.py").write_text('"""``alpha`` does one thing."""\n')
    (pkg / "alpha.py").write_text("")
    (pkg / "beta.py").write_text("")
    (pkg / "__main__.py").write_text("")
    assert members(pkg) == ["alpha", "beta"]
    doc = ast.get_docstring(ast.parse((pkg / "__init__.py").read_text()))
    assert [m for m in members(pkg) if f"``{m}``" not in doc] == ["beta"]


@pytest.mark.parametrize("package", PACKAGES, ids=lambda p: ".".join(p.relative_to(REPO).parts))
def test_every_module_is_named_in_its_package_docstring(package):
    missing = unnamed(package)
    assert not missing, (f"{package.relative_to(REPO)}/__init__.py's docstring does not name "
                         f"{', '.join(missing)}: say in a few words what each holds")


def test_viz_re_exports_every_figure_and_view():
    """``csd_lib.viz``'s docstring says every figure and view is re-exported: each public ``*_figure`` and
    ``*_html`` function of its modules is in ``csd_lib.viz.__all__``."""
    import csd_lib.viz as viz
    found = [f"{p.stem}.{n.name}" for p in sorted((LIB / "viz").glob("*.py"))
             for n in ast.parse(p.read_text(encoding="utf-8")).body
             if isinstance(n, ast.FunctionDef) and not n.name.startswith("_") and n.name.endswith(("_figure", "_html"))]
    assert found, "no figure found: the check reads the wrong folder"
    missing = [f for f in found if f.split(".")[1] not in viz.__all__]
    assert not missing, f"csd_lib/viz/__init__.py does not re-export {', '.join(missing)}"
