"""csd_lib.zoo.tokenizer: the byte-level BPE tokenizer shared by the tiny families, trained on a few lines."""
import pytest

from csd_lib.zoo.recipes import SPECIAL_TOKENS
from csd_lib.zoo.tokenizer import load_tokenizer, train_tokenizer

TEXTS = ["Noah has 9 cookies. He gets 2 packs with 9 cookies in each.",
         "Emma has 4 apples.\nShe buys 3 more apples. How many apples does Emma have now?"] * 20


@pytest.fixture(scope="module")
def tok():
    return train_tokenizer(TEXTS, vocab_size=320)


def test_special_tokens_have_the_first_ids(tok):
    assert [tok.convert_tokens_to_ids(t) for t in SPECIAL_TOKENS] == [0, 1, 2, 3]
    assert (tok.pad_token_id, tok.eos_token_id, tok.unk_token_id, tok.bos_token_id) == (0, 1, 2, 3)


def test_round_trips_any_text_exactly(tok):
    # byte level: text the training never saw (other scripts, emoji, tabs, double spaces) still round-trips
    for text in ["Noah has 9 cookies.", "  two  spaces\tand a tab\n", "Größe: 5 € — ünïcode 🍪", "x"]:
        ids = tok.encode(text)
        assert tok.decode(ids) == text
        assert 2 not in ids  # never <unk>


def test_adds_no_special_tokens_and_learns_merges(tok):
    ids = tok.encode("cookies")
    assert 0 not in ids and 1 not in ids and 3 not in ids  # no BOS, no EOS of its own
    assert len(ids) < len("cookies")  # a frequent word is merged, not spelled byte by byte
    assert len(tok.encode("zqxj")) == 4  # unseen letters stay bytes
    assert len(tok) <= 320


def test_save_and_load_offline(tok, tmp_path):
    tok.save_pretrained(tmp_path / "tok")
    back = load_tokenizer(tmp_path / "tok")
    text = "Emma has 12 apples.\n"
    assert back.encode(text) == tok.encode(text) and back.decode(back.encode(text)) == text
    assert back.eos_token == "</s>" and back.pad_token == "<pad>"
