"""Small functions: no function in csd_lib is over MAX_LINES lines unless a ``# long:`` comment says why.

A function's length is its ``def`` line to its last line (decorators, docstring and nested functions
included), read with ``ast``. The reason goes on the ``def`` line or in a comment line right above it
(above the decorators, if any): ``# long: the CLI's argument table, one entry per option``.
"""
import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
MAX_LINES = 60


def long_functions(src: str) -> list[tuple[str, int, bool]]:
    """(name, lines, has a ``# long:`` reason) of every function over MAX_LINES lines in ``src``."""
    lines = src.splitlines()
    out = []
    for node in ast.walk(ast.parse(src)):
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        length = node.end_lineno - node.lineno + 1
        if length <= MAX_LINES:
            continue
        top = min([node.lineno, *(d.lineno for d in node.decorator_list)])
        near = [lines[node.lineno - 1], lines[top - 2] if top >= 2 else ""]
        out.append((node.name, length, any("# long:" in line for line in near)))
    return out


def test_the_check_reads_lengths_and_reasons():
    body = "\n".join(f"    x{i} = {i}" for i in range(MAX_LINES))
    assert long_functions(f"def f():\n{body}\n") == [("f", MAX_LINES + 1, False)]
    assert long_functions(f"# long: a table\n@staticmethod\ndef f():\n{body}\n") == [("f", MAX_LINES + 1, True)]
    assert long_functions(f"def f():  # long: a layout\n{body}\n")[0][2]
    assert long_functions("def f():\n" + "\n".join(body.splitlines()[1:]) + "\n") == []  # exactly MAX_LINES


def test_no_function_in_csd_lib_is_long_without_a_reason():
    found = [f"{p.relative_to(REPO)}:{name} ({n} lines)" for p in sorted((REPO / "csd_lib").rglob("*.py"))
             for name, n, why in long_functions(p.read_text(encoding="utf-8")) if not why]
    assert not found, f"functions over {MAX_LINES} lines without a '# long:' reason: " + ", ".join(found)
