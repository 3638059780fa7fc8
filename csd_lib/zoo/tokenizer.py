"""The one byte-level BPE tokenizer shared by every tiny model of both families.

It adds no special tokens on its own: a T5 encoder input is the prompt tokens as they
are, a T5 decoder starts from ``<pad>`` (as in real T5), and a decoder-only input is the
prompt tokens with no BOS. Every target text ends with ``</s>``.
"""
from __future__ import annotations

from pathlib import Path

from csd_lib.zoo.recipes import SPECIAL_TOKENS, VOCAB_SIZE


def train_tokenizer(texts, vocab_size: int = VOCAB_SIZE):
    """A byte-level BPE ``PreTrainedTokenizerFast`` trained on ``texts`` (round-trips exactly)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=SPECIAL_TOKENS,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  show_progress=False)
    tok.train_from_iterator(texts, trainer=trainer)
    return PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<pad>", eos_token="</s>",
                                   unk_token="<unk>", bos_token="<s>",
                                   clean_up_tokenization_spaces=False)


def load_tokenizer(path: str | Path):
    """Load a saved tokenizer directory offline."""
    from transformers import PreTrainedTokenizerFast
    return PreTrainedTokenizerFast.from_pretrained(str(path))
