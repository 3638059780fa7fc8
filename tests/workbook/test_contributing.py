"""CONTRIBUTING.md stays true: the paths, modules and names it gives exist where it says, its example runs,
its layer table and its order of the price modules are the code's, and the README links it.
"""
import ast
import dataclasses
import importlib
import importlib.util
import re
from pathlib import Path

import pytest

from csd_lib.engine import methods
from csd_lib.engine.methods import Method

ROOT = Path(__file__).resolve().parents[2]
PAGE = (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")
# Paths the page writes as patterns, not as files.
TEMPLATES = {"csd_lib/x/y.py", "csd_lib/x/__init__.py", "tests/<package>/", "notebooks/NN_name.ipynb",
             "solutions/NN_name.py", "scripts/name.py", "csd_lib.x.y"}
# What the page says lives in a module: module -> names.
LIVES_IN = {
    "csd_lib.engine.methods": ["Method", "register", "unregister", "ALL", "HEADS", "DRAFTER", "CASCADE", "CSD",
                               "REFERENCE"],
    "csd_lib.engine.levels": ["Drafter", "Block", "Level", "MaGLevel"],
    "csd_lib.engine.cascade": ["build_cascade", "run_plan", "generate"],
    "csd_lib.engine.plan": ["make_plan", "Plan"],
    "csd_lib.engine.stats": ["Stats", "call_cost", "swi", "pooled_swi", "model_size_costs"],
    "csd_lib.engine.review": ["review"],
    "csd_lib.families.toy": ["random_family"],
    "csd_lib.fileio": ["check_output_path", "write_atomic"],
    "csd_lib.config": ["n_prompts", "new_tokens", "pick_device", "REPO_ROOT", "RESULTS_DIR", "DATA_ROOT"],
    "csd_lib.report.evidence": ["committed_answers"],
    "csd_lib.report.claims": ["expect", "holds"],
    "csd_lib.teach.exercises": ["check", "check_one_of"],
    "csd_lib.viz.palette": ["LEVEL_COLORS", "level_color", "series_style", "SEQUENTIAL_SCALE"],
}


def spans(text: str) -> list[str]:
    """The page's inline code spans (single backticks; fenced blocks left out)."""
    text = re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)
    return re.findall(r"(?<!`)`([^`\n]+)`(?!`)", text)


def section(title: str) -> str:
    """The text under a ``##`` or ``###`` heading, up to the next heading."""
    m = re.search(rf"^#+ {re.escape(title)}\n(.*?)(?=^#)", PAGE + "\n#", flags=re.S | re.M)
    assert m, f"CONTRIBUTING.md has no section {title!r}"
    return m.group(1)


