"""Batched generation: many prompts at once, every row exactly its batch-1 generation.

Each row runs the batch-1 engine itself (:func:`csd_lib.engine.cascade.run_plan`: the same levels, the same
reviews through :func:`csd_lib.engine.review.review`, its own event log and provenance) in a thread of its own,
on row adapters (:class:`RowLM`) whose forward calls wait at one :class:`Batcher`. When every live row waits,
the batcher runs the model that most rows wait for once over all of them (:func:`batched_logits`) and wakes
them; the others wait for the next turn. So the method is written once, rows accept different numbers of
tokens each round (ragged acceptance), and a row that ends (EOS, length) leaves the batch at once: the next
prompt takes its place (at most ``plan.batch_size`` rows live). Rows that start together run a T5 encoder once
over all their prompts (:func:`batched_start`).

KV caches stay per row, rolled back by the cache API (``crop``) exactly as batch 1 does; a batched call stacks
the rows' caches left-padded along the batch axis, feeds each row its last ``T`` tokens (a row with fewer new
tokens re-feeds cached ones instead of padding, which costs the same and keeps every row contiguous: T5's
relative positions hold), masks the padding, gives decoder-only rows their own positions, and splits the
updated cache back into rows. Row ``r`` samples with seed ``plan.seed + r``: it equals the batch-1 generation
with that seed. docs/REFERENCE.md (batched generation) says what is exact and what is not supported.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass, replace

import torch
from transformers.cache_utils import DynamicCache, EncoderDecoderCache
from transformers.modeling_outputs import BaseModelOutput

from .cascade import encode_prompt, run_plan
from .generation import Generation
from .inputs import check_family, check_room
from .methods import get
from .models import LM, Meter, StackError, common_prefix, sync_device
from .plan import Plan, check_batch_size, make_plan

__all__ = ["Batcher", "RowLM", "batched_logits", "batched_start", "check_linear", "generate_batch", "run_batch", "row_seed"]

PAD_ID = 0  # the token fed at padded places; masked out, so any id would do


def row_seed(seed: int | None, row: int) -> int | None:
    """The seed row ``row`` samples with: ``seed + row`` (mod 2**64), None (fresh) for None."""
    return None if seed is None else (seed + row) % 2 ** 64


# -- the scheduler ------------------------------------------------------------------------

@dataclass
class _Call:
    """One row's wait for a forward call: ``key`` (what runs), its arguments, then its result."""
    key: tuple[str, str]
    args: tuple
    result: object = None
    error: BaseException | None = None
    done: bool = False


class _Aborted(RuntimeError):
    """Another row failed: this row's wait ends without a result."""


class Batcher:
    """Collects the rows' forward calls; :meth:`serve` runs one batched call when no row is running."""

    def __init__(self):
        self.cond = threading.Condition()
        self.waiting: dict[int, _Call] = {}
        self.running = 0

    def call(self, row: int, key: tuple[str, str], args: tuple):
        """Row ``row`` waits until its call ``key(*args)`` has run in a batch; returns its result."""
        c = _Call(key, args)
        with self.cond:
            self.waiting[row] = c
            self.running -= 1
            self.cond.notify_all()
            while not c.done:
                self.cond.wait()
        if c.error is not None:
            raise c.error
        return c.result

    def serve(self) -> None:
        """Run the calls of the key most rows wait for (ties: the key's order), as one batch. Lock held."""
        counts: dict[tuple[str, str], int] = {}
        for c in self.waiting.values():
            counts[c.key] = counts.get(c.key, 0) + 1
        key = min(counts, key=lambda k: (-counts[k], k))
        rows = sorted(r for r, c in self.waiting.items() if c.key == key)
        calls = [self.waiting.pop(r) for r in rows]
        try:
            run = batched_start if key[0] == "start" else batched_logits
            results = run(*zip(*(c.args for c in calls)))
            for c, res in zip(calls, results):
                c.result = res
        except Exception as e:  # the rows of this batch fail with it; serve_all stops the others
            for c in calls:
                c.error = e
        self._wake(calls)

    def abort(self) -> None:
        """End every wait with :class:`_Aborted` (another row failed). Lock held."""
        calls = list(self.waiting.values())
        self.waiting.clear()
        for c in calls:
            c.error = _Aborted("another row of the batch failed")
        self._wake(calls)

    def _wake(self, calls: list[_Call]) -> None:
        for c in calls:
            c.done = True
        self.running += len(calls)
        self.cond.notify_all()


