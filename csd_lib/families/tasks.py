"""Tasks with the paper's prompts: real GSM8K/MMLU loaders and two synthetic look-alikes.

The synthetic tasks are small enough for a ~10M-parameter model trained for an hour on a
CPU to learn, yet keep the input/output overlap profile that matters for Max-Gram:

- ``synth-gsm8k``: multi-step arithmetic word problems (2 to 6 steps). As in GSM8K, the
  numbers of the question reappear in the step-by-step solution, which ends with
  ``The answer is N.``
- ``synth-mmlu``: 4-option multiple choice drawn from a small knowledge base of
  templated facts. The reasoning quotes option texts and fact words from the question
  and ends with ``The answer is (X).``

``spec-bench`` reads a local copy of Spec-Bench's ``question.jsonl`` (:func:`read_spec_bench`): the first
turn of each question, its ``category`` as the example's task, for real families (never downloaded).

Every example is a pure function of ``(task, split, seed, index)``. The splits are made
disjoint by prompt: ``train`` and ``val`` drop any prompt that is in the bundled ``test``
split (and ``train`` also drops ``val`` prompts).
"""
from __future__ import annotations

import csv
import importlib.util
import json
import logging
import random
import re
from dataclasses import asdict, dataclass, fields
from pathlib import Path

from .. import config
from ..fileio import read_jsonl
from ..engine.prompts import GSM8K_PROMPT, MMLU_PROMPT
from .task_choice import EMBEDDED_PREFIX

log = logging.getLogger(__name__)


SPEC_BENCH = "spec-bench"  # Spec-Bench's questions from a local question.jsonl (read_spec_bench)
TASKS = ("gsm8k", "mmlu", "synth-gsm8k", "synth-mmlu", SPEC_BENCH)
SPLITS = ("train", "val", "test")
N_BUNDLED = 200  # examples in each bundled synthetic test split
_SPLIT_SALT = {"train": 1_000_003, "val": 2_000_003, "test": 3_000_017}


@dataclass
class Example:
    """One prompt with its gold solution text and final answer."""
    prompt: str
    reference: str  # gold solution text (the training target); may be "" (MMLU dev)
    answer: str     # final answer, e.g. "18" or "B"
    task: str       # "gsm8k", "mmlu", "synth-gsm8k" or "synth-mmlu"
    source: str     # where it came from, e.g. "synthetic:test:seed0:17" or a file path


# --------------------------------------------------------------------------- answers
_NUM_RE = re.compile(r"[Tt]he answer is:?\s*\$?\s*(-?[\d,]*\.?\d+)")
_CHOICE_RE = re.compile(r"[Tt]he answer is:?\s*\(?([A-D])\)")


def answer_of(text: str, task: str) -> str | None:
    """The final answer in a generated text (the last "The answer is ..."), or None."""
    kind = _kind(task)
    if kind == "gsm8k":
        hits = _NUM_RE.findall(text)
        if not hits:
            return None
        num = hits[-1].replace(",", "")
        if "." in num:
            num = num.rstrip("0").rstrip(".") or "0"
        return num
    hits = _CHOICE_RE.findall(text)
    return hits[-1] if hits else None


def is_correct(text: str, example: Example) -> bool:
    """Whether the final answer in ``text`` matches the example's answer."""
    return answer_of(text, example.task) == example.answer


def _kind(task: str) -> str:
    if task in ("gsm8k", "synth-gsm8k"):
        return "gsm8k"
    if task in ("mmlu", "synth-mmlu"):
        return "mmlu"
    raise ValueError(f"unknown task {task!r}; valid names: {', '.join(TASKS)}")


# --------------------------------------------------------------------------- synth-gsm8k
_NAMES = [("Mia", "she"), ("Tom", "he"), ("Ava", "she"), ("Leo", "he"), ("Zoe", "she"),
          ("Sam", "he"), ("Lily", "she"), ("Ben", "he"), ("Emma", "she"), ("Max", "he"),
          ("Nora", "she"), ("Jack", "he"), ("Ella", "she"), ("Owen", "he"), ("Ruby", "she"),
          ("Noah", "he")]
