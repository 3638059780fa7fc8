"""What CSD will do on a device before any download: ``python -m csd_lib predict``.

The family's models are built from their stored configs with random weights on the device
(the shadow builder: real width and vocabulary; on a CPU, or where memory is short, the depth
cut to ``max_layers`` and each call's measured cost scaled up to the full depth by the ratio of
matrix-multiply parameters), each model's call cost t(n, L) is measured
(:func:`csd_lib.price.timing.measure_costs`), and AR, SD at every k, the vertical cascade (largest
drafter + MaG) at every k and CSD over the tuner's K grid are priced with
:func:`csd_lib.price.pricing.price_plan` (the bench's own price) on an acceptance profile: the
paper's (docs/REFERENCE.md "Acceptance profile for predict"), a bench results file of your
own runs, or explicit rates.
"""
from __future__ import annotations

import sys
import warnings
from pathlib import Path

import numpy as np
from tqdm.auto import tqdm

from .. import config
from ..engine.mag import MaG
from ..engine.models import LM
from ..engine.plan import MAG_BLOCK, Plan, vertical_k
from ..families import placement
from ..families.archs import published_config
from ..families.family import Family, custom_name, default_k, load_family, roles
from ..families.hub import checkpoint_config, count_params, model_arch
from ..families.presets import DEFAULT_LENIENCE, REAL_PRESETS, TINY_PRESETS
from ..families.shadow import LAYER_KEYS, shadow_model
from ..measure.acceptance import acceptance_table, complete_table
from ..measure.machine import device_name, environment, fingerprint, match_fingerprints
from ..measure.records import as_records, fastest, other_run, read_records
from .costfile import cost_fingerprint, read_cost_file
from .costmodel import CallFit, CostModel
from .estimate import ASSUMED_MAG, PAPER_AT_30, paper_row
from .predict import run_table
from .pricing import price_plan
from .timing import measure_costs, reference_of, step_costs
from .tune import candidate_grid

# docs/REFERENCE.md, "Acceptance profile for predict": paper Fig. 2 (FLAN-T5 drafters for
# FLAN-T5-XXL), the share of drafts accepted at position 1 (0.7-0.8) falling to 0.1 by 30.
PAPER_FIRST = {"base": 0.8, "small": 0.7}
SD_KS = tuple(range(1, 25))
VERTICAL_KS = tuple(range(1, 17))
CPU_MAX_LAYERS = 2       # the depth measured on a CPU unless --max-layers says otherwise
MC_MAX_STEPS = 32        # top-level steps simulated per generation at most (low acceptance: 1 token a step)


# -- acceptance profiles -----------------------------------------------------------------------

def paper_table(levels: list[str], t5: bool = True) -> tuple[dict, list[str]]:
    """The paper's profile for a T5 family (``t5``) with drafters ``base``, ``small`` (or one) and MaG."""
    neural = [lv for lv in levels[1:] if lv != "mag"]
    if not t5 or not neural or any(d not in PAPER_FIRST for d in neural):
        raise ValueError(f"--acceptance paper: the paper publishes per-position acceptance only for FLAN-T5 "
                         f"base/small drafting for FLAN-T5-XXL (Fig. 2); this family's drafters are {neural}, "
                         f"and no published figure covers them (Vicuna-68m -> Vicuna-7B included); pass "
                         f"your own rates, e.g. --acceptance {','.join(['0.6'] * len(neural) + ['0.3'])} "
                         f"(one rate per drafter, MaG last), or a bench results file")
    table = {}
    for i, reviewer in enumerate(levels):
        for proposer in levels[i + 1:]:
            table[(reviewer, proposer)] = [ASSUMED_MAG] if proposer == "mag" else paper_row(PAPER_FIRST[proposer])
    notes = [f"acceptance: paper Fig. 2 (FLAN-T5, GSM8K/MMLU): position 1 at "
             f"{', '.join(f'{d} {PAPER_FIRST[d]}' for d in neural)}, falling to {PAPER_AT_30} by position 30",
             f"assumed (not published): each drafter keeps that profile under every reviewer (draft-to-draft "
             f"included) and MaG's tokens are accepted at {ASSUMED_MAG} per position"]
    return table, notes


