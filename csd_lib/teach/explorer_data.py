"""Recorded engine runs for the site's explorer: the live panel's questions answered without a kernel.

:func:`explorer_grid` runs the engine over a small grid (every K of a lattice times a few lenience
values times the two MaG rules, plus the other methods at their defaults) on a few prompts of a
family, and keeps, per setting and prompt, what the page shows: who proposed each token (the
Generation's provenance), the forward calls, the acceptance per position of every review pair
(:meth:`csd_lib.engine.stats.PairStats.conditional`) and the SWI (:meth:`csd_lib.engine.stats.Stats.swi`).
Nothing is re-derived: every number is the engine's own. Greedy runs write the target's tokens, so
a prompt's token texts are stored once and every run is checked to write them.
"""
from __future__ import annotations

import itertools
import json
from dataclasses import dataclass
from pathlib import Path

from ..engine.cascade import generate
from ..engine.methods import CSD
from ..engine.plan import METHODS
from ..families.family import load_family
from ..families.tasks import load_task
from ..viz.palette import LEVEL_ORDER, level_color, level_css
from ..viz.trace import token_label, token_texts

FORMAT = 1  # bump when the JSON's shape changes (the page checks it)


@dataclass(frozen=True)
class Grid:
    """The settings to record: K entries per lattice axis, lenience values, prompts and tokens."""
    k11: tuple[int, ...] = (2, 4, 6)
    k12: tuple[int, ...] = (0, 5)
    k22: tuple[int, ...] = (1,)
    lenience: tuple[float, ...] = (1.0, 3.0, 5.0)
    mag_rules: tuple[bool, ...] = (False, True)  # lenience applies to MaG's tokens too
    n_prompts: int = 5
    max_new_tokens: int = 32
    methods: tuple[str, ...] = METHODS  # csd runs the grid; every other method runs once at its defaults

    def ks(self, default_k: list[list[int]]) -> list[list[list[int]]]:
        """Every K of the lattice: the family's default K with K[0][0], K[0][1], K[1][1] replaced."""
        out = []
        for a, b, c in itertools.product(self.k11, self.k12, self.k22):
            k = [list(row) for row in default_k]
            k[0][0], k[0][1], k[1][1] = a, b, c
            out.append(k)
        return out


SMALL_GRID = Grid(k11=(2, 4), k12=(5,), k22=(1,), lenience=(1.0, 5.0), mag_rules=(False,), n_prompts=1,
                  max_new_tokens=24, methods=("sd", "csd"))  # for tests


def setting_key(method: str, k=None, lenience=None, mag_lenience=None) -> str:
    """The JSON key of one setting: ``csd|4,5,1|l5|mag-strict`` (K[0][0], K[0][1], K[1][1]) or ``sd``;
    at ``l = 1`` both MaG rules are the strict run's key."""
    if method != CSD.name:
        return method
    rule = "mag-lenient" if mag_lenience and lenience != 1.0 else "mag-strict"
    return f"{CSD.name}|{k[0][0]},{k[0][1]},{k[1][1]}|l{lenience:g}|{rule}"


def run_record(g, levels: list[str]) -> dict:
    """What the page shows of one Generation, every number taken from its Stats."""
    st = g.stats
    return {"prov": "".join(str(levels.index(p)) for p in g.provenance),
            "calls": dict(st.calls),
            "target_calls": st.calls.get(st.target, 0),
            "tokens_per_target_call": round(st.tokens_per_target_call, 4),
            "swi_model_size": round(st.swi_model_size, 4),
            "swi_previous_work": round(st.swi_previous_work, 4),
            "acceptance": {pair: [round(r, 4) if r == r else None for r in ps.conditional()]
                           for pair, ps in st.acceptance.items()},
            "reached": {pair: list(ps.reached) for pair, ps in st.acceptance.items()}}


def _settings(fam, grid: Grid):
    """(key, generate kwargs) for every recorded setting: the other methods first, then the csd grid."""
    for m in grid.methods:
        if m != CSD.name:
            yield setting_key(m), {"method": m}
    if CSD.name not in grid.methods:
        return
    for k, lenience, rule in itertools.product(grid.ks(fam.default_k), grid.lenience, grid.mag_rules):
        if rule and lenience == 1.0:
            continue  # l = 1 on MaG's tokens is the strict rule: the page reads the strict run
        yield setting_key(CSD.name, k, lenience, rule), dict(method=CSD.name, k=k, lenience=lenience, mag_lenience=rule)


def explorer_grid(family: str = "tiny-t5", grid: Grid = Grid(), seed: int = 0, progress=None) -> dict:
    """Record the grid on ``grid.n_prompts`` test prompts of ``family``'s task (greedy).

    Returns a JSON-ready dict: ``prompts`` (text and token texts), ``levels`` (with palette colours),
    ``settings`` ({key: [record per prompt]}) and ``axes`` (the grid). ``progress(i, n)`` is called
    after each setting. Raises RuntimeError when a run does not write the target's greedy tokens.
    """
    fam = load_family(family)
    examples = load_task(fam.task, "test", n=grid.n_prompts, seed=seed)
    settings, prompts, levels, ref = {}, [], list(LEVEL_ORDER), {}
    todo = list(_settings(fam, grid))
    for i, (key, kw) in enumerate(todo):
        rows = []
        for j, ex in enumerate(examples):
            g = generate(fam, ex.prompt, max_new_tokens=grid.max_new_tokens, **kw)
            ref.setdefault(j, g.token_ids)
            if g.token_ids != ref[j]:
                raise RuntimeError(f"{key} on prompt {j} did not write the target's greedy tokens")
            levels += [p for p in g.provenance if p not in levels]
            rows.append(run_record(g, levels))
        settings[key] = rows
        if progress:
            progress(i + 1, len(todo))
    for j, ex in enumerate(examples):
        pieces = token_texts(fam.tokenizer, ref[j])
        prompts.append({"prompt": ex.prompt,
                        "tokens": [p if p else token_label(fam.tokenizer, t, p) for t, p in zip(ref[j], pieces)]})
    return {"format": FORMAT, "family": fam.name, "task": fam.task, "seed": seed,
            "max_new_tokens": grid.max_new_tokens, "default_k": fam.default_k,
            "default_lenience": fam.default_lenience,
            "axes": {"k11": list(grid.k11), "k12": list(grid.k12), "k22": list(grid.k22),
                     "lenience": list(grid.lenience), "mag_rules": list(grid.mag_rules),
                     "methods": list(grid.methods)},
            "levels": [{"name": lv, "color": level_color(lv), "css": level_css(lv)} for lv in levels],
            "prompts": prompts, "settings": settings}


def write_explorer_data(path, data: dict) -> int:
    """Write ``data`` as compact JSON (``.json``) or as a script that sets ``window.CSD_EXPLORER``
    (``.js``: a page opened from the file system cannot fetch a JSON file); the bytes written."""
    path = Path(path)
    text = json.dumps(data, separators=(",", ":"), allow_nan=False)
    if path.suffix == ".js":
        text = f"window.CSD_EXPLORER = {text};\n"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return len(text.encode("utf-8"))
