"""Solutions to the exercises of notebooks/02_max_gram.ipynb (sizes cut for CI)."""
import pandas as pd

from csd_lib import config, load_family, load_task
from csd_lib.teach.replay import mag_proposer, prompt_lookup_proposer, replay, replay_summary
from csd_lib.engine.mag import MaG, build_bigram

fam = load_family(config.FAMILY)
tok = fam.tokenizer


def pairs_of(n):
    return [(tok(e.prompt)["input_ids"], tok(e.reference, add_special_tokens=False)["input_ids"])
            for e in load_task(fam.task, "test", n=n, seed=config.SEED)]


def score(prop, pairs, n=10):
    return replay_summary([r for p, y in pairs for r in replay(prop, p, y, n)], "")


pairs = pairs_of(60)
variants = {"MaG recent": mag_proposer(fam.mag, 10), "MaG leftmost": mag_proposer(MaG(fam.mag.bigram, 10, "leftmost"), 10),
            "match only": mag_proposer(fam.mag, 10, fallback=False), "bigram only": mag_proposer(fam.mag, 10, match=False),
            "HF prompt lookup": prompt_lookup_proposer(10, 2)}

# 1. Ranking on 20 examples against 60: the order of mean accepted tokens per call.
for n in (20, 60):
    t = pd.Series({k: score(v, pairs[:n])["mean_accepted"] for k, v in variants.items()}).sort_values(ascending=False)
    print(f"ex1 n={n}:", t.round(3).to_dict())

# 2. MaG block length: more tokens per call can only add accepted tokens (a longer prefix of the same
#    proposal), with diminishing returns; the paper stops at 10 because more are rarely accepted.
acc = {n: score(mag_proposer(MaG(fam.mag.bigram, n=n), n), pairs[:20], n)["mean_accepted"] for n in (3, 10, 30)}
print("ex2 mean accepted per call by MAG_N:", {k: round(v, 3) for k, v in acc.items()})
assert acc[3] <= acc[10] <= acc[30]

# 3. A bigram table from the prompts alone, against the family's.
own = build_bigram([p for p, _ in pairs], len(fam.mag.bigram))
for name, table in (("family", fam.mag.bigram), ("prompts only", own)):
    s = score(mag_proposer(MaG(table, 10), 10, match=False), pairs[:20])
    print(f"ex3 bigram only, {name} table: hit rate {s['hit_rate']:.3f}, mean accepted {s['mean_accepted']:.3f}")

# 4. Prompt lookup with 1-grams only: size 2 already falls back to 1, so the same positions get a proposal,
#    but the first occurrence of the last token predicts worse.
for ng in (2, 1):
    s = score(prompt_lookup_proposer(10, ng), pairs[:20])
    print(f"ex4 max_matching_ngram_size={ng}: hit rate {s['hit_rate']:.3f}, mean accepted {s['mean_accepted']:.3f}, "
          f"no proposal {s['no_proposal']:.3f}")