def _rate(text: str, where: str) -> list[float]:
    try:
        vals = [float(v) for v in text.split(":")]
    except ValueError:
        raise ValueError(f"--acceptance: {where} has {text!r}, not a rate (a number in [0, 1], or "
                         f"per-position rates joined by ':', e.g. 0.8:0.7:0.6)") from None
    if not vals or any(not (0.0 <= v <= 1.0) for v in vals):
        raise ValueError(f"--acceptance: {where} has {text!r}; every rate must lie in [0, 1]")
    return vals


def parse_rates(text: str, levels: list[str]) -> dict:
    """``REVIEWER<-PROPOSER=RATE,...`` or one rate per drafter (MaG last), each rate a number or
    per-position rates joined by ':'; pairs not given are filled (:func:`csd_lib.measure.acceptance.complete_table`)."""
    items = [t.strip() for t in text.split(",") if t.strip()]
    example = ",".join(f"{levels[0]}<-{d}=0.7" for d in levels[1:])
    if not items:
        raise ValueError(f"--acceptance is empty; give 'paper', a bench results file or rates, e.g. {example}")
    table = {}
    if all("=" not in t for t in items):
        if len(items) != len(levels) - 1:
            raise ValueError(f"--acceptance: {len(items)} rates for {len(levels) - 1} drafters "
                             f"({', '.join(levels[1:])}); give one per drafter, largest first and MaG last, "
                             f"or pairs like {example}")
        for j, (proposer, t) in enumerate(zip(levels[1:], items), 1):
            row = _rate(t, proposer)
            for reviewer in levels[:j]:
                table[(reviewer, proposer)] = row
        return table
    for t in items:
        pair, _, val = t.partition("=")
        reviewer, sep, proposer = (s.strip() for s in pair.partition("<-"))
        if not sep or not val or reviewer not in levels or proposer not in levels \
                or levels.index(reviewer) >= levels.index(proposer):
            raise ValueError(f"--acceptance: {t!r} is not REVIEWER<-PROPOSER=RATE with the reviewer above the "
                             f"proposer among {', '.join(levels)}; e.g. {example}")
        if (reviewer, proposer) in table:
            raise ValueError(f"--acceptance gives {reviewer}<-{proposer} twice; give each pair once")
        table[(reviewer, proposer)] = _rate(val, pair)
    return complete_table(table, levels)


def read_acceptance_file(path: str, family: str) -> list:
    """A bench results file's successful records, all of ``family`` and one task (as bench checks a
    file it resumes: :func:`csd_lib.measure.records.other_run`); missing, a folder, another family's,
    or without acceptance: ValueError."""
    p = Path(path)
    how = "give 'paper', rates (e.g. 0.7,0.6,0.3) or a bench results JSONL (python -m csd_lib bench --out FILE)"
    if p.is_dir():
        raise ValueError(f"--acceptance {path} is a folder, not a results file; {how}")
    if not p.exists():
        raise ValueError(f"--acceptance {path}: no such file; {how}")
    recs = read_records(p, fix="delete that line, or give another --acceptance file")
    problem = other_run(recs, family=family)
    if problem:
        there = next(r.get("family") for r in recs if "error" not in r and r.get("family") != family)
        raise ValueError(f"--acceptance {path} holds another family's runs ({problem}); predict with --family "
                         f"{there}, or bench {family} into a file of its own and pass that")
    recs = [r for r in recs if "error" not in r]
    tasks = sorted({str(r.get("task")) for r in recs})
    if len(tasks) > 1:
        raise ValueError(f"--acceptance {path} holds runs of {len(tasks)} tasks ({', '.join(tasks)}), whose "
                         f"acceptance differs; give a file of one task (bench writes one per --out)")
    if not any(r["stats"].get("acceptance") for r in recs):
        raise ValueError(f"--acceptance {path} holds no speculative run with acceptance counts; run "
                         f"python -m csd_lib bench with sd or csd into it")
    return as_records(recs)


# -- building and measuring ---------------------------------------------------------------------

