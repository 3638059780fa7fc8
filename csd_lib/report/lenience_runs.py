"""Where extra lenience goes: one prompt's strict run beside a lenient one, and the strict run replayed.

Two runs at two leniences review different contexts once their outputs' drafts diverge, so their
pair rates differ for two reasons at once. The strict run replayed under the higher lenience
(:func:`csd_lib.report.lenience_replay.replay_lenience`: the same reviews, the same proposals) isolates what
the lenience itself accepts; which reviews can loosen at all is read from the plan
(:func:`csd_lib.engine.lenience.pair_lenience`).
"""
from __future__ import annotations

from ..engine.lenience import lenient_reviews_says, pair_lenience
from ..engine.methods import CSD
from .lenience_replay import replay_lenience


def _rate(a: int, r: int) -> float:
    return a / r if r else float("nan")


def _totals(g) -> dict[str, tuple[int, int]]:
    return {k: (sum(ps.accepted), sum(ps.reached)) for k, ps in sorted(g.stats.acceptance.items())}


def _check(strict, loose) -> None:
    if strict.plan.method != CSD.name or loose.plan.method != CSD.name:
        raise ValueError(f"compare two {CSD.name} runs, got {strict.plan.method} and {loose.plan.method}")
    if strict.plan.lenience != 1.0 or loose.plan.lenience <= 1.0:
        raise ValueError(f"the first run must be strict (l = 1) and the second lenient (l > 1), got "
                         f"l = {strict.plan.lenience:g} and l = {loose.plan.lenience:g}")
    if strict.plan.k != loose.plan.k or strict.plan.mag_lenience != loose.plan.mag_lenience:
        raise ValueError("the two runs must share K and mag_lenience; only the lenience may differ")


def lenience_rows(strict, loose) -> list[dict]:
    """One row per pair: whether ``loose``'s plan reviews it leniently, its acceptance rate (accepted /
    reviewed drafted tokens) in the strict run, in the lenient run, and in the strict run replayed at
    the lenient run's lenience (same contexts), each with its counts. A replayed review accepts a prefix at
    least as long, yet a pair's rate can fall: the longer prefix brings later positions under review."""
    _check(strict, loose)
    lam = loose.plan.lenience
    s, lo = _totals(strict), _totals(loose)
    replay = replay_lenience(strict, [1.0, lam])
    if not replay.monotone:  # a law of the greedy rule: the replay cannot accept less at a higher lenience
        raise AssertionError(f"a replayed review accepts less at l = {lam:g}: {replay.violations()[:3]}")
    rows = []
    for pair in sorted(set(s) | set(lo)):
        l_pair = pair_lenience(loose.plan, pair)
        rep = replay.totals(pair)[1] if pair in replay.pairs() else (0, 0)
        rows.append({"pair": pair, "review": f"lenient (l = {l_pair:g})" if l_pair > 1 else "strict",
                     "l = 1": _rate(*s.get(pair, (0, 0))), f"l = {lam:g}": _rate(*lo.get(pair, (0, 0))),
                     f"l = 1 replayed at l = {lam:g}": _rate(*rep),
                     "accepted / reviewed at l = 1": "{} / {}".format(*s.get(pair, (0, 0))),
                     f"accepted / reviewed at l = {lam:g}": "{} / {}".format(*lo.get(pair, (0, 0))),
                     f"accepted / reviewed replayed at l = {lam:g}": "{} / {}".format(*rep)})
    return rows


def lenience_change_says(strict, loose) -> str:
    """What the higher lenience changed, in words computed from the runs and the plan."""
    _check(strict, loose)
    lam, plan = loose.plan.lenience, loose.plan
    s, lo = _totals(strict), _totals(loose)
    replay = replay_lenience(strict, [1.0, lam])
    lenient = [p for p in sorted(set(s) | set(lo)) if pair_lenience(plan, p) > 1]
    out = [f"Which reviews loosen: {lenient_reviews_says(plan)}."]
    for p in lenient:
        a, r = s.get(p, (0, 0))
        ra, rr = replay.totals(p)[1] if p in replay.pairs() else (0, 0)
        if r and a == r:
            out.append(f"`{p}` already accepted all {r} drafted tokens it reviewed at l = 1: nothing was left to loosen.")
        else:
            out.append(f"`{p}` accepted {a} of {r} drafted tokens at l = 1; the same reviews replayed at l = {lam:g} "
                       f"accept {ra} of {rr}.")
    tc_s, tc_l = strict.stats.calls.get("target", 0), loose.stats.calls.get("target", 0)
    top = [p for p in set(s) | set(lo) if p.startswith("target<-")]
    rej = lambda t: sum(t.get(p, (0, 0))[1] - t.get(p, (0, 0))[0] for p in top)  # noqa: E731
    if tc_s == tc_l:
        out.append(f"The target made {tc_s} calls in both runs.")
    else:
        more = tc_l - tc_s
        line = (f"The l = {lam:g} run made {abs(more)} {'more' if more > 0 else 'fewer'} target "
                f"call{'s' if abs(more) != 1 else ''} ({tc_l} against {tc_s}); the target's reviews rejected "
                f"{rej(lo)} drafted tokens there against {rej(s)} at l = 1")
        if more > 0 and rej(lo) > rej(s):
            line += (": a lenient review passes up tokens that its own argmax would not have chosen, the target's "
                     "strict review rejects those it would not write itself, and each rejection ends a target round "
                     "early")
        out.append(line + ".")
    return " ".join(out)


def lenience_numbers(strict, loose) -> dict[str, bool | int]:
    """What :func:`lenience_change_says` states, by ledger claim id (``claims.record``): ``replay-monotone`` (a law
    of the greedy rule), per lenient pair ``replay-extra-accepted:REVIEWER:PROPOSER`` (drafted tokens the
    strict run's reviews accept when replayed at the lenient run's lenience, beyond what they accepted)
    and ``target-calls-lenient-minus-strict``."""
    _check(strict, loose)
    replay = replay_lenience(strict, [1.0, loose.plan.lenience])
    out: dict[str, bool | int] = {"replay-monotone": replay.monotone}
    for p in sorted(set(_totals(strict)) | set(_totals(loose))):
        if pair_lenience(loose.plan, p) > 1:
            (a1, _), (a_lam, _) = replay.totals(p) if p in replay.pairs() else ((0, 0), (0, 0))
            reviewer, _, proposer = p.partition("<-")
            out[f"replay-extra-accepted:{reviewer}:{proposer}"] = int(a_lam - a1)
    out["target-calls-lenient-minus-strict"] = loose.stats.calls.get("target", 0) - strict.stats.calls.get("target", 0)
    return out