@dataclass(eq=False)
class RowLM(LM):
    """One row's adapter of a family's model: its own KV cache and meter; forward calls wait at ``batcher``."""
    batcher: Batcher | None = None
    row: int = 0

    @classmethod
    def of(cls, lm: LM, batcher: Batcher, row: int) -> "RowLM":
        """A row adapter sharing ``lm``'s model, its EOS and its meter's clock."""
        row_lm = cls(lm.name, lm.model, lm.model_id, lm.max_length, Meter(clock=lm.meter.clock), batcher, row)
        row_lm.eos_token_id = lm.eos_token_id  # a caller may have set another EOS than the config's
        return row_lm

    def start(self, prompt_ids: list[int]) -> list[int]:
        return self.batcher.call(self.row, ("start", self.name), (self, prompt_ids))

    def logits(self, seq: list[int], m: int) -> torch.Tensor:
        return self.batcher.call(self.row, ("logits", self.name), (self, seq, m))

    def tree_logits(self, seq, tokens, parents, hidden=False):
        raise ValueError("batched generation runs linear drafts only; a token tree is scored at batch size 1 "
                         "(docs/REFERENCE.md, batched generation)")


# -- one batched forward ------------------------------------------------------------------------

def batched_start(lms, prompts) -> list[list[int]]:
    """:meth:`LM.start` of several rows of one model: an encoder-decoder's encoder runs once over all their
    prompts (right-padded, masked), each row keeping its own states (1, S_i, D); returns each row's initial
    decoder sequence. A decoder-only start runs no forward; one row starts exactly as batch 1 does."""
    lms, prompts = list(lms), [list(p) for p in prompts]
    lead = lms[0]
    if not lead.is_encoder_decoder or len(lms) == 1:
        return [LM.start(lm, p) for lm, p in zip(lms, prompts)]
    seqs = [lm.reset(p) for lm, p in zip(lms, prompts)]
    S = max(len(p) for p in prompts)
    ids = torch.tensor([p + [PAD_ID] * (S - len(p)) for p in prompts], device=lead.device)          # (B, S)
    mask = torch.tensor([[1] * len(p) + [0] * (S - len(p)) for p in prompts], device=lead.device)  # (B, S)
    sync_device(ids.device)
    t0 = lead.meter.clock()
    with torch.inference_mode():
        states = lead.model.get_encoder()(input_ids=ids, attention_mask=mask).last_hidden_state    # (B, S, D)
    sync_device(states.device)
    dt = lead.meter.clock() - t0
    for i, (lm, p) in enumerate(zip(lms, prompts)):
        lm._enc = BaseModelOutput(last_hidden_state=states[i:i + 1, :len(p)])                      # (1, S_i, D)
        lm.meter.time += dt                                          # the batched call's time, in every row's meter
    return seqs


def _self_cache(lm: LM):
    """The decoder self-attention cache of ``lm`` (T5 keeps it beside the cross-attention one)."""
    return lm._cache.self_attention_cache if lm.is_encoder_decoder else lm._cache


def _stack_past(lms: list[LM], starts: list[int], P: int) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """The rows' cached keys and values, each left-padded with zeros to ``P`` places: per layer (B, H, P, d)."""
    caches = [_self_cache(lm) for lm in lms]
    ref = next(c for c, s in zip(caches, starts) if s > 0)
    out = []
    for li, layer in enumerate(ref.layers):
        _, H, _, d = layer.keys.shape
        ks, vs = [], []
        for c, s in zip(caches, starts):
            pad = layer.keys.new_zeros(1, H, P - s, d)                            # (1, H, P - s, d)
            k, v = (c.layers[li].keys, c.layers[li].values) if s > 0 else (pad[..., :0, :], pad[..., :0, :])
            ks.append(torch.cat([pad, k], dim=2))                                 # (1, H, P, d)
            vs.append(torch.cat([pad, v], dim=2))
        out.append((torch.cat(ks), torch.cat(vs)))                                # (B, H, P, d) each
    return out


