"""The library stacks: no import circle, and every import goes to the same or a lower floor.

Every ``csd_lib`` module is parsed with ``ast``; imports inside functions count like the
ones at the top. A module missing from ``FLOORS`` fails the test: a new module must say
where it lives.
"""
import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1] / "csd_lib"

# Floors, bottom first. An import may go to its own floor or a lower one, never up.
FLOORS = {
    # 0: settings, logging, files, the task data
    "csd_lib.config": 0, "csd_lib.logs": 0, "csd_lib.fileio": 0, "csd_lib.tasks": 0, "csd_lib.exercises": 0,
    # 1: theory, the cost model, the plan, what a generation returns
    "csd_lib.plan": 1, "csd_lib.inputs": 1, "csd_lib.costmodel": 1, "csd_lib.ewif": 1, "csd_lib.pricing": 1,
    "csd_lib.trace": 1,
    # 2: the engine
    "csd_lib.archs": 2, "csd_lib.review": 2, "csd_lib.mag": 2, "csd_lib.models": 2, "csd_lib.cascade": 2,
    "csd_lib.analysis": 2, "csd_lib.acceptance": 2,
    # 3: families and presets
    "csd_lib.presets": 3, "csd_lib.families": 3, "csd_lib.shadow": 3,
    # 4: measurement
    "csd_lib.records": 4, "csd_lib.costs": 4, "csd_lib.tune": 4, "csd_lib.predict": 4, "csd_lib.summary": 4,
    "csd_lib.bench": 4, "csd_lib.lossless": 4, "csd_lib.claims": 4, "csd_lib.forecast": 4, "csd_lib.regimes": 4,
    # 5: figures, widgets, the CLI, notebooks' helpers
    "csd_lib.viz": 5, "csd_lib.viz.acceptance": 5, "csd_lib.viz.bench": 5, "csd_lib.viz.cascade": 5,
    "csd_lib.viz.costs": 5, "csd_lib.viz.ewif": 5, "csd_lib.viz.lossless": 5, "csd_lib.viz.mag": 5,
    "csd_lib.viz.notebook": 5, "csd_lib.viz.palette": 5, "csd_lib.viz.predict": 5, "csd_lib.viz.rounds": 5, "csd_lib.viz.trace": 5,
    "csd_lib.widgets": 5, "csd_lib.demo": 6, "csd_lib.__main__": 6, "csd_lib": 6,
    # the zoo trains the embedded families (a tool beside the library, on top)
    "csd_lib.zoo": 6, "csd_lib.zoo.presets": 6, "csd_lib.zoo.tokenizer": 6, "csd_lib.zoo.train": 6,
    "csd_lib.zoo.card": 6, "csd_lib.zoo.__main__": 6,
}

# Upward arrows that another change removes (none left).
PENDING_UP: set[tuple[str, str]] = set()


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
            for n in names:
                # "from . import config" names the module csd_lib.config; "from csd_lib.x import y" names x
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


def test_every_module_has_a_floor():
    missing = sorted(set(_modules()) - set(FLOORS))
    assert not missing, f"give these modules a floor in FLOORS: {missing}"


def test_no_import_circle():
    assert _cycles(_graph()) == []


def test_imports_never_go_up_a_floor():
    up = [(m, t) for m, ts in _graph().items() for t in sorted(ts)
          if FLOORS.get(t, 99) > FLOORS.get(m, -1) and (m, t) not in PENDING_UP]
    assert up == [], "imports that run back up: " + ", ".join(f"{m} -> {t}" for m, t in up)


def test_the_checker_sees_a_circle_and_an_upward_arrow():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == [["a", "b", "c"]]
    g = _graph()
    assert "csd_lib.plan" in g["csd_lib.cascade"] and "csd_lib.costmodel" in g["csd_lib.ewif"]


@pytest.mark.parametrize("theory", ["csd_lib.plan", "csd_lib.costmodel", "csd_lib.ewif"])
def test_theory_imports_neither_models_nor_measurement(theory):
    assert all(FLOORS[t] <= 1 for t in _graph()[theory])
