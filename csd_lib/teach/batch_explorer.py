"""Notebook 09's batch lesson: the committed run's acceptance priced at batch B, a small live batch run, and
the widget for the batch size and the draft lengths (a prediction redrawn on every move).

The figure goes into the widget's ``Output`` with :func:`csd_lib.viz.show_in_output`, never ``with out:``.
"""
from __future__ import annotations

from .. import config
from ..engine.batch import generate_batch
from ..engine.cascade import generate
from ..engine.methods import AR, CSD, SD
from ..engine.plan import MAG
from ..measure.acceptance import acceptance_table, complete_table
from ..measure.records import as_records, read_records
from ..price.batch import LINEAR, predict_batches
from ..price.predict import family_spec
from ..report.batches import crossover_text
from ..viz.notebook import show_in_output
from ..viz.predict import batch_speedup_figure

BATCHES = (1, 2, 4, 8, 16, 32, 64, 128, 256)  # the batch sizes the lesson prices
GPU_SATURATION = 256.0  # an assumed GPU: tokens a call feeds at one row's price (the device's; nothing measures it)
LIVE_METHODS = (AR.name, SD.name, CSD.name)


def committed_acceptance(family_name: str, task: str = "synth-gsm8k") -> tuple[dict, list[str]]:
    """The acceptance table of ``family_name``'s committed benchmark run on ``task`` (every method's runs pooled,
    pairs it never reached filled by :func:`~csd_lib.measure.acceptance.complete_table`) and its neural drafters."""
    path = config.RESULTS_DIR / f"{family_name}-{task}.jsonl"
    recs = as_records(read_records(path))
    if not recs:
        raise ValueError(f"no committed benchmark run of {family_name!r} on {task} ({path}); use an embedded family")
    neural = family_spec(family_name)["neural"]
    table = acceptance_table([r.stats for r in recs if r.stats.get("acceptance")], min_reached=1)
    return complete_table(table, ["target", *neural, MAG]), neural


def with_lengths(plans: dict, sd_k: int | None = None, csd_k: int | None = None, csd_n: int | None = None) -> dict:
    """:func:`~csd_lib.price.batch.batch_plans`' plans with SD's draft length and the cascade's k (bottom drafter's
    tokens per middle review) and n (middle reviews per target review) replaced where given."""
    sd, csd = dict(plans[SD.name]), dict(plans[CSD.name])
    sd["k"] = sd["k"] if sd_k is None else int(sd_k)
    csd["k"] = csd["k"] if csd_k is None else int(csd_k)
    csd["n"] = csd["n"] if csd_n is None else int(csd_n)
    if min(sd["k"], csd["k"], csd["n"]) < 1:
        raise ValueError(f"draft lengths are whole numbers >= 1, got SD k={sd['k']}, CSD k={csd['k']}, n={csd['n']}")
    return {**plans, SD.name: sd, CSD.name: csd}


def live_batches(fam, prompts: list[str], batches=(1, 2, 4, 8), methods=LIVE_METHODS, max_new_tokens: int = 24) -> dict:
    """A small live run: batch-1 AR on every prompt, then each method at each batch size over all ``prompts``.

    Returns {'ar1': batch-1 AR generations, 'runs': {(method, B): generations}, 'rows': one dict per run with
    tokens, seconds (the engine's clock around the whole batch run), tokens/s over the batch and the speedup over
    AR at the same B}. Nothing is asserted here: the notebook checks every row against batch-1 AR."""
    clock = fam.target.meter.clock
    generate_batch(fam, prompts[:2], CSD.name, 2, max_new_tokens=8)  # warm-up: first calls of a new shape are slow
    ar1 = [generate(fam, p, AR.name, max_new_tokens=max_new_tokens) for p in prompts]
    runs, rows = {}, []
    for B in batches:
        for method in methods:
            t0 = clock()
            runs[method, B] = generate_batch(fam, prompts, method, B, max_new_tokens=max_new_tokens)
            seconds = clock() - t0
            tokens = sum(len(g.token_ids) for g in runs[method, B])
            rows.append(dict(method=method, batch=B, tokens=tokens, seconds=seconds, tokens_per_s=tokens / seconds))
    ar_rate = {r["batch"]: r["tokens_per_s"] for r in rows if r["method"] == AR.name}
    rows = [dict(r, speedup=r["tokens_per_s"] / ar_rate[r["batch"]]) for r in rows]
    return {"ar1": ar1, "runs": runs, "rows": rows}