def _encoder_states(lms: list[LM]):
    """The rows' encoder outputs right-padded to one length, and their mask: (B, S, D), (B, S)."""
    hs = [lm._enc.last_hidden_state for lm in lms]                                # (1, S_i, D) each
    S = max(h.shape[1] for h in hs)
    states = torch.cat([torch.cat([h, h.new_zeros(1, S - h.shape[1], h.shape[2])], dim=1) for h in hs])
    mask = torch.tensor([[1] * h.shape[1] + [0] * (S - h.shape[1]) for h in hs], device=states.device)
    return BaseModelOutput(last_hidden_state=states), mask


def _stack_cross(lms: list[LM]) -> DynamicCache:
    """The rows' cross-attention keys and values, right-padded to the longest encoder input, as one cache;
    empty (T5 computes them from the encoder states) unless every row has them from an earlier call."""
    caches = [lm._cache.cross_attention_cache for lm in lms]
    if any(c.get_seq_length() == 0 for c in caches):
        return DynamicCache()
    S = max(c.get_seq_length() for c in caches)
    kv = []
    for li in range(len(caches[0].layers)):
        pad = [(c.layers[li].keys, c.layers[li].values) for c in caches]  # (1, H, S_i, d) each
        kv.append(tuple(torch.cat([torch.cat([t, t.new_zeros(*t.shape[:2], S - t.shape[2], t.shape[3])], dim=2)
                                   for t in ts]) for ts in zip(*pad)))    # (B, H, S, d) each
    return DynamicCache(kv)


def _forward(lead: LM, ids, mask, pos, past, keep: int, lms: list[LM]):
    """One forward of ``lead``'s model over the batch; returns the output and the batched cache it filled."""
    cfg = lead.model.config
    cache = DynamicCache(past or None, config=cfg)
    kw = {lead._cache_kw: cache}
    if lead.is_encoder_decoder:
        enc, enc_mask = _encoder_states(lms)
        kw[lead._cache_kw] = cache = EncoderDecoderCache(cache, _stack_cross(lms))
        out = lead.model(encoder_outputs=enc, attention_mask=enc_mask, decoder_input_ids=ids,
                         decoder_attention_mask=mask, use_cache=True, **kw)
        return out, cache
    if lead._keeps_logits:
        kw["logits_to_keep"] = keep
    out = lead.model(input_ids=ids, attention_mask=mask, position_ids=pos, use_cache=True, **kw)
    return out, cache


def _row_cache(cache: DynamicCache, i: int, lo: int, hi: int | None, config=None) -> DynamicCache:
    """Row ``i``'s columns ``lo:hi`` of a batched cache, as a cache of its own."""
    return DynamicCache([(layer.keys[i:i + 1, :, lo:hi], layer.values[i:i + 1, :, lo:hi]) for layer in cache.layers],
                        config=config)


def batched_logits(lms, seqs, ms) -> list[torch.Tensor]:
    """:meth:`LM.logits` of several rows of one model in one forward call: per row (m + 1, V), float32.

    ``lms`` are the rows' adapters (one model), ``seqs`` their decoder sequences, ``ms`` their drafted counts.
    Each row's cache is cropped (the cache API) to what it keeps, then the rows are stacked left-padded.
    """
    lms, seqs, ms = list(lms), [list(s) for s in seqs], list(ms)
    lead = lms[0]
    keeps = [min(common_prefix(lm._cached, s), len(s) - m - 1) for lm, s, m in zip(lms, seqs, ms)]
    T = max(len(s) - k for s, k in zip(seqs, keeps))                 # tokens fed per row
    starts = [max(0, len(s) - T) for s in seqs]                      # each row feeds seq[start:], <= its keep
    for lm, st in zip(lms, starts):
        if st < len(lm._cached):
            lm._cache.crop(st - len(lm._cached))                     # negative: drop the rejected suffix
    P = max(starts)
    L = P + T                                                        # every row's tokens end at column L
    past = _stack_past(lms, starts, P) if P > 0 else []
    dev = lead.device
    ids = torch.tensor([[PAD_ID] * (L - len(s) - (P - st)) + s[st:] for s, st in zip(seqs, starts)], device=dev)
    mask = torch.tensor([[0] * (L - len(s)) + [1] * len(s) for s in seqs], device=dev)   # (B, L)
    pos = (torch.arange(P, L, device=dev)[None, :]
           - torch.tensor([L - len(s) for s in seqs], device=dev)[:, None]).clamp_min(0)  # (B, T)
    t0 = lead.meter.clock()
    with torch.inference_mode():
        out, cache = _forward(lead, ids, mask, pos, past, max(ms) + 1, lms)
    logits = out.logits[:, -(max(ms) + 1):].float()                  # (B, max m + 1, V)
    sync_device(logits.device)
    dt = lead.meter.clock() - t0
    self_cache = cache.self_attention_cache if lead.is_encoder_decoder else cache
    if self_cache.get_seq_length() != L:
        raise StackError(f"model '{lead.name}': the batched KV cache holds {self_cache.get_seq_length()} tokens "
                         f"where {L} were expected after a call: the forward did not use the cache passed to it")
    rows = []
    for i, (lm, s, m, st) in enumerate(zip(lms, seqs, ms, starts)):
        own = _row_cache(self_cache, i, L - len(s), None, lead.model.config)  # (1, H, len(s), d) per layer
        if lm.is_encoder_decoder:                                    # and its cross-attention's, unpadded
            own = EncoderDecoderCache(own, _row_cache(cache.cross_attention_cache, i, 0,
                                                      lm._enc.last_hidden_state.shape[1]))
        lm._cache = own
        lm._cached, lm._tree = list(s), []
        lm.meter.calls += 1
        lm.meter.time += dt                                          # the batched call's time, in every row's meter
        lm.meter.tokens_fed += len(s) - st
        lm.meter.nodes += m
        rows.append(logits[i, logits.shape[1] - (m + 1):])           # (m + 1, V)
    return rows