def family_spec(family_name: str | None = None, target: str | None = None, drafters=None) -> dict:
    """What predict needs of a family, from configs only: {name, ids and cfgs by role, k, lenience,
    real, seq2seq}. A preset by name, or your own ``target`` and ``drafters`` (largest first), whose
    ``config.json`` must be at hand (a local folder, the hub cache, or a stored published one)."""
    if target is not None:
        ids = {"target": target, **dict(zip(roles(len(drafters or [])), drafters or []))}
        cfgs = {}
        for role, rid in ids.items():
            cfgs[role] = checkpoint_config(rid)
            if cfgs[role] is None:
                raise ValueError(f"no config.json at hand for {rid!r}: predict builds the model from its config "
                                 f"without downloading weights; give a local folder, or a hub id in the cache")
        k, lenience, name, real = default_k(len(ids) - 1), DEFAULT_LENIENCE, custom_name(target), True
    elif family_name in REAL_PRESETS:
        spec = REAL_PRESETS[family_name]
        ids = {"target": spec["target"], **dict(zip(roles(len(spec["drafters"])), spec["drafters"]))}
        cfgs = {role: published_config(rid) for role, rid in ids.items()}
        k, lenience, name, real = spec["k"], spec["lenience"], family_name, True
    elif family_name in TINY_PRESETS:
        spec = TINY_PRESETS[family_name]
        ids, cfgs, k, lenience, name, real = {}, {}, spec["k"], spec["lenience"], family_name, False
    else:
        raise ValueError(f"unknown family {family_name!r}; use one of {', '.join([*TINY_PRESETS, *REAL_PRESETS])}, "
                         f"or --target/--drafters")
    seq2seq = model_arch(cfgs["target"]) == "t5" if real else "t5" in family_name
    return dict(name=name, ids=ids, cfgs=cfgs, k=k, lenience=lenience, real=real, seq2seq=seq2seq,
                neural=roles(len(k) - 1))


def _cut(cfg: dict, max_layers: int | None) -> dict:
    """The config with its layer counts cut to ``max_layers`` (as the shadow builder cuts them)."""
    return {key: (min(v, max_layers) if key in LAYER_KEYS and max_layers else v) for key, v in cfg.items()}


def _matmul_params(cfg: dict) -> int:
    """Parameters that a call multiplies by: all but an untied input embedding (a lookup)."""
    n, _ = count_params(cfg)
    tied = cfg.get("tie_word_embeddings", cfg.get("model_type") != "t5")
    return n if tied else n - cfg["vocab_size"] * (cfg.get("d_model") or cfg["hidden_size"])


def depth_scale(cfg: dict, max_layers: int | None) -> tuple[float, int, int]:
    """(cost factor from the cut depth to the full one, full layers, measured layers)."""
    cut = _cut(cfg, max_layers)
    layers = max(cfg.get(k, 0) for k in LAYER_KEYS)
    measured = max(cut.get(k, 0) for k in LAYER_KEYS)
    if measured == layers:
        return 1.0, layers, measured
    return _matmul_params(cfg) / _matmul_params(cut), layers, measured


def _policy(spec: dict, info: config.DeviceInfo, device=None) -> config.Policy:
    return config.policy("real", model_arch(spec["cfgs"]["target"]), info, device=device)


def memory_check(spec: dict, info: config.DeviceInfo) -> tuple[bool, str]:
    """Whether the full family fits the device (from its configs, nothing built) and why not."""
    dtype = _policy(spec, info).dtype
    cfgs = list(spec["cfgs"].values())
    sizes = [placement.param_bytes(*count_params(c), dtype) for c in cfgs]
    plan = placement.plan_memory(sizes, info, sum(placement.kv_cache_bytes(c, dtype) for c in cfgs))
    return plan.fits, plan.message


def shadow_family(spec: dict, device, max_layers: int | None, seed: int = 0) -> Family:
    """A family's models with random weights at full width (depth cut to ``max_layers``), on ``device``."""
    pol = _policy(spec, config.describe_device(device), device)
    lms = [LM(role, shadow_model(_cut(spec["cfgs"][role], max_layers), seed=seed + i, device=pol.device,
                                 dtype=pol.dtype), model_id=rid) for i, (role, rid) in enumerate(spec["ids"].items())]
    vocab = lms[0].vocab_size
    bigram = np.random.default_rng(seed).integers(3, vocab, size=vocab).astype(np.int32)
    return Family(spec["name"], None, lms[0], lms[1:], MaG(bigram), spec["k"], spec["lenience"], policy=pol)


