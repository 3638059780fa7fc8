"""No method name is compared as a string outside the method registry (csd_lib/engine/methods.py).

Every module of ``csd_lib``, every ``scripts/*.py`` and ``solutions/*.py``, and every code cell of
``notebooks/*.ipynb`` (IPython magics and shell lines dropped; a cell that still does not parse is skipped) is
parsed with ``ast``. A comparison (``==``, ``!=``,
``in``, ``not in``, ``<=``, ...) with a string literal that names a registered method, also inside a tuple, list
or set literal, and a ``match`` case on one, fail: code asks the registry for a trait
(``get(plan.method).lenient``), or names one method through its object (``CSD.name``) or ``REFERENCE``.
MaG's drafter name is ``csd_lib.engine.plan.MAG``, which keeps drafter comparisons off the method ``mag``.
"""
import ast
import json
from pathlib import Path

from csd_lib.engine import methods

ROOT = Path(__file__).resolve().parents[2]
REGISTRY = "csd_lib/engine/methods.py"


def _strings(node):
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        yield node.value
    elif isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        for e in node.elts:
            yield from _strings(e)


def compared_names(source: str, names) -> list[tuple[int, str]]:
    """(line, name) of every method name compared as a string literal in ``source``."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Compare):
            found = [s for side in (node.left, *node.comparators) for s in _strings(side)]
        elif isinstance(node, ast.match_case):
            found = [s for p in ast.walk(node.pattern) if isinstance(p, ast.MatchValue) for s in _strings(p.value)]
        else:
            continue
        out += [(node.lineno if hasattr(node, "lineno") else node.pattern.lineno, s) for s in found if s in names]
    return out


def _files() -> list[Path]:
    files = sorted((ROOT / "csd_lib").rglob("*.py")) + sorted((ROOT / "scripts").glob("*.py"))
    return [f for f in files if f.relative_to(ROOT).as_posix() != REGISTRY]


def _code(src: str) -> str:
    """A notebook cell's source as Python: magics and shell escapes become blank lines."""
    return "\n".join("" if line.lstrip().startswith(("%", "!")) else line for line in src.splitlines())


def _sources() -> list[tuple[str, str]]:
    """(where, Python source) of every file and notebook code cell the rule covers."""
    files = _files() + sorted((ROOT / "solutions").glob("*.py"))
    out = [(f.relative_to(ROOT).as_posix(), f.read_text(encoding="utf-8")) for f in files]
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        for i, cell in enumerate(json.loads(path.read_text(encoding="utf-8"))["cells"]):
            if cell["cell_type"] != "code":
                continue
            src = _code("".join(cell["source"]))
            try:
                ast.parse(src)
            except SyntaxError:
                continue
            out.append((f"notebooks/{path.name} cell {i}", src))
    return out


def test_no_method_name_is_compared_as_a_string():
    names = set(methods.names())
    bad = [f"{where}:{line}: {name!r}" for where, src in _sources() for line, name in compared_names(src, names)]
    assert bad == [], "ask the method registry (csd_lib/engine/methods.py) instead: " + ", ".join(bad)


def test_the_checker_sees_every_form():
    names = {"csd", "ar"}
    src = """
if m == "csd": pass
if m in ("ar", "x"): pass
if {"csd"} <= s: pass
if "ar" not in ms: pass
match m:
    case "csd": pass
    case "other": pass
if m == CSD.name or m == "csd2" or m == REFERENCE: pass
d = {"csd": 1}
f(method="ar")
"""
    assert compared_names(src, names) == [(2, "csd"), (3, "ar"), (4, "csd"), (5, "ar"), (7, "csd")]


def test_notebooks_and_solutions_are_covered():
    where = {w.split(" cell ")[0] for w, _ in _sources()}
    assert {f"notebooks/{p.name}" for p in (ROOT / "notebooks").glob("*.ipynb")} <= where
    assert {f"solutions/{p.name}" for p in (ROOT / "solutions").glob("*.py")} <= where
    assert _code("%time x = 1\n!ls\ny = 2") == "\n\ny = 2"


def test_the_registry_is_the_only_file_left_out():
    left = {f.relative_to(ROOT).as_posix() for f in (ROOT / "csd_lib").rglob("*.py")} - \
        {f.relative_to(ROOT).as_posix() for f in _files()}
    assert left == {REGISTRY}
