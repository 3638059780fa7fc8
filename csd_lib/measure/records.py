"""A benchmark record: one (example, method, repeat) line of a results JSONL file, typed.

:mod:`csd_lib.measure.bench` writes the lines; summaries and predictions read them as
:class:`BenchRecord`. A record's ``plan`` is the generation's :class:`csd_lib.engine.plan.Plan`.
"""
from __future__ import annotations

import gzip
import logging
from dataclasses import dataclass, field, fields
from pathlib import Path

from ..engine.generation import inter_token_latencies, time_to_first_token
from ..engine.methods import find, names
from ..engine.plan import Plan
from ..fileio import PACKED, read_input, read_jsonl, write_atomic

log = logging.getLogger(__name__)


HF_METHODS = names(engine=False)          # transformers' own baselines on the same models
ALL_METHODS = names()                      # the engine's methods, then the baselines (the tables' order)
DEFAULT_METHODS = names(default=True)      # a bench's default: the tree methods run when asked for


def base_method(label: str) -> str:
    """The method a bench label runs: ``sd@K`` is SD at draft length K, beside the run's own ``sd`` (the same run
    compares two draft lengths); every other label is its method."""
    m, at, k = label.partition("@")
    return m if at and find(m) and find(m).at_k and k.isdigit() and int(k) >= 1 else label


def is_baseline(label: str) -> bool:
    """Whether a bench label is one of transformers' own baselines (run by :func:`csd_lib.measure.bench.hf_generate`)."""
    m = find(label)
    return m is not None and m.baseline


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
    stats: dict = field(default_factory=dict)        # csd_lib.engine.stats.Stats.to_dict(); HF baselines: n_tokens, wall_time
    plan: Plan | None = None                          # None for the HF baselines and error lines
    provenance: dict[str, int] = field(default_factory=dict)
    prompt_tokens: int | None = None
    cache_start: int | None = None                    # cache length at the first decoding step
    env: dict = field(default_factory=dict)
    clock: str = "wall"                               # stats' times read from 'wall' or 'cpu' (process CPU) time; old: wall
    load1: float | None = None                        # the machine's 1-minute load average when the line was written
    commit_times: list[float] | None = None           # per output token, seconds since the start; None: not recorded
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

    @property
    def ttft(self) -> float | None:
        """Time to first token (:func:`csd_lib.engine.generation.time_to_first_token`); None: not recorded."""
        return None if self.commit_times is None else time_to_first_token(self.commit_times)

    @property
    def itl(self) -> list[float] | None:
        """Inter-token latencies (:func:`csd_lib.engine.generation.inter_token_latencies`); None: not recorded."""
        return None if self.commit_times is None else inter_token_latencies(self.commit_times)

    @classmethod
    def from_dict(cls, d: dict) -> "BenchRecord":
        """A record from a JSON line."""
        known = {f.name for f in fields(cls)} - {"plan", "extra"}
        kw = {k: v for k, v in d.items() if k in known}
        plan = d.get("plan")
        extra = {k: v for k, v in d.items() if k not in known and k != "plan"}
        return cls(**kw, plan=Plan.from_dict(plan) if plan else None, extra=extra)

    def to_dict(self) -> dict:
        d = {f.name: getattr(self, f.name) for f in fields(self)
             if f.name not in ("plan", "extra", "error", "commit_times")}
        if self.plan is not None:
            d["plan"] = self.plan.to_dict()
        for key in ("commit_times", "error"):  # written only where recorded
            if getattr(self, key) is not None:
                d[key] = getattr(self, key)
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


MAX_RESULTS_BYTES = 256 * 2 ** 20  # far more than any results file holds (a line is a few KB)


def stored(path) -> Path | None:
    """The file that holds a results file's lines: ``path`` itself, else its packed copy ``path.gz``
    (:func:`pack`); None when neither exists."""
    path = Path(path)
    if path.exists() or path.is_symlink():
        return path
    packed = path.with_name(path.name + PACKED)
    return packed if not path.name.endswith(PACKED) and packed.is_file() else None


def pack(path) -> Path:
    """Store a results file gzip-packed (deterministic bytes: no name, no time) as ``path.gz``, checked
    to read back the same records, then remove ``path``; :func:`read_records` reads either."""
    path = Path(path)
    data = path.read_bytes()
    packed = path.with_name(path.name + PACKED)
    write_atomic(packed, gzip.compress(data, compresslevel=9, mtime=0), "packed results")
    if read_records(packed) != read_records(path):
        packed.unlink()
        raise ValueError(f"{packed} did not read back the records of {path}; {path} was kept")
    path.unlink()
    return packed


def unpack(path) -> bool:
    """Before a run appends to ``path``: write out its packed copy when only that exists (a committed
    run resumed); True when it did."""
    path = Path(path)
    packed = path.with_name(path.name + PACKED)
    if path.exists() or path.is_symlink() or not packed.is_file():
        return False
    write_atomic(path, read_input(packed, "packed results file", PACK_FIX, MAX_RESULTS_BYTES))
    return True


PACK_FIX = "re-pack it with scripts/pack_results.py from the .jsonl it was made of"
RESUME_FIX = "delete that line to re-run its example, or pass a new --out"


def read_records(path: Path, fix: str = RESUME_FIX) -> list[dict]:
    """Complete JSON lines of a results file; a torn last line (crash mid-write) is dropped.

    A path that is not a regular file, a file over :data:`MAX_RESULTS_BYTES`, and any other line that is
    not a record are each a ValueError naming the file (and the line) and ``fix``.
    """
    path = stored(path)
    if path is None:
        return []
    if not path.exists():  # a dangling link: no results yet
        return []
    out = []
    for i, rec in read_jsonl(path, "results file", fix, MAX_RESULTS_BYTES, "a JSON record", torn_ok=True,
                             file_fix=PACK_FIX if path.name.endswith(PACKED) else "give a results JSONL file "
                                                                                 "written by bench"):
        if not isinstance(rec, dict) or "example" not in rec or "method" not in rec:
            raise ValueError(f"{path}:{i} is not a results record (no 'example' and 'method'); {fix}")
        for key, kind, ok in (("example", "an integer >= 0", _index(rec["example"])),
                              ("rep", "an integer >= 0", _index(rec.get("rep", 0))),
                              ("method", "a method name", find(base_method(rec["method"])) is not None)):
            if not ok:
                raise ValueError(f"{path}:{i} has {key} {rec.get(key)!r}, not {kind}; {fix}")
        if "error" not in rec and not isinstance(rec.get("stats"), dict):
            raise ValueError(f"{path}:{i} has neither 'stats' nor 'error'; {fix}")
        out.append(rec)
    return out


def other_run(records: list[dict], **want) -> str | None:
    """The first line (error lines aside) whose ``family``, ``task``, ... is not the one wanted:
    ``line N: family is 'x' there, 'y' now``; None if every line matches. Bench's resume check and
    predict's acceptance file both use it."""
    for i, r in enumerate(records, 1):
        if "error" in r:
            continue
        for key, value in want.items():
            if r.get(key) != value:
                return f"line {i}: {key} is {r.get(key)!r} there, {value!r} now"
    return None


def _index(x) -> bool:
    return isinstance(x, int) and not isinstance(x, bool) and x >= 0
