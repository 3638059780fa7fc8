"""Medusa-1 heads: shapes, init, save/load, candidate trees, and the shipped tiny-llama heads."""
import itertools
import json
import math

import pytest
import torch

from csd_lib import config
from csd_lib.families import tasks
from csd_lib.families.toy import toy_model
from csd_lib.zoo import medusa as M


@pytest.fixture
def target():
    return toy_model("llama", 48, "target", 0, torch.float32)   # hidden 32, vocab 48


def _perturbed(heads, seed=0):
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in heads.parameters():
            p.add_(0.3 * torch.randn(p.shape, generator=g))
    return heads


def test_shapes_and_bad_hidden(target):
    heads = M.MedusaHeads.from_target(target, n_heads=3)
    h = torch.randn(5, 32)
    assert heads(h).shape == (3, 5, 48)
    assert M.medusa_logits(heads, h).shape == (3, 5, 48)
    assert heads(torch.randn(2, 5, 32)).shape == (3, 2, 5, 48)
    with pytest.raises(ValueError, match=r"\(rows, 32\)"):
        M.medusa_logits(heads, torch.randn(5, 31))
    with pytest.raises(ValueError, match="n_heads"):
        M.MedusaHeads(32, 48, 0)


def test_untrained_heads_equal_the_base_head(target):
    heads = M.MedusaHeads.from_target(target, n_heads=4)
    h = torch.randn(7, 32)
    base = target.get_output_embeddings()(h)                          # (7, V)
    out = M.medusa_logits(heads, h)                                   # (4, 7, V)
    for i in range(4):
        assert torch.equal(out[i], base)
    # and they stop being equal once a block is non-zero
    with torch.no_grad():
        heads.blocks[1].weight.fill_(0.1)
    out = M.medusa_logits(heads, h)
    assert torch.equal(out[0], base) and not torch.allclose(out[1], base)


def test_save_load_round_trip(target, tmp_path):
    from safetensors import safe_open
    heads = _perturbed(M.MedusaHeads.from_target(target, n_heads=2))
    heads.trees = {3: [(0,), (1,), (0, 0)]}
    M.save_medusa(heads, tmp_path / "m", {"note": "test"})
    assert sorted(p.name for p in (tmp_path / "m").iterdir()) == ["config.json", "model.safetensors",
                                                                   "train_meta.json"]
    with safe_open(str(tmp_path / "m" / "model.safetensors"), "pt") as f:
        assert {f.get_tensor(k).dtype for k in f.keys()} == {torch.float16}
    loaded = M.load_medusa(tmp_path / "m", target=target)
    assert {p.dtype for p in loaded.parameters()} == {torch.float32}
    assert loaded.trees == {3: [(0,), (1,), (0, 0)]}
    h = torch.randn(6, 32)
    a, b = M.medusa_logits(heads, h), M.medusa_logits(loaded, h)
    assert torch.allclose(a, b, rtol=1e-2, atol=2e-2)                # fp16 storage
    rounded = M.MedusaHeads(32, 48, 2)
    rounded.load_state_dict({k: v.half().float() for k, v in heads.state_dict().items()})
    assert torch.allclose(M.medusa_logits(rounded, h), b, atol=1e-5)  # exactly the fp16 weights
    assert json.loads((tmp_path / "m" / "train_meta.json").read_text()) == {"note": "test"}
    assert not list((tmp_path / "m").glob("*.tmp"))


def test_load_errors(target, tmp_path):
    with pytest.raises(ValueError, match="no Medusa heads"):
        M.load_medusa(tmp_path / "nothing")
    M.save_medusa(M.MedusaHeads.from_target(target, 2), tmp_path / "m", {})
    other = toy_model("llama", 48, "base", 0, torch.float32)      # hidden 16
    with pytest.raises(ValueError, match="hidden size 32.*hidden size 16"):
        M.load_medusa(tmp_path / "m", target=other)
    cfg_path = tmp_path / "m" / "config.json"
    cfg = json.loads(cfg_path.read_text())
    cfg_path.write_text(json.dumps({**cfg, "heads": 3}))
    with pytest.raises(ValueError, match="do not match its config.json"):
        M.load_medusa(tmp_path / "m")
    cfg_path.write_text(json.dumps({"model_type": "llama"}))
    with pytest.raises(ValueError, match="not a Medusa-1 config"):
        M.load_medusa(tmp_path / "m")


