"""The library stacks: its packages are its layers, with no import circle and no import up a layer.

Every ``csd_lib`` module is parsed with ``ast``; imports inside functions count like the ones at the
top. A module's layer is read from its package (``csd_lib.price.tune`` is in ``price``); the three
settings modules at the top level (``config``, ``logs``, ``fileio``) are the bottom layer. A new
package must say where it stands in ``LAYERS``.
"""
import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2] / "csd_lib"

# Bottom first. A module may import its own layer or a lower one, never a higher one.
LAYERS = ["settings", "engine", "families", "measure", "price", "report", "viz", "teach", "cli", "zoo", "top"]
SETTINGS = {"csd_lib.config", "csd_lib.logs", "csd_lib.fileio"}
TOP = {"csd_lib", "csd_lib.__main__"}   # the public API and the entry point


def layer(module: str) -> str:
    if module in SETTINGS:
        return "settings"
    if module in TOP:
        return "top"
    return module.split(".")[1]


def _modules() -> dict[str, Path]:
    out = {}
    for p in ROOT.rglob("*.py"):
        parts = p.relative_to(ROOT.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = p
    return out


def _graph() -> dict[str, set[str]]:
    mods = _modules()
    graph = {m: set() for m in mods}
    for m, p in mods.items():
        pkg = m if p.name == "__init__.py" else m.rsplit(".", 1)[0]
        for node in ast.walk(ast.parse(p.read_text(encoding="utf-8"))):
            names = []
            if isinstance(node, ast.ImportFrom):
                base = pkg
                for _ in range(max(node.level - 1, 0)):
                    base = base.rsplit(".", 1)[0]
                mod = (base + "." + node.module if node.module else base) if node.level else (node.module or "")
                names = [mod] + [mod + "." + a.name for a in node.names]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.Constant) and m == "csd_lib" and isinstance(node.value, str) \
                    and f"csd_lib.{node.value.partition(':')[0]}" in mods:  # the public API's lazy table
                names = [f"csd_lib.{node.value.partition(':')[0]}"]  # "engine.cascade", or "module:name" for an alias
            for n in names:
                # a package's own __init__ is not an import of its layer's parent
                target = n if n in mods else None
                if target and target != m and not (target == "csd_lib" and m.startswith("csd_lib.")):
                    graph[m].add(target)
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index, low, stack, on, out, i = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = i[0]
        i[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in graph:
        if v not in index:
            visit(v)
    return out


def test_every_module_is_in_a_layer():
    unknown = sorted(m for m in _modules() if layer(m) not in LAYERS)
    assert not unknown, f"these modules' packages have no place in LAYERS: {unknown}"


def test_the_top_level_holds_only_settings_and_the_entry_points():
    top = sorted(p.name for p in ROOT.glob("*.py"))
    assert top == ["__init__.py", "__main__.py", "config.py", "fileio.py", "logs.py"]


def test_no_import_circle():
    assert _cycles(_graph()) == []


def test_imports_never_go_up_a_layer():
    rank = {name: i for i, name in enumerate(LAYERS)}
    up = [(m, t) for m, ts in _graph().items() for t in sorted(ts) if rank[layer(t)] > rank[layer(m)]]
    assert up == [], "imports that run back up: " + ", ".join(f"{m} -> {t}" for m, t in up)


def test_the_checker_sees_a_circle_and_an_upward_arrow():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == [["a", "b", "c"]]
    g = _graph()
    assert "csd_lib.engine.plan" in g["csd_lib.engine.cascade"] and "csd_lib.price.costmodel" in g["csd_lib.price.ewif"]
    assert "csd_lib.engine.cascade" in g["csd_lib"]  # the public API's lazy names count as imports
    assert layer("csd_lib.viz.trace") == "viz" and layer("csd_lib.fileio") == "settings"


@pytest.mark.parametrize("theory", ["csd_lib.engine.methods", "csd_lib.engine.plan", "csd_lib.engine.policy",
                                    "csd_lib.price.costmodel", "csd_lib.price.ewif"])
def test_theory_imports_neither_models_nor_measurement(theory):
    """The plan and the theory are pure: they import only the plan, the method registry, the draft-length
    policies (whose EWIF formula the theory shares) and the settings."""
    assert _graph()[theory] <= {"csd_lib.engine.plan", "csd_lib.engine.methods", "csd_lib.engine.policy",
                                "csd_lib.price.costmodel", *SETTINGS}


def test_no_private_name_is_imported_across_modules():
    found = []
    for m, p in _modules().items():
        for node in ast.walk(ast.parse(p.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.level or (node.module or "").startswith("csd_lib")):
                found += [f"{m}: {a.name}" for a in node.names if a.name.startswith("_") and a.name != "__future__"
                          and node.module != "__future__"]
    assert found == [], "private names imported from another module: " + ", ".join(found)