def scaled(cost_model: CostModel, factors: dict[str, float]) -> CostModel:
    """The cost model with each model's forward and start costs multiplied by its factor."""
    fwd = {n: CallFit([c * factors.get(n, 1.0) for c in f.coef], f.r2, f.max_rel_err) for n, f in cost_model.forward.items()}
    start = {n: s * factors.get(n, 1.0) for n, s in cost_model.start.items()}
    return CostModel(cost_model.family, cost_model.device, fwd, cost_model.review, cost_model.mag, start, cost_model.cache_length,
                     dict(cost_model.env, depth_scale=factors), cost_model.samples)


# -- pricing ------------------------------------------------------------------------------------

def _row(method: str, plan: Plan, price: dict, **extra) -> dict:
    return {"method": method, **extra, "k": [list(r) for r in plan.k] if plan.k else None,
            "lenience": plan.lenience, "speedup": price["speedup"], "tokens_per_s": price["tokens_per_s"]}


def price_grid(neural: list[str], k, lenience: float, cost_model: CostModel, table_for, shape_for,
               n_sim: int = 4000, sd_ks=SD_KS, vertical_ks=VERTICAL_KS, mag_block: int = MAG_BLOCK,
               max_steps: int | None = None, progress: bool = False) -> list[dict]:
    """Rows {method, k, speedup, tokens_per_s, ...} for AR, SD with each drafter at every k, the
    vertical cascade (largest drafter + MaG) at every k, and CSD over the tuner's K grid plus ``k``.

    ``table_for(method, plan)`` and ``shape_for(method)`` give the acceptance table and the
    (tokens, start) to price a plan on. ``max_steps``: the Monte Carlo's cap on steps per generation
    (a capped row says ``capped``); ``progress``: a bar on stderr, each plan weighed by :func:`mc_work`.
    """
    drafters = [*neural, "mag"]
    grid = [g for g, _ in candidate_grid(len(neural), leniences=(lenience,), mag=mag_block)]
    own = [list(r) for r in k]
    plans = [("ar", Plan.ar(), {})]
    plans += [("sd", Plan.sd(n, d), {"drafter": d}) for d in neural for n in sd_ks]
    plans += [("vertical", Plan.csd(drafters, vertical_k(n, len(drafters), mag_block), lenience, mag_block), {})
              for n in vertical_ks]
    plans += [("csd", Plan.csd(drafters, g, lenience, mag_block), {"preset": g == own})
              for g in grid + ([own] if own not in grid else [])]
    rows = []
    work = [mc_work(plan) for _, plan, _ in plans]
    bar = tqdm(total=sum(work), desc="predict: pricing plans", disable=not progress, file=sys.stderr,
               bar_format="{l_bar}{bar}| [{elapsed}<{remaining}]")
    for (method, plan, extra), w in zip(plans, work):
        tokens, start = shape_for(method)
        price_ = price_plan(plan, table_for(method, plan), cost_model, tokens, start, n_sim=n_sim,
                            max_steps=max_steps)
        rows.append(_row(method, plan, price_, **extra, **({"capped": True} if price_.get("capped") else {})))
        bar.update(w)
    bar.close()
    return rows


def mc_work(plan: Plan) -> float:
    """A plan's Monte Carlo work relative to others' (the pricing bar's weight): its neural draft calls a step
    (K's entries outside MaG's column, plus the target's), three times as many with MaG at the bottom."""
    if not plan.drafters:
        return 0.05  # AR is priced in closed form
    neural = [j for j, d in enumerate(plan.drafters) if d != "mag"]
    calls = 1 + float(np.asarray(plan.k)[:, neural].sum())
    return calls * (3 if "mag" in plan.drafters else 1)


def best_rows(rows: list[dict]) -> dict:
    """The fastest row of each method."""
    out = {}
    for r in rows:
        if r["method"] not in out or r["tokens_per_s"] > out[r["method"]]["tokens_per_s"]:
            out[r["method"]] = r
    return out