_OBJECTS = ["apples", "books", "pens", "cookies", "stickers", "marbles", "cards", "eggs",
            "shells", "coins", "toys", "flowers", "stamps", "candles", "balls", "cups"]
_CONTAINERS = ["bags", "boxes", "packs", "jars", "baskets"]
_PLACES = ["store", "market", "fair", "shop"]


def _gsm_ops(rng: random.Random, value: int, name: str, pron: str, obj: str,
             friends: list[str]) -> tuple[str, list[str], int] | None:
    """One operation: (question sentence, solution sentences, new value) or None."""
    kind = rng.choice(["add", "add", "sub", "sub", "pack", "mul", "div", "lose"])
    if kind == "add":
        k = rng.randint(2, 19)
        r = value + k
        q = f"{pron.capitalize()} buys {k} more {obj} at the {rng.choice(_PLACES)}."
        s = [f"{pron.capitalize()} buys {k} more, so {pron} has {value} + {k} = {r} {obj}."]
    elif kind == "sub":
        if value < 3:
            return None
        k = rng.randint(1, min(19, value - 1))
        r = value - k
        friend = friends.pop() if friends else "a friend"
        q = f"{pron.capitalize()} gives {k} {obj} to {friend}."
        s = [f"{pron.capitalize()} gives {k} away, so {pron} has {value} - {k} = {r} {obj}."]
    elif kind == "lose":
        if value < 3:
            return None
        k = rng.randint(1, min(12, value - 1))
        r = value - k
        q = f"Then {pron} loses {k} of the {obj}."
        s = [f"{pron.capitalize()} loses {k}, so {pron} has {value} - {k} = {r} {obj}."]
    elif kind == "pack":
        c = rng.choice(_CONTAINERS)
        n, m = rng.randint(2, 6), rng.randint(2, 9)
        p = n * m
        r = value + p
        q = f"{pron.capitalize()} gets {n} {c} with {m} {obj} in each."
        s = [f"The {c} hold {n} * {m} = {p} {obj}.",
             f"So {pron} has {value} + {p} = {r} {obj}."]
    elif kind == "mul":
        k = rng.choice([2, 2, 3, 4])
        r = value * k
        word = {2: "twice", 3: "three times", 4: "four times"}[k]
        q = f"Later {pron} ends up with {word} as many {obj}."
        s = [f"{word.capitalize()} as many is {value} * {k} = {r} {obj}."]
    else:  # div
        ks = [k for k in (2, 3, 4, 5) if value % k == 0 and value // k >= 1]
        if not ks or value < 4:
            return None
        k = rng.choice(ks)
        r = value // k
        q = f"{pron.capitalize()} splits the {obj} into {k} equal groups and keeps one group."
        s = [f"One group is {value} / {k} = {r} {obj}, so {pron} has {r} {obj}."]
    if r > 199 or r < 0:
        return None
    return q, s, r


def make_synth_gsm8k(rng: random.Random) -> tuple[str, str, str]:
    """One synthetic GSM8K-style problem: (question, solution, answer)."""
    while True:
        name, pron = rng.choice(_NAMES)
        obj = rng.choice(_OBJECTS)
        friends = [n for n, _ in rng.sample(_NAMES, 5) if n != name]
        start = rng.randint(2, 19)
        n_steps = rng.randint(2, 6)  # arithmetic lines in the solution
        value, qs, sol = start, [f"{name} has {start} {obj}."], [f"{name} starts with {start} {obj}."]
        n_lines = 0
        for _ in range(20):
            if n_lines >= n_steps:
                break
            op = _gsm_ops(rng, value, name, pron, obj, friends)
            if op is None or n_lines + len(op[1]) > n_steps:
                continue
            q, s, value = op
            qs.append(q)
            sol.extend(s)
            n_lines += len(s)
        if n_lines < 2:
            continue
        qs.append(f"How many {obj} does {name} have now?")
        sol.append(f"The answer is {value}.")
        return " ".join(qs), " ".join(sol), str(value)


# --------------------------------------------------------------------------- synth-mmlu
_CATEGORIES = {
    "fruit": ["apple", "banana", "cherry", "grape", "lemon", "mango", "peach", "plum"],
    "animal": ["dog", "cat", "horse", "rabbit", "tiger", "wolf", "bear", "mouse"],
    "tool": ["hammer", "saw", "wrench", "drill", "shovel", "chisel"],
    "planet": ["Mars", "Venus", "Jupiter", "Saturn", "Mercury", "Neptune"],
    "metal": ["iron", "copper", "gold", "silver", "zinc", "tin"],
    "color": ["red", "blue", "green", "purple", "orange", "brown"],
    "vehicle": ["car", "bus", "train", "bicycle", "truck", "boat"],
    "instrument": ["piano", "violin", "guitar", "drum", "flute", "trumpet"],
}
_LEGS = {"spider": 8, "ant": 6, "bee": 6, "dog": 4, "cat": 4, "horse": 4, "bird": 2,
         "duck": 2, "snake": 0, "fish": 0, "crab": 10, "octopus": 8}
_COLORS = {"banana": "yellow", "grass": "green", "snow": "white", "coal": "black",
           "the sky": "blue", "a tomato": "red", "a carrot": "orange", "chocolate": "brown",
           "a lemon": "yellow", "milk": "white", "a leaf": "green", "a cherry": "red"}
_UNITS = [("days", "week", 7), ("months", "year", 12), ("hours", "day", 24),
          ("minutes", "hour", 60), ("legs", "table", 4), ("wheels", "car", 4),
          ("sides", "triangle", 3), ("sides", "square", 4), ("eggs", "dozen", 12)]
_CAPITALS = {"France": "Paris", "Italy": "Rome", "Spain": "Madrid", "Japan": "Tokyo",
             "Egypt": "Cairo", "Peru": "Lima", "Kenya": "Nairobi", "Norway": "Oslo",
             "Greece": "Athens", "Canada": "Ottawa", "Poland": "Warsaw", "Chile": "Santiago"}
_SIZES = ["mouse", "cat", "dog", "sheep", "horse", "cow", "elephant", "whale"]  # small -> large
_LETTERS = "ABCD"


def _an(word: str) -> str:
    return ("an " if word[0].lower() in "aeiou" else "a ") + word


def _place(rng: random.Random, right: str, wrong: list[str]) -> tuple[list[str], str]:
    options = wrong[:3] + [right]
    rng.shuffle(options)
    return options, _LETTERS[options.index(right)]


def make_synth_mmlu(rng: random.Random) -> tuple[str, list[str], str, str]:
    """One synthetic MMLU-style question: (question, options, reasoning, letter)."""
    kind = rng.choice(["category", "legs", "color", "unit", "capital", "size"])
    if kind == "category":
        cat, other = rng.sample(sorted(_CATEGORIES), 2)
        right = rng.choice(_CATEGORIES[cat])
        pool = [w for c in sorted(_CATEGORIES) if c != cat for w in _CATEGORIES[c]]
        wrong = rng.sample(pool, 3)
        options, letter = _place(rng, right, wrong)
        q = f"Which of the following is {_an(cat)}?"
        others = ", ".join(w for w in options if w != right)
        r = (f"{right.capitalize()} is {_an(cat)}. {others.capitalize()} are not {cat}s. "
             f"So {right} is {_an(cat)}.")
    elif kind == "legs":
        animals = rng.sample(sorted(_LEGS), 4)
        if len({_LEGS[a] for a in animals}) < 4:
            return make_synth_mmlu(rng)
        most = rng.random() < 0.5
        right = (max if most else min)(animals, key=_LEGS.get)
        options, letter = _place(rng, right, [a for a in animals if a != right])
        word = "most" if most else "fewest"
        q = f"Which of the following animals has the {word} legs?"
        facts = ", ".join(f"{_an(a)} has {_LEGS[a]} legs" for a in options)
        r = f"{facts.capitalize()}. So {_an(right)} has the {word} legs."
    elif kind == "color":
        thing = rng.choice(sorted(_COLORS))
        right = _COLORS[thing]
        wrong = rng.sample(sorted({c for c in _COLORS.values()} - {right}), 3)
        options, letter = _place(rng, right, wrong)
        q = f"What color is {thing}?"
        r = f"The color of {thing} is {right}. So {thing} is {right}."
    elif kind == "unit":
        small, big, per = rng.choice(_UNITS)
        n = rng.randint(2, 9 if per <= 12 else 4)
        right = per * n
        wrong_nums = sorted({right + per, abs(right - per) or per + 2, right + n, per + n} - {right})
        wrong = [str(x) for x in rng.sample(wrong_nums, 3)] if len(wrong_nums) >= 3 else \
            [str(right + d) for d in (1, 2, 3)]
        options, letter = _place(rng, str(right), wrong)
        q = f"How many {small} are in {n} {big}s?"
        r = f"There are {per} {small} in one {big}. So {n} {big}s have {n} * {per} = {right} {small}."
    elif kind == "capital":
        country = rng.choice(sorted(_CAPITALS))
        right = _CAPITALS[country]
        wrong = rng.sample(sorted(set(_CAPITALS.values()) - {right}), 3)
        options, letter = _place(rng, right, wrong)
        q = f"What is the capital of {country}?"
        r = f"The capital of {country} is {right}. So the answer is {right}."
    else:  # size
        animals = rng.sample(_SIZES, 4)
        big = rng.random() < 0.5
        right = (max if big else min)(animals, key=_SIZES.index)
        options, letter = _place(rng, right, [a for a in animals if a != right])
        word = "largest" if big else "smallest"
        order = sorted(options, key=_SIZES.index, reverse=big)
        q = f"Which of the following animals is the {word}?"
        r = f"From {word} to the others: {', '.join(order)}. So the {word} animal is {_an(right)}."
    return q, options, r, letter


# --------------------------------------------------------------------------- generation
def _synth_example(task: str, split: str, seed: int, index: int) -> Example:
    rng = random.Random(f"{task}|{split}|{seed}|{index}")
    src = f"synthetic:{split}:seed{seed}:{index}"
    if task == "synth-gsm8k":
        question, solution, ans = make_synth_gsm8k(rng)
        return Example(GSM8K_PROMPT.format(question=question), solution, ans, task, src)
    q, opts, reasoning, letter = make_synth_mmlu(rng)
    prompt = MMLU_PROMPT.format(q=q, a=opts[0], b=opts[1], c=opts[2], d=opts[3])
    return Example(prompt, f"{reasoning} The answer is ({letter}).", letter, task, src)


def generate_synthetic(task: str, split: str = "train", n: int = 100, seed: int = 0,
                       exclude: set[str] | None = None) -> list[Example]:
    """``n`` synthetic examples, deterministic in (task, split, seed), skipping ``exclude`` prompts."""
    if task not in ("synth-gsm8k", "synth-mmlu"):
        raise ValueError(f"unknown synthetic task {task!r}; use 'synth-gsm8k' or 'synth-mmlu'")
    if split not in SPLITS:
        raise ValueError(f"unknown split {split!r}; use one of {SPLITS}")
    exclude = exclude or set()
    out, seen, i = [], set(), 0
    while len(out) < n:
        ex = _synth_example(task, split, seed, i)
        i += 1
        if ex.prompt in exclude or ex.prompt in seen:
            continue
        seen.add(ex.prompt)
        out.append(ex)
        if i > 50 * n + 1000:
            raise RuntimeError(f"could not find {n} distinct {task} prompts for split {split}")
    return out


def bundled_path(task: str) -> Path:
    """The bundled test split file of a synthetic task."""
    return config.TASKS_DIR / f"{task}-test.jsonl"


def _write_bundled(tasks_dir: Path | None = None, n: int = N_BUNDLED) -> list[Path]:
    """Regenerate the bundled synthetic test splits (deterministic, seed 0)."""
    tasks_dir = Path(tasks_dir or config.TASKS_DIR)
    tasks_dir.mkdir(parents=True, exist_ok=True)
    paths = []
    for task in ("synth-gsm8k", "synth-mmlu"):
        path = tasks_dir / f"{task}-test.jsonl"
        with open(path, "w", encoding="utf-8") as f:
            for ex in generate_synthetic(task, "test", n, seed=0):
                f.write(json.dumps(asdict(ex), ensure_ascii=False) + "\n")
        paths.append(path)
    return paths


def read_examples(path: Path) -> list[Example]:
    """The examples of a task file written by :func:`write_bundled` (:func:`csd_lib.fileio.read_jsonl`)."""
    fix = "regenerate the bundled files with csd_lib.families.tasks.write_bundled()"
    rows = read_jsonl(path, "task file", fix)
    names = [f.name for f in fields(Example)]
    bad = next((i for i, row in rows if not isinstance(row, dict) or sorted(row) != sorted(names)), None)
    if bad is not None:
        raise ValueError(f"{path}:{bad} is not an example (keys {', '.join(names)}); {fix}")
    return [Example(**row) for _, row in rows]


def _held_out_prompts(task: str, split: str, seed: int) -> set[str]:
    """Prompts that ``split`` must not contain (the test split, and val for train)."""
    held = {ex.prompt for ex in _load_synth(task, "test", None, 0)}
    if split == "train":
        held |= {ex.prompt for ex in generate_synthetic(task, "val", N_BUNDLED, seed, held)}
    return held


def _load_synth(task: str, split: str, n: int | None, seed: int) -> list[Example]:
    if split == "test" and seed == 0:
        path = bundled_path(task)
        if path.is_file():
            exs = read_examples(path)
            if n is None or n <= len(exs):
                return exs[:n] if n is not None else exs
        return generate_synthetic(task, "test", n or N_BUNDLED, 0)
    if split == "test":
        return generate_synthetic(task, "test", n or N_BUNDLED, seed)
    held = _held_out_prompts(task, split, seed)
    return generate_synthetic(task, split, n or N_BUNDLED, seed, held)


# --------------------------------------------------------------------------- real datasets
def clean_gsm8k_answer(answer: str) -> tuple[str, str]:
    """A GSM8K answer as (reference, final answer).

    The ``<<...>>`` calculator annotations are removed and the trailing ``#### N`` is
    replaced by ``The answer is N.``, the ending our answer extractor expects.
    """
    body, _, final = answer.rpartition("####")
    final = final.strip().replace(",", "")
    body = re.sub(r"<<[^>]*>>", "", body).strip()
    return f"{body}\nThe answer is {final}.", final


def _gsm8k_rows_to_examples(rows, source: str) -> list[Example]:
    out = []
    for i, row in enumerate(rows):
        ref, final = clean_gsm8k_answer(row["answer"])
        out.append(Example(GSM8K_PROMPT.format(question=row["question"]), ref, final,
                           "gsm8k", f"{source}:{i}"))
    return out


def _mmlu_rows_to_examples(rows, source: str) -> list[Example]:
    out = []
    for i, (q, a, b, c, d, ans) in enumerate(rows):
        out.append(Example(MMLU_PROMPT.format(q=q, a=a, b=b, c=c, d=d), "", ans.strip(),
                           "mmlu", f"{source}:{i}"))
    return out


def _from_local(task: str, split: str, root: Path) -> list[Example] | None:
    if task == "gsm8k":
        path = root / "gsm8k" / f"{'train' if split == 'train' else 'test'}.jsonl"
        if not path.is_file():
            return None
        fix = "give a copy of openai/gsm8k's JSONL files (one {\"question\", \"answer\"} per line)"
        rows = read_jsonl(path, "GSM8K file", fix)
        bad = next((i for i, row in rows if not (isinstance(row, dict) and isinstance(row.get("question"), str)
                                                  and isinstance(row.get("answer"), str))), None)
        if bad is not None:
            raise ValueError(f"{path}:{bad} has no string 'question' and 'answer'; {fix}")
        rows = [row for _, row in rows]
        return _gsm8k_rows_to_examples(rows, str(path))
    files = sorted((root / "mmlu" / "dev").glob("*.csv"))
    if not files:
        return None
    out = []
    for path in files:
        with open(path, newline="", encoding="utf-8") as f:
            out.extend(_mmlu_rows_to_examples([r for r in csv.reader(f) if r], str(path)))
    return out


def _from_hub(task: str, split: str) -> list[Example] | None:
    try:
        import datasets
    except ImportError:
        log.info(f"load_task: the `datasets` package is not installed, so {task} cannot come from the HF hub; "
              f"`pip install datasets`, or set CSD_DATA_DIR to a folder with {task}/")
        return None
    try:
        if task == "gsm8k":
            ds = datasets.load_dataset("openai/gsm8k", "main",
                                       split="train" if split == "train" else "test")
            return _gsm8k_rows_to_examples(ds, "hub:openai/gsm8k")
        ds = datasets.load_dataset("cais/mmlu", "all", split="dev" if split != "test" else "test")
        rows = [(r["question"], *r["choices"], _LETTERS[r["answer"]]) for r in ds]
        return _mmlu_rows_to_examples(rows, "hub:cais/mmlu")
    except (ConnectionError, OSError, ValueError) as err:  # offline, missing cache, DNS
        log.info(f"load_task: the hub could not serve {task} ({type(err).__name__}); falling back")
        return None


def load_task(name: str, split: str = "test", n: int | None = None, seed: int = 0,
              at_most: bool = False, questions=None) -> list[Example]:
    """Examples of a task with the paper's prompt, first ``n`` of them.

    ``gsm8k``/``mmlu`` come from (1) ``config.data_dir()``, (2) the HF hub when not
    offline, (3) the synthetic look-alike's split of the same name as a stand-in (the
    bundled one for ``test``; a ``train`` request never gets test examples). For ``mmlu`` the local
    source is the dev split (5 rows per subject), whatever ``split`` is asked, and its
    references are empty (no gold reasoning). A GSM8K reference is the dataset's answer
    with the ``<<...>>`` calculator annotations removed and ``#### N`` replaced by
    ``The answer is N.`` (see ``clean_gsm8k_answer``). Synthetic tasks are deterministic in
    ``(split, seed)``; the ``test`` split with seed 0 is read from ``data/tasks/``.
    ``spec-bench`` has one split, ``test``: the questions file ``questions``, else
    ``CSD_DATA_DIR/spec_bench/question.jsonl`` (:func:`read_spec_bench`).
    A split of fixed size (a bundled test split, a dataset) holding fewer than ``n`` examples
    is a ValueError that says how many it holds, unless ``at_most`` (then: all of them).
    Logs one line naming the source used.
    """
    if name not in TASKS:
        raise ValueError(f"unknown task {name!r}; valid names: {', '.join(TASKS)}")
    if split not in SPLITS:
        raise ValueError(f"unknown split {split!r}; use one of {SPLITS}")
    if n is not None and (isinstance(n, bool) or not isinstance(n, int) or n < 1):
        raise ValueError(f"n must be an integer >= 1 or None (all), got {n!r}")
    if name.startswith("synth-"):
        n = _check_size(name, split, n, N_BUNDLED if split == "test" and seed == 0 else None, at_most)
        exs = _load_synth(name, split, n, seed)
        where = bundled_path(name) if split == "test" and seed == 0 and bundled_path(name).is_file() \
            else f"generated ({split}, seed {seed})"
        log.info(f"load_task: {name}/{split}: {len(exs)} examples from {where}")
        return exs
    if name == SPEC_BENCH:
        exs = read_spec_bench(spec_bench_path(questions, split))
        n = _check_size(name, split, n, len(exs), at_most)
        log.info(f"load_task: {name}: {len(exs[:n])} questions from {exs[0].source.rsplit(':', 1)[0]}")
        return exs[:n]
    root = config.data_dir()
    exs = _from_local(name, split, root) if root is not None else None
    where = f"local {root}"
    if exs is None and not config.HF_OFFLINE:
        exs = _from_hub(name, split)
        where = "the HF hub"
    if exs is None:
        synth = "synth-" + name
        n = _check_size(synth, split, n, N_BUNDLED if split == "test" else None, at_most)
        exs = _load_synth(synth, split, n, 0)
        why = "the network is off, HF_HUB_OFFLINE=1" if config.HF_OFFLINE else "the hub could not serve it"
        log.info(f"load_task: {name} is not available ({why}; set CSD_DATA_DIR to a local copy); "
              f"using the {'bundled' if split == 'test' else 'generated'} {synth} {split} split ({len(exs)} examples)")
        return exs
    n = _check_size(name, split, n, len(exs), at_most)
    exs = exs[:n] if n is not None else exs
    log.info(f"load_task: {name}/{split}: {len(exs)} examples from {where}")
    return exs


def _check_size(name: str, split: str, n: int | None, size: int | None, at_most: bool) -> int | None:
    """How many to take when ``n`` are asked of a split holding ``size`` (None: any number can be generated)."""
    if n is None or size is None or n <= size:
        return n
    if not at_most:
        raise ValueError(f"{name}/{split} holds {size} examples, {n} were asked for; pass n <= {size} "
                         f"(--n {size} on the command line)")
    return size


def corpus(split: str = "train", n: int = 1000, seed: int = 0,
           tasks: tuple[str, ...] = ("synth-gsm8k", "synth-mmlu")) -> list[Example]:
    """A training corpus: ``n`` synthetic examples per task, interleaved, held-out prompts excluded."""
    per = [_load_synth(t, split, n, seed) for t in tasks]
    return [ex for group in zip(*per) for ex in group]


def bigram_sources(task: str = "gsm8k") -> list[str]:
    """The source labels under which a cached bigram table is looked up before any corpus loads, best first, by
    the order :func:`load_task` follows: the real train split's where it can come (a local copy in
    ``CSD_DATA_DIR``, or the hub when online with ``datasets`` installed), else the synthetic one's. From the
    hub, the synthetic one's follows: a table built on a day the hub failed is used rather than asking the
    hub again (delete it to build from the real data)."""
    synth = f"synth-{task.removeprefix('synth-')}-train"
    root = config.data_dir()
    local = root is not None and (
        (root / "gsm8k" / "train.jsonl").is_file() if task == "gsm8k" else any((root / "mmlu" / "dev").glob("*.csv")))
    hub = not config.HF_OFFLINE and importlib.util.find_spec("datasets") is not None
    if task.startswith("synth-") or not (local or hub):
        return [synth]
    return [f"{task}-train"] if local else [f"{task}-train", synth]


def bigram_corpus(task: str = "gsm8k", n: int = 2000) -> tuple[list[str], str]:
    """Texts (prompt + reference) of a task's train split for a MaG bigram table, and their source.

    Only a train split is used, never a split that a benchmark scores: without the real data
    (no CSD_DATA_DIR, offline, or no ``datasets``) it is the synthetic look-alike's train split.
    The source is a short label for cache names: e.g. ``gsm8k-train`` or ``synth-gsm8k-train``.
    """
    exs = load_task(task, "train", n, at_most=True)
    real = exs and exs[0].task == task
    return [ex.prompt + ex.reference for ex in exs], f"{task if real else 'synth-' + task.removeprefix('synth-')}-train"


# --------------------------------------------------------------------------- Spec-Bench questions
SPEC_BENCH_FIX = ('each line must be a Spec-Bench question, {"question_id": N, "category": "...", "turns": ["..."]}, '
                  "as in Spec-Bench's data/spec_bench/question.jsonl")
SPEC_BENCH_FILE = Path("spec_bench") / "question.jsonl"  # under CSD_DATA_DIR, as in a Spec-Bench checkout's data/


def spec_bench_path(questions=None, split: str = "test") -> Path:
    """The Spec-Bench questions file to read: ``questions`` if given, else ``CSD_DATA_DIR/spec_bench/question.jsonl``;
    a ValueError when neither is there (the file is never downloaded) or a split other than ``test`` is asked."""
    if split != "test":
        raise ValueError(f"{SPEC_BENCH} has one split, test (Spec-Bench's questions), not {split!r}")
    if questions is not None:
        return Path(questions)
    root = config.data_dir()
    if root is None or not (root / SPEC_BENCH_FILE).exists():
        where = "CSD_DATA_DIR is not set" if root is None else f"{root / SPEC_BENCH_FILE} does not exist"
        raise ValueError(f"{SPEC_BENCH} reads Spec-Bench's question.jsonl from a local copy, and {where}; pass "
                         f"--spec-bench-questions PATH, or set CSD_DATA_DIR to a folder holding {SPEC_BENCH_FILE}")
    return root / SPEC_BENCH_FILE


def read_spec_bench(path) -> list[Example]:
    """Spec-Bench's questions from its ``question.jsonl`` (:func:`csd_lib.fileio.read_jsonl`): the first turn of
    each as the prompt, its ``category`` as the task, ``spec-bench:PATH:ID`` as the source (:func:`spec_bench_id`).
    A line without an integer ``question_id`` (or one seen before), a ``category`` or a first turn of text is a
    ValueError naming ``path:line``."""
    rows = read_jsonl(path, "Spec-Bench questions file", SPEC_BENCH_FIX)
    out, seen = [], {}
    for i, row in rows:
        if not isinstance(row, dict):
            raise ValueError(f"{path}:{i} is not a JSON object; {SPEC_BENCH_FIX}")
        qid, category, turns = row.get("question_id"), row.get("category"), row.get("turns")
        if not isinstance(turns, list) or not turns or not isinstance(turns[0], str) or not turns[0].strip():
            raise ValueError(f"{path}:{i} has no 'turns' list whose first turn is text; {SPEC_BENCH_FIX}")
        if isinstance(qid, bool) or not isinstance(qid, int):
            raise ValueError(f"{path}:{i} has question_id {qid!r}, not an integer; {SPEC_BENCH_FIX}")
        if qid in seen:
            raise ValueError(f"{path}:{i} repeats question_id {qid} of line {seen[qid]}; give each question its own id")
        if not isinstance(category, str) or not category.strip():
            raise ValueError(f"{path}:{i} has no 'category' text; {SPEC_BENCH_FIX}")
        seen[qid] = i
        out.append(Example(turns[0], "", "", category, f"{SPEC_BENCH}:{path}:{qid}"))
    if not out:
        raise ValueError(f"Spec-Bench questions file {path} holds no questions; {SPEC_BENCH_FIX}")
    return out


def spec_bench_id(source: str) -> int | None:
    """The Spec-Bench ``question_id`` of an example's (or a bench record's) source; None for other tasks' examples."""
    return int(source.rsplit(":", 1)[1]) if source.startswith(f"{SPEC_BENCH}:") else None


def spec_bench_note(family_name: str | None) -> str | None:
    """A note when ``spec-bench`` runs on an embedded tiny family, which was trained on the synthetic tasks only."""
    if family_name is not None and family_name.startswith(EMBEDDED_PREFIX):
        return (f"family '{family_name}' was trained on the synthetic tasks only; on Spec-Bench's questions its "
                f"drafters and target write text unlike their training data: use a real family for numbers to report")
    return None
