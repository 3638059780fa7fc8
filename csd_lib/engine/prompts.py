"""The paper's prompt templates and the one rule that turns a prompt into token ids.

FLAN-T5 and the tiny families read prompts as written (``plain``); Vicuna's are reworded as the
official code words them and wrapped in FastChat's v1.1 chat template (``vicuna-v1.1``).
"""
from __future__ import annotations

import logging

log = logging.getLogger(__name__)


GSM8K_PROMPT = "Reason the math question below step by step. Question: {question}.\n Answer: "

MMLU_PROMPT = "Question: {q}\n(A) {a} (B) {b} (C) {c} (D) {d}\n Answer: \n Let's think step by step. "

# Vicuna: the official code rewords the two task prompts and wraps them in FastChat's
# "vicuna_v1.1" conversation template (system line, " USER: ", " ASSISTANT:").
VICUNA_GSM8K_PROMPT = "Reason the math question step by step. Question: {question}\n Answer: "

VICUNA_MMLU_PREFIX, VICUNA_MMLU_SUFFIX = "Answer the question step by step: ", "\n Answer: \n"

VICUNA_SYSTEM = ("A chat between a curious user and an artificial intelligence assistant. "
                 "The assistant gives helpful, detailed, and polite answers to the user's questions.")

VICUNA_TEMPLATE = VICUNA_SYSTEM + " USER: {prompt} ASSISTANT:"

PROMPT_STYLES = ("plain", "vicuna-v1.1")

# --------------------------------------------------------------------------- prompt encoding
def format_prompt(text: str, style: str = "plain") -> str:
    """A prompt as the family's models expect it.

    ``plain`` leaves it alone (FLAN-T5, the tiny families). ``vicuna-v1.1`` rewords a
    GSM8K or MMLU prompt the way the official code words it for Vicuna and wraps any text in
    the FastChat v1.1 template.
    """
    if style == "plain":
        return text
    if style != "vicuna-v1.1":
        raise ValueError(f"unknown prompt style {style!r}; use one of {PROMPT_STYLES}")
    g_pre, g_post = GSM8K_PROMPT.split("{question}")
    m_post = MMLU_PROMPT.split("{d}")[1]
    if text.startswith(g_pre) and text.endswith(g_post):
        text = VICUNA_GSM8K_PROMPT.format(question=text[len(g_pre):len(text) - len(g_post)])
    elif text.startswith("Question: ") and text.endswith(m_post):
        text = VICUNA_MMLU_PREFIX + text[:len(text) - len(m_post)] + VICUNA_MMLU_SUFFIX
    return VICUNA_TEMPLATE.format(prompt=text)


def prompt_ids(tokenizer, text: str, style: str = "plain") -> list[int]:
    """Token ids of a prompt: the one rule for ``generate`` and the acceptance curves.

    The style's template, then the tokenizer with its special tokens (T5's ``</s>``,
    Llama's BOS), as the models saw prompts in training.
    """
    return list(tokenizer(format_prompt(text, style)).input_ids)