def test_head_labels():
    y = M.head_labels([5, 6, 7, 8], 3)
    assert y.tolist() == [[6, 7, 8], [7, 8, -100], [8, -100, -100], [-100, -100, -100]]


def test_captured_hidden_gives_the_generated_tokens(target):
    """The engine's contract: the output layer's input at a row, through the LM head, is that row's logits."""
    prompts = [[5, 9, 11], [7, 3, 20, 21, 30]]
    for p, (cont, hid) in zip(prompts, M.greedy_with_hidden(target, prompts, max_new_tokens=6)):
        assert hid.shape == (len(cont), 32)
        assert target.get_output_embeddings()(hid).argmax(-1).tolist() == cont
    ids = torch.tensor([prompts[1]])
    with M.capture_hidden(target) as caps, torch.no_grad():
        full = target(input_ids=ids).logits[0]                        # (5, V)
        kept = target(input_ids=ids, logits_to_keep=2).logits[0]      # (2, V)
    assert caps[0].shape == (1, 5, 32) and caps[1].shape == (1, 2, 32)
    assert torch.allclose(caps[0][0, -2:], caps[1][0], atol=1e-6)
    assert torch.allclose(full[-2:], kept, atol=1e-5)


def _table():
    g = torch.Generator().manual_seed(1)
    acc = torch.rand(4, 5, generator=g) * torch.tensor([0.6, 0.2, 0.1, 0.05, 0.05])
    return acc.tolist()


def test_standard_tree_is_the_best_parent_closed_set():
    acc = _table()
    tree = M.standard_tree(acc, 20)
    assert len(tree) == len(set(tree)) == 20
    assert M.standard_tree(acc, 20) == tree
    assert all(p[:-1] in tree[:tree.index(p)] for p in tree if len(p) > 1)  # parent earlier
    def estimate(p):  # a node's estimated acceptance: the product of its ranks' accuracies
        return math.prod(acc[i][r] for i, r in enumerate(p))
    est = [estimate(p) for p in tree]
    assert est == sorted(est, reverse=True)
    every = [p for d in range(1, 5) for p in itertools.product(range(5), repeat=d)]
    best = sorted(every, key=lambda p: -estimate(p))[:20]
    assert set(tree) == set(best)   # distinct random products: the 20 best nodes are parent-closed
    assert M.standard_tree(acc, 3) == tree[:3]


def test_standard_tree_ties_and_depth():
    acc = [[0.5, 0.5], [1.0, 0.0]]
    assert M.standard_tree(acc, 4) == [(0,), (1,), (0, 0), (1, 0)]
    assert len(M.standard_tree(acc, 6)) == 6
    with pytest.raises(ValueError, match=r"\[1, 6\]"):
        M.standard_tree(acc, 7)
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        M.standard_tree([[1.5]], 1)


def test_tree_candidates():
    logits = torch.tensor([[0.0, 3.0, 2.0, 1.0],      # head 0 ranks: 1, 2, 3, 0
                           [5.0, 0.0, 1.0, 4.0]])     # head 1 ranks: 0, 3, 2, 1
    tree = [(0,), (1,), (0, 0), (0, 1), (1, 0)]
    assert M.tree_candidates(logits, tree) == [(1,), (2,), (1, 0), (1, 3), (2, 0)]
    assert M.tree_candidates(logits[:, None], tree[:2]) == [(1,), (2,)]
    with pytest.raises(ValueError, match="only 1 heads"):
        M.tree_candidates(logits[:1], tree)


def test_shipped_heads_match_their_card():
    from csd_lib.zoo.card import load_model
    folder = config.MODELS_DIR / "tiny-llama-medusa"
    model, tok = load_model("tiny-llama-target")
    heads = M.load_medusa(folder, target=model)
    meta = json.loads((folder / "train_meta.json").read_text())
    assert heads.n_heads == meta["n_heads"] and set(heads.trees) == {16, 32}
    assert all(p[:-1] in t for t in heads.trees.values() for p in t if len(p) > 1)
    card = meta["eval"]["synth-gsm8k"]["topk"]["1"][0]
    prompts = [e.prompt for e in tasks.load_task("synth-gsm8k", "val", 5)]
    ev = M.evaluate_heads(heads, model, tok, prompts, max_rank=1)
    assert ev["base_top1"] > 0.98
    assert abs(ev["topk"][1][0] - card) <= 0.1, (ev["topk"][1][0], card)
