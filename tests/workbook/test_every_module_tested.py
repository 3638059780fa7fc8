"""Every module of csd_lib has tests of its own: some test file in its layer's folder imports it directly.

A module ``csd_lib.<package>.<name>`` needs a file under ``tests/<package>/``; the three settings
modules at the top level (``config``, ``logs``, ``fileio``) need one under ``tests/settings/``. A
direct import names the module: ``from csd_lib.engine.stats import swi``, ``import csd_lib.engine.stats``
or ``from csd_lib.engine import stats``. ``from csd_lib import viz`` followed by ``viz.trace_figure``
reaches ``csd_lib.viz.trace`` only through the package and does not count. Files are parsed with
``ast``; imports inside functions count too.
"""
import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
LIB, TESTS = REPO / "csd_lib", REPO / "tests"
SETTINGS = {"csd_lib.config", "csd_lib.logs", "csd_lib.fileio"}


def library_modules() -> set[str]:
    """Dotted names of csd_lib's modules, without packages' ``__init__`` and ``__main__``."""
    out = set()
    for p in LIB.rglob("*.py"):
        if p.stem in ("__init__", "__main__"):
            continue
        out.add(".".join(p.relative_to(REPO).with_suffix("").parts))
    return out


def home_folder(module: str) -> str:
    """The tests/ folder that holds a module's own tests."""
    return "settings" if module in SETTINGS else module.split(".")[1]


def direct_imports(path: Path, modules: set[str]) -> set[str]:
    """The library modules that ``path`` imports by their own name."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name in modules}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module in modules:
                out.add(node.module)
            out |= {f"{node.module}.{a.name}" for a in node.names if f"{node.module}.{a.name}" in modules}
    return out


def imported_by_folder(modules: set[str]) -> dict[str, set[str]]:
    """{tests/ folder name: library modules imported directly by some test file in it}."""
    out: dict[str, set[str]] = {}
    for p in TESTS.rglob("test_*.py"):
        folder = p.relative_to(TESTS).parts[0]
        out.setdefault(folder, set()).update(direct_imports(p, modules))
    return out


def test_direct_imports_reads_the_three_forms_and_skips_package_access(tmp_path):
    mods = {"csd_lib.engine.stats", "csd_lib.viz.trace", "csd_lib.engine.cascade", "csd_lib.config"}
    f = tmp_path / "test_x.py"
    f.write_text("from csd_lib.engine.stats import swi\n"
                 "import csd_lib.config as cfg\n"
                 "from csd_lib import viz\n"
                 "def test_y():\n"
                 "    from csd_lib.engine import cascade\n"
                 "    viz.trace_figure\n", encoding="utf-8")
    assert direct_imports(f, mods) == {"csd_lib.engine.stats", "csd_lib.config", "csd_lib.engine.cascade"}


def test_every_module_has_tests_that_import_it_directly():
    modules = library_modules()
    assert "csd_lib.engine.stats" in modules and "csd_lib.fileio" in modules  # the walk found the library
    seen = imported_by_folder(modules)
    missing = sorted(m for m in modules if m not in seen.get(home_folder(m), set()))
    assert not missing, (
        f"{len(missing)} module(s) have no test that imports them directly from their layer's folder: "
        + ", ".join(f"{m} (tests/{home_folder(m)}/)" for m in missing)
        + "; add a test file there that imports the module by name (from csd_lib.x.y import ...)")