def _words(res: dict, batch: int) -> str:
    """The prediction at ``batch`` and the crossovers, in one sentence of HTML."""
    at = {r["method"]: r["speedup"] for r in res["rows"] if r["batch"] == batch}
    cross = []
    for m, name in ((SD.name, "SD"), (CSD.name, "CSD")):
        x = res["crossover"][m]
        cross.append(f"{name}'s falls to 1 at B = {x['grid']}" if x["grid"] else
                     f"{name}'s stays above 1 up to B = {res['bound']}")
    return (f"<b>Predicted</b> at B = {batch}: SD {at[SD.name]:.2f}x and CSD {at[CSD.name]:.2f}x the tokens per second "
            f"of AR at the same batch size; " + ", ".join(cross) + ".")


def batch_explorer(cost_model, table: dict, neural: list[str], plans: dict, batch: int = 8,
                   saturation: float = GPU_SATURATION, L=None):
    """A VBox: the batch size, SD's k, the cascade's k and n, the machine (this CPU's linear cost, or a GPU whose
    calls cost one row's price up to ``saturation`` tokens), then the predicted sentence and figure."""
    import ipywidgets as w  # ipywidgets: imported when a widget is built
    sd, csd = plans[SD.name], plans[CSD.name]
    controls = dict(
        batch=w.SelectionSlider(options=list(BATCHES), value=batch, description="batch size B"),
        sd_k=w.IntSlider(value=sd["k"], min=1, max=16, description="SD k"),
        csd_k=w.IntSlider(value=csd["k"], min=1, max=8, description="CSD k"),
        csd_n=w.IntSlider(value=csd["n"], min=1, max=6, description="CSD n"),
        saturation=w.Dropdown(options=[("this CPU: every token fed costs its share", LINEAR),
                                       (f"a GPU: up to {saturation:g} tokens at one row's price", float(saturation))],
                              value=LINEAR, description="machine"))
    words, out = w.HTML(), w.Output()

    def redraw(_=None):
        v = {name: c.value for name, c in controls.items()}
        res = predict_batches(cost_model, table, neural, BATCHES, L, v["saturation"],
                              plans=with_lengths(plans, v["sd_k"], v["csd_k"], v["csd_n"]))
        box.last = res
        words.value = _words(res, v["batch"])
        show_in_output(out, batch_speedup_figure(res, at=v["batch"]))

    box = w.VBox([*controls.values(), words, out])
    box.controls, box.words, box.out, box.last = controls, words, out, None
    for c in controls.values():
        c.observe(redraw, names="value")
    redraw()
    return box



def evidence_words(summaries: dict) -> str:
    """Markdown: per family of ``summaries`` ({family: a batch summary, :func:`csd_lib.report.batches.batch_summary`}),
    SD's and the cascade's speedup over AR at the smallest and largest batch size measured (medians, the smallest
    with its interval), whether it fell, and each crossover as the summary gives it."""
    if not summaries:
        return "No committed batch run in this checkout."
    lines = []
    for name, s in summaries.items():
        parts = []
        for m, label in ((SD.name, "SD"), (CSD.name, "CS Drafting")):
            cells = {int(B): c for B, c in s["cells"][m].items()}
            lo, hi = cells[min(cells)], cells[max(cells)]
            moved = "falls to" if hi["speedup"] < lo["speedup"] else "does not fall: it is"
            parts.append(f"{label} {lo['speedup']:.2f}x [{lo['speedup_ci95'][0]:.2f}, {lo['speedup_ci95'][1]:.2f}] at "
                         f"B = {min(cells)} {moved} {hi['speedup']:.2f}x at B = {max(cells)}, crossover "
                         f"{crossover_text(s['crossover'][m])}")
        lines.append(f"- **{name}**: " + "; ".join(parts) + ".")
    return ("Speedup over AR at the same batch size (median, with its 95% interval at the smallest batch size), and "
            "the crossover (\"> B\": beyond the largest batch size measured):\n\n" + "\n".join(lines))
