"""csd_lib.engine.prompts: the paper's templates, Vicuna's rewording, and the one prompt-to-ids rule."""
import pytest

from csd_lib.engine.prompts import GSM8K_PROMPT, MMLU_PROMPT, PROMPT_STYLES, format_prompt, prompt_ids
from csd_lib.families.toy import toy_tokenizer

SYSTEM = ("A chat between a curious user and an artificial intelligence assistant. "
          "The assistant gives helpful, detailed, and polite answers to the user's questions.")


def test_plain_leaves_the_text_alone():
    assert format_prompt("anything\n at all ") == "anything\n at all "
    assert format_prompt(GSM8K_PROMPT.format(question="Q?"), "plain") == \
        "Reason the math question below step by step. Question: Q?.\n Answer: "


def test_vicuna_rewords_gsm8k_as_the_official_code():
    text = GSM8K_PROMPT.format(question="Tom has 3 apples. How many?")
    # the official Vicuna wording: no "below", no period after the question
    want = (f"{SYSTEM} USER: Reason the math question step by step. Question: Tom has 3 apples. How many?\n"
            " Answer:  ASSISTANT:")
    assert format_prompt(text, "vicuna-v1.1") == want


def test_vicuna_rewords_mmlu():
    text = MMLU_PROMPT.format(q="2+2?", a="1", b="2", c="3", d="4")
    want = (f"{SYSTEM} USER: Answer the question step by step: Question: 2+2?\n(A) 1 (B) 2 (C) 3 (D) 4\n Answer: \n"
            " ASSISTANT:")
    assert format_prompt(text, "vicuna-v1.1") == want


def test_vicuna_wraps_any_other_text():
    assert format_prompt("Hello there", "vicuna-v1.1") == f"{SYSTEM} USER: Hello there ASSISTANT:"
    # only a whole GSM8K prompt is reworded: the prefix alone is wrapped as it is
    pre = "Reason the math question below step by step. Question: x"
    assert format_prompt(pre, "vicuna-v1.1") == f"{SYSTEM} USER: {pre} ASSISTANT:"


def test_unknown_style_names_the_styles():
    assert PROMPT_STYLES == ("plain", "vicuna-v1.1")
    with pytest.raises(ValueError, match=r"unknown prompt style 'chatml'; use one of \('plain', 'vicuna-v1.1'\)"):
        format_prompt("x", "chatml")


def test_prompt_ids_keep_the_tokenizers_special_tokens():
    # the toy tokenizer: word wN is id N, </s> is 1; the seq2seq one appends </s>, as T5's does
    assert prompt_ids(toy_tokenizer(16, seq2seq=True), "w5 w7 w5") == [5, 7, 5, 1]
    assert prompt_ids(toy_tokenizer(16, seq2seq=False), "w5 w7 w5") == [5, 7, 5]
    assert prompt_ids(toy_tokenizer(16, seq2seq=False), "w5 zz") == [5, 2]  # unknown word: <unk>


def test_prompt_ids_apply_the_style_first():
    tok = toy_tokenizer(16, seq2seq=False)
    # the Vicuna template's words are unknown to the toy vocabulary: <unk> each, then the prompt's own ids
    ids = prompt_ids(tok, "w9", "vicuna-v1.1")
    n_words = len(format_prompt("w9", "vicuna-v1.1").split())
    assert len(ids) == n_words and ids.count(9) == 1 and set(ids) == {2, 9}
