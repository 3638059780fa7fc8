"""A benchmark record: one (example, method, repeat) line of a results JSONL file, typed.

:mod:`csd_lib.bench` writes the lines; summaries and predictions read them as
:class:`BenchRecord`. A record's ``plan`` is the generation's :class:`csd_lib.plan.Plan`;
lines written before plans existed hold a ``config`` dict instead, read into the same Plan
(MaG's block was 10 in all of them).
"""
from __future__ import annotations

from dataclasses import dataclass, field, fields

from .plan import METHODS, Plan

HF_METHODS = ("hf-assisted", "hf-pld")   # transformers' own baselines on the same models
ALL_METHODS = METHODS + HF_METHODS


@dataclass
class BenchRecord:
    """One method on one example (one repeat): the tokens, the stats dict and the plan; or an error."""
    example: int
    method: str
    rep: int = 0
    family: str = ""
    task: str = ""
    split: str = "test"                              # lines written before splits were recorded: 'test'
    seed: int = 0
    source: str = ""
    max_new_tokens: int | None = None
    token_ids: list[int] = field(default_factory=list)
    stats: dict = field(default_factory=dict)        # csd_lib.trace.Stats.to_dict(); HF baselines: n_tokens, wall_time
    plan: Plan | None = None                          # None for the HF baselines and error lines
    provenance: dict[str, int] = field(default_factory=dict)
    prompt_tokens: int | None = None
    cache_start: int | None = None                    # cache length at the first decoding step
    env: dict = field(default_factory=dict)
    clock: str = "wall"                               # stats' times read from 'wall' or 'cpu' (process CPU) time; old: wall
    load1: float | None = None                        # the machine's 1-minute load average when the line was written
    error: str | None = None
    extra: dict = field(default_factory=dict)         # keys this version does not know, kept as read

    @property
    def ok(self) -> bool:
        return self.error is None

    @property
    def wall_time(self) -> float:
        return self.stats["wall_time"]

    @property
    def n_tokens(self) -> int:
        return self.stats["n_tokens"]

    @classmethod
    def from_dict(cls, d: dict) -> "BenchRecord":
        """A record from a JSON line; an old ``config`` dict becomes the plan."""
        known = {f.name for f in fields(cls)} - {"plan", "extra"}
        kw = {k: v for k, v in d.items() if k in known}
        plan = d.get("plan", d.get("config"))
        extra = {k: v for k, v in d.items() if k not in known and k not in ("plan", "config")}
        return cls(**kw, plan=Plan.from_dict(plan) if plan else None, extra=extra)

    def to_dict(self) -> dict:
        d = {f.name: getattr(self, f.name) for f in fields(self) if f.name not in ("plan", "extra", "error")}
        if self.plan is not None:
            d["plan"] = self.plan.to_dict()
        if self.error is not None:
            d["error"] = self.error
        return {**d, **self.extra}


def as_records(records) -> list[BenchRecord]:
    """Records as :class:`BenchRecord`, from JSON dicts (``bench.read_records``) or records."""
    return [r if isinstance(r, BenchRecord) else BenchRecord.from_dict(r) for r in records]


def fastest(records) -> dict[str, dict[int, BenchRecord]]:
    """{method: {example: the fastest successful record over repeats}}; error lines are skipped."""
    by: dict[str, dict[int, BenchRecord]] = {}
    for r in as_records(records):
        if not r.ok:
            continue
        cur = by.setdefault(r.method, {}).get(r.example)
        if cur is None or r.wall_time < cur.wall_time:
            by[r.method][r.example] = r
    return by