def forecast(family_name: str | None, acceptance: str = "paper", device=None, max_layers: int | None = None,
             cost_file: str | None = None, max_new_tokens: int = 128, prompt_tokens: int = 100,
             seconds: float = 20.0, n_sim: int = 4000, *, target: str | None = None, drafters=None,
             costs: str | None = None, max_steps: int | None = MC_MAX_STEPS, progress: bool = False) -> dict:
    """Predicted tokens/s and speedup of every method on ``device`` (see the module docstring).

    ``acceptance``: 'paper', a bench results JSONL, or rates (:func:`parse_rates`). ``cost_file``: a
    cost model JSON to price with instead of measuring (``costs``: its former keyword, which notebook
    05 passes). ``max_new_tokens``, ``prompt_tokens``: the generation priced (a results file gives its
    own, per method). ``target``, ``drafters``: your own models instead of ``family_name``
    (:func:`family_spec`). ``max_steps``: the Monte Carlo's cap on steps per generation
    (:func:`csd_lib.price.ewif.predict_speedup`; a note says how many plans reached it); ``progress``: a bar
    on stderr over the plans priced. Checks every input before anything is built.
    """
    cost_file = costs if cost_file is None else cost_file
    spec = family_spec(family_name, target, drafters)
    family_name, real, neural = spec["name"], spec["real"], spec["neural"]
    levels = ["target", *neural, "mag"]
    table, recs, notes = _acceptance_source(acceptance, levels, spec)
    cm = read_cost_file(cost_file) if cost_file else None
    info = config.describe_device(device)
    out = {"family": family_name, "device": device_name(device) if device is not None else device_name(),
           "acceptance": acceptance}
    fits, why = memory_check(spec, info) if real else (True, "")
    out["fits"] = fits
    if not fits:
        warnings.warn(f"{family_name} does not fit this device: {why}", stacklevel=2)
        notes.append(f"memory: {family_name} does not fit this device ({why})")
    if real and max_layers is None and (info.type == "cpu" or not fits):
        max_layers = CPU_MAX_LAYERS
    depth = {}
    if cm is None:
        cm, depth = _measured_costs(spec, device, max_layers, prompt_tokens, seconds, notes)
    else:
        out["device"] = cm.device
        notes.append(f"costs: {cost_file} (measured on {cm.device}): {_costs_machine(spec, device, cm).describe()}")
    own_shape = (float(max_new_tokens), 1.0 if spec["seq2seq"] else float(prompt_tokens))
    table_for, shape_for = _pricing_inputs(recs, table, levels, cm, own_shape)
    rows = price_grid(neural, spec["k"], spec["lenience"], cm, table_for, shape_for, n_sim=n_sim,
                      max_steps=max_steps, progress=progress)
    capped = sum(r.get("capped", False) for r in rows)
    if capped:
        notes.append(f"Monte Carlo: {capped} of {len(rows)} plans emit so few tokens a step that their "
                     f"generations were cut at {max_steps} steps and priced by those steps' cost per token")
    out.update(tokens=shape_for("csd")[0], depth=depth, notes=notes, best=best_rows(rows), rows=rows,
               cost_model=cm.to_dict() | {"samples": []})
    return out


def _costs_machine(spec: dict, device, cm: CostModel):
    """How a given cost model's machine fingerprint compares with this one's: with reference steps
    measured here for an embedded family (a few calls, :func:`csd_lib.price.timing.step_costs`), the static
    fingerprint only for a real one (its models are not built when a cost model is given)."""
    reference = None if spec["real"] else reference_of(step_costs(load_family(spec["name"], device=device)))
    return match_fingerprints(fingerprint(environment(device), reference), cost_fingerprint(cm))


def _acceptance_source(acceptance: str, levels: list[str], spec: dict) -> tuple[dict | None, list | None, list[str]]:
    """(table, records, notes) of ``acceptance``: the paper's profile, a results file's records (table
    None) or rates given as text (records None)."""
    table, recs, notes = None, None, []
    if acceptance == "paper":
        table, pnotes = paper_table(levels, spec["seq2seq"])
        notes += pnotes
        if spec["name"] != "flan-t5":
            notes.append(f"the profile was measured against FLAN-T5-XXL; for {spec['name']} it is an assumption")
    elif acceptance.strip() and (Path(acceptance).suffix in (".jsonl", ".json") or Path(acceptance).exists()):
        recs = read_acceptance_file(acceptance, spec["name"])
        notes.append(f"acceptance: each method's own runs in {acceptance} (methods it lacks: all its runs pooled)")
    else:
        table = parse_rates(acceptance, levels)
        notes.append(f"acceptance: the rates given ({acceptance}); pairs not given are filled from the given ones")
    return table, recs, notes


