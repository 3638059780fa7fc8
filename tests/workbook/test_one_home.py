"""One home per concept: SWI is computed in csd_lib/engine/stats.py only, and notebooks define little.

The SWI rule, checked with ``ast`` on every module of ``csd_lib`` and ``scripts/`` and every notebook's
code cells (IPython magics and shell lines dropped):

1. *pricing calls*: a generator or comprehension that multiplies while it walks ``<...calls...>.items()``
   (``sum(n * costs.get(m, 0.0) for m, n in stats.calls.items())``) is SWI's cost sum; only
   ``engine/stats.py`` (``call_cost``) may hold one;
2. *swi functions*: a function whose name contains ``swi`` divides nowhere outside ``engine/stats.py``
   (elsewhere it calls ``swi``, ``pooled_swi``, ``runs_swi`` or a library function built on them);
3. no notebook defines a function whose name contains ``swi``, and a notebook whose code names SWI
   calls the library for it (a name in ``LIBRARY_SWI``).

The notebooks' own functions: at most ``MAX_NOTEBOOK_DEFS`` ``def`` statements in all notebooks together,
besides the ``_setup`` cell (a notebook defines only what its lesson builds by hand).
"""
import ast
import json
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
HOME = REPO / "csd_lib" / "engine" / "stats.py"
MAX_NOTEBOOK_DEFS = 6
# what the library gives a notebook for SWI: functions, and the Stats and summary fields that hold it
LIBRARY_SWI = {"swi", "pooled_swi", "runs_swi", "call_cost", "swi_counts", "swi_difference", "relative_gain",
               "gain_difference", "swi_model_size", "swi_previous_work", "speedup_swi_ms", "speedup_swi_pw", "summarize",
               "answers_of", "committed_answers"}  # the last two: SWI answers report.evidence computed from the runs


def _code(src: str) -> str:
    """A notebook cell's source as Python: magics and shell escapes become blank lines."""
    return "\n".join("" if line.lstrip().startswith(("%", "!")) else line for line in src.splitlines())


def notebook_cells() -> list[tuple[str, int, ast.Module]]:
    out = []
    for path in sorted((REPO / "notebooks").glob("*.ipynb")):
        for i, cell in enumerate(json.loads(path.read_text(encoding="utf-8"))["cells"]):
            if cell["cell_type"] == "code":
                src = "".join(cell["source"])
                out.append((f"{path.name} cell {i}", i, ast.parse(_code(src))))
    return out


def python_files() -> list[tuple[str, ast.Module]]:
    files = sorted((REPO / "csd_lib").rglob("*.py")) + sorted((REPO / "scripts").glob("*.py"))
    return [(str(p.relative_to(REPO)), ast.parse(p.read_text(encoding="utf-8"))) for p in files if p != HOME]


def prices_calls(tree: ast.AST) -> list[int]:
    """Lines of comprehensions that multiply while iterating ``<...calls...>.items()`` (rule 1)."""
    hits = []
    for node in ast.walk(tree):
        if not isinstance(node, (ast.GeneratorExp, ast.ListComp, ast.SetComp, ast.DictComp)):
            continue
        walks_calls = any(isinstance(g.iter, ast.Call) and isinstance(g.iter.func, ast.Attribute)
                          and g.iter.func.attr == "items" and "calls" in ast.unparse(g.iter.func.value)
                          for g in node.generators)
        elts = [node.key, node.value] if isinstance(node, ast.DictComp) else [node.elt]
        multiplies = any(isinstance(n, ast.BinOp) and isinstance(n.op, ast.Mult) for e in elts for n in ast.walk(e))
        if walks_calls and multiplies:
            hits.append(node.lineno)
    return hits


def swi_functions_that_divide(tree: ast.AST) -> list[str]:
    """Functions named ``*swi*`` with a division in their body (rule 2)."""
    return [f.name for f in ast.walk(tree) if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))
            and "swi" in f.name.lower()
            and any(isinstance(n, ast.BinOp) and isinstance(n.op, (ast.Div, ast.FloorDiv)) for n in ast.walk(f))]


def test_the_rule_finds_an_swi_computed_by_hand():
    by_hand = ast.parse("def swi(st, costs):\n"
                        "    return st.n_tokens / sum(n * costs.get(m, 0.0) for m, n in st.calls.items())\n")
    assert prices_calls(by_hand) == [2] and swi_functions_that_divide(by_hand) == ["swi"]
    calling = ast.parse("from csd_lib.engine.stats import swi\ndef pooled_swi_of(g, c):\n"
                        "    return swi(g.n_tokens, g.calls, c)\n")
    assert prices_calls(calling) == [] and swi_functions_that_divide(calling) == []
    assert prices_calls(ast.parse(HOME.read_text(encoding="utf-8")))  # the home itself holds the cost sum


def test_swi_is_computed_only_in_engine_stats():
    found = [f"{name}:{line}" for name, tree in python_files() for line in prices_calls(tree)]
    found += [f"{name}: def {fn}" for name, tree in python_files() for fn in swi_functions_that_divide(tree)]
    assert not found, "SWI computed outside csd_lib/engine/stats.py (call swi / pooled_swi / call_cost): " \
                      + ", ".join(found)


def test_notebooks_call_the_librarys_swi():
    found, silent = [], []
    by_notebook: dict[str, list[ast.Module]] = {}
    for where, _, tree in notebook_cells():
        found += [f"{where}:{line}" for line in prices_calls(tree)]
        found += [f"{where}: def {name}" for name in defined(tree) if "swi" in name.lower()]
        by_notebook.setdefault(where.split(" cell ")[0], []).append(tree)
    for nb, trees in by_notebook.items():
        names = {n.id if isinstance(n, ast.Name) else n.attr if isinstance(n, ast.Attribute) else
                 n.value if isinstance(n, ast.Constant) and isinstance(n.value, str) else None
                 for t in trees for n in ast.walk(t)}
        says_swi = any(re.search(r"\bswi", ast.unparse(t), re.I) for t in trees)
        if says_swi and not names & LIBRARY_SWI:
            silent.append(nb)
    assert not found, "notebooks compute SWI by hand (use csd_lib.engine.stats / report.regimes): " + ", ".join(found)
    assert not silent, f"notebooks that name SWI without the library's: {silent}"


def defined(tree: ast.AST) -> list[str]:
    """Names of every ``def`` (nested ones too) in a cell."""
    return [f.name for f in ast.walk(tree) if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))]


def _is_setup(tree: ast.Module) -> bool:
    return "_setup" in defined(tree)


def test_notebooks_define_at_most_six_functions_besides_setup():
    defs = [f"{where}: {name}" for where, _, tree in notebook_cells() if not _is_setup(tree)
            for name in defined(tree)]
    assert len(defs) <= MAX_NOTEBOOK_DEFS, \
        f"{len(defs)} functions defined in notebooks (at most {MAX_NOTEBOOK_DEFS}): " + ", ".join(defs)


@pytest.mark.parametrize("src, n", [("def a():\n    def b(): pass\n", 2), ("f = lambda x: x\n", 0),
                                    ("%matplotlib inline\nasync def c(): pass\n", 1)])
def test_the_count_counts_every_def(src, n):
    assert len(defined(ast.parse(_code(src)))) == n