# -- running a batch ----------------------------------------------------------------------------

def check_linear(method: str) -> str:
    """``method`` if batched generation runs it: every engine method but the tree methods."""
    if get(method, engine=True).is_tree:
        raise ValueError(f"method {method!r} verifies a token tree, which batched generation does not run "
                         f"(docs/REFERENCE.md, batched generation); use batch size 1 or a linear method")
    return method


def _row_family(family, batcher: Batcher, row: int):
    """``family`` with row adapters in place of its models (they share the weights)."""
    return replace(family, target=RowLM.of(family.target, batcher, row),
                   drafters=[RowLM.of(d, batcher, row) for d in family.drafters])


def run_batch(family, plan: Plan, prompts: list[list[int]]) -> list[Generation]:
    """Algorithm 1 on every prompt (token ids) as ``plan`` says, ``plan.batch_size`` rows at a time; one
    :class:`Generation` per prompt, in order (its plan carries the batch size and the row's seed)."""
    check_linear(plan.method)
    for ids in prompts:
        check_room(family.target, ids, plan.max_new_tokens)
    batcher = Batcher()
    out: list[Generation | None] = [None] * len(prompts)
    errors: list[BaseException] = []

    def work(row: int) -> None:
        try:
            out[row] = run_plan(_row_family(family, batcher, row), replace(plan, seed=row_seed(plan.seed, row)),
                                prompts[row])
        except _Aborted:
            pass
        except Exception as e:  # handed to the caller by the main thread
            errors.append(e)
        finally:
            with batcher.cond:
                batcher.running -= 1
                live.discard(row)
                batcher.cond.notify_all()

    live: set[int] = set()
    todo = list(range(len(prompts)))
    with batcher.cond:
        while todo or live:
            while todo and len(live) < plan.batch_size and not errors:
                row = todo.pop(0)
                live.add(row)
                batcher.running += 1
                threading.Thread(target=work, args=(row,), daemon=True).start()
            batcher.cond.wait_for(lambda: batcher.running == 0)
            if errors:
                todo.clear()
                batcher.abort()
            elif batcher.waiting:
                batcher.serve()
    if errors:
        raise errors[0]
    return out


def generate_batch(family, prompts, method: str = "csd", batch_size: int | None = None, **settings) -> list[Generation]:
    """Generate for every prompt (text or token ids) with :func:`csd_lib.engine.cascade.generate`'s settings,
    ``batch_size`` rows at a time (None: all at once). Row ``r`` equals ``generate(..., seed=seed + r)``."""
    check_family(family)
    check_linear(method)
    if isinstance(prompts, (str, bytes)) or not isinstance(prompts, (list, tuple)) or not prompts:
        raise ValueError(f"prompts must be a non-empty list of prompts (texts or token id lists), got {prompts!r:.60}")
    size = check_batch_size(len(prompts) if batch_size is None else batch_size)
    plan = make_plan(family, method, **settings)
    return run_batch(family, replace(plan, batch_size=size), [encode_prompt(family, p) for p in prompts])