def _measured_costs(spec: dict, device, max_layers: int | None, prompt_tokens: int, seconds: float,
                    notes: list[str]) -> tuple[CostModel, dict]:
    """The cost model measured here: a real family's shadow at ``max_layers``, each call scaled to the full
    depth (with ``depth``: per role, its layers and scale), or the embedded family itself."""
    depth = {}
    if not spec["real"]:
        fam = load_family(spec["name"], device=device)
        return measure_costs(fam, list(range(3, 3 + prompt_tokens)), seconds=seconds, min_reps=1), depth
    fam = shadow_family(spec, device, max_layers)
    factors = {}
    for role, rid in spec["ids"].items():
        factors[role], full, measured = depth_scale(spec["cfgs"][role], max_layers)
        depth[role] = {"id": rid, "layers": full, "measured_layers": measured, "cost_scale": factors[role]}
    if any(f != 1.0 for f in factors.values()):
        notes.append(f"depth: measured at {max_layers} layer(s) per stack, each call's cost scaled to the "
                     f"full depth by the ratio of matmul parameters (x" +
                     ", x".join(f"{v:.1f} {k}" for k, v in factors.items()) + ")")
    cm = scaled(measure_costs(fam, list(range(100, 100 + prompt_tokens)), seconds=seconds, min_reps=1), factors)
    return cm, depth


def _pricing_inputs(recs, table, levels: list[str], cost_model: CostModel, own_shape: tuple[float, float]):
    """(table_for(method, plan), shape_for(method)) for :func:`price_grid`: from a results file's records
    (each method's own runs, else all pooled; their lengths) or one table and ``own_shape``."""
    if recs is None:
        return (lambda method, plan: table), (lambda method: own_shape)
    best = {m: list(v.values()) for m, v in fastest(recs).items()}
    pooled = complete_table(acceptance_table([r.stats for r in recs if r.stats.get("acceptance")], min_reached=1),
                            levels)
    run_of = {"vertical": "csd"}

    def table_for(method, plan):
        """The method's own runs where they used the plan's drafters, else every run pooled."""
        rs = best.get(run_of.get(method, method))
        own = rs and rs[0].plan and set(plan.drafters) <= set(rs[0].plan.drafters)
        return run_table(rs, plan) if own else pooled

    def shape_for(method):
        rs = best.get(run_of.get(method, method)) or best.get("ar") or next(iter(best.values()))
        toks = float(np.mean([r.n_tokens for r in rs]))
        return toks, float(np.mean([cost_model.cache_length if r.cache_start is None else r.cache_start for r in rs]))
    return table_for, shape_for


def format_forecast(res: dict) -> str:
    """The forecast as a few lines of text."""
    best = res["best"]
    ar = best["ar"]["tokens_per_s"]
    lines = [f"predicted on {res['device']} for {res['family']} ({res['tokens']:.0f}-token generations):"]
    lines += [f"  note: {n}" for n in res["notes"]]
    names = {"ar": "AR", "sd": "SD", "vertical": "vertical (largest drafter + MaG)", "csd": "CSD"}
    for m in ("ar", "sd", "vertical", "csd"):
        r = best[m]
        how = "" if m == "ar" else (f"  k = {r['k'][0][0]}" + (f" ({r['drafter']})" if "drafter" in r else "")
                                     if m != "csd" else f"  K = {r['k']}")
        lines.append(f"  {names[m]:<34}{r['tokens_per_s']:9.3g} tokens/s  {r['speedup']:5.2f}x{how}")
    preset = next((r for r in res["rows"] if r.get("preset")), None)
    if preset:
        lines.append(f"  CSD at the preset's K {preset['k']}: {preset['tokens_per_s']:.3g} tokens/s, "
                     f"{preset['speedup']:.2f}x")
    gain = best["csd"]["speedup"] / best["sd"]["speedup"]
    lines.append(f"  (AR {ar:.3g} tokens/s; best CSD over best SD: {gain:.2f}x)")
    return "\n".join(lines)