def is_module(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except ModuleNotFoundError:  # a name under a module that is no package
        return False


def repo_paths() -> list[str]:
    return [w for s in spans(PAGE) for w in s.split() if "/" in w and re.fullmatch(r"[\w.*<>/-]+", w)]


def test_the_span_reader_skips_fences_and_double_backticks():
    assert spans("a `x/y.py` b ``` ``y`` ``` c\n```python\n`z`\n```\n") == ["x/y.py"]


def test_every_path_it_names_exists():
    paths = repo_paths()
    assert "csd_lib/engine/levels.py" in paths and ".ci/run" in paths  # the reader finds them
    missing = [p for p in paths if p not in TEMPLATES and not (list(ROOT.glob(p)) if "*" in p else (ROOT / p).exists())]
    assert not missing, f"CONTRIBUTING.md names paths that do not exist: {missing}"
    gone = {t for t in TEMPLATES if t not in paths and t not in spans(PAGE)}
    assert not gone, f"templates no longer on the page: {gone}"


def test_every_dotted_name_it_gives_resolves():
    dotted = sorted({s for s in spans(PAGE) if re.fullmatch(r"csd_lib(\.\w+)+", s)} - TEMPLATES)
    assert "csd_lib.engine.methods.register" in dotted
    bad = []
    for name in dotted:
        parts = name.split(".")
        mod = next(".".join(parts[:i]) for i in range(len(parts), 0, -1) if is_module(".".join(parts[:i])))
        obj = importlib.import_module(mod)
        for attr in parts[len(mod.split(".")):]:
            obj = getattr(obj, attr, None)
        bad += [name] if obj is None else []
    assert not bad, f"CONTRIBUTING.md names modules or objects that do not exist: {bad}"


@pytest.mark.parametrize("module", sorted(LIVES_IN))
def test_names_live_where_it_says(module):
    mod = importlib.import_module(module)
    on_page = set(spans(PAGE))
    for name in LIVES_IN[module]:
        assert any(re.search(rf"\b{name}\b", s) for s in on_page), f"{name} is not on the page: update LIVES_IN"
        assert hasattr(mod, name), f"CONTRIBUTING.md says {module} has {name}"


def test_the_method_fields_it_lists_are_methods_fields():
    text = section("A method")
    listed = spans(text[text.index("Its fields are"):text.index("`make_plan`")])
    fields = {f.name for f in dataclasses.fields(Method)}
    lower = [s for s in listed if re.fullmatch(r"[a-z_]+", s)]
    upper = [s for s in listed if re.fullmatch(r"[A-Z_]+", s)]
    assert len(lower) >= 8 and set(lower) <= fields, set(lower) - fields
    assert all(hasattr(methods, c) for c in upper)


def test_the_method_example_runs_and_leaves_the_registry_as_it_was():
    code = re.search(r"```python\n(.*?)```", section("A method"), flags=re.S).group(1)
    before = methods.names()
    try:
        exec(compile(code, "CONTRIBUTING.md", "exec"), {})
    finally:
        for name in set(methods.names()) - set(before):
            methods.unregister(name)
    assert methods.names() == before, "the example must unregister what it registers"


def _layers() -> list[str]:
    spec = importlib.util.spec_from_file_location("import_graph", ROOT / "tests" / "workbook" / "test_import_graph.py")
    tree = ast.parse(Path(spec.origin).read_text(encoding="utf-8"))
    return next(ast.literal_eval(n.value) for n in tree.body if isinstance(n, ast.Assign)
                and getattr(n.targets[0], "id", "") == "LAYERS")


def test_the_layer_table_is_the_import_graphs_order():
    rows = [line.split("|")[1].strip() for line in section("The layers").splitlines() if line.startswith("| ")]
    names = [re.sub(r"`csd_lib/(\w+)/`", r"\1", r) for r in rows[1:]]  # the header row left out
    assert names == _layers()


def test_each_price_module_imports_only_those_before_it():
    text = section("A cost model or a prediction")
    stems = {p.stem for p in (ROOT / "csd_lib" / "price").glob("*.py") if p.stem != "__init__"}
    order = list(dict.fromkeys(s for s in spans(text) if s in stems))
    assert sorted(order) == sorted(stems), f"the page's order misses price modules: {stems - set(order)}"
    for stem in order:
        src = (ROOT / "csd_lib" / "price" / f"{stem}.py").read_text(encoding="utf-8")
        own = {n.module for n in ast.walk(ast.parse(src)) if isinstance(n, ast.ImportFrom) and n.level == 1}
        later = own - set(order[:order.index(stem)])
        assert not later, f"csd_lib.price.{stem} imports {later}, which CONTRIBUTING.md lists after it"
    for stem, names in re.findall(r"`(\w+)`\s+\(([^()]*)\)", text):
        if stem in stems:
            mod = importlib.import_module(f"csd_lib.price.{stem}")
            missing = [n for n in re.findall(r"`(\w+)`", names) if not hasattr(mod, n)]
            assert not missing, f"CONTRIBUTING.md says csd_lib.price.{stem} holds {missing}"


def test_the_readme_links_it():
    assert "](CONTRIBUTING.md)" in (ROOT / "README.md").read_text(encoding="utf-8")
