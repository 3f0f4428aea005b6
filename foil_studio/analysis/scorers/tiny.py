"""What the families' test kits share: tiny random configurations and offline tokenizers.

Each family module that scores pairs offers a test kit beside its ``load`` (named by its record's
``test_kit``): ``tiny_model(folder)`` saves a random model of the family's architecture with its
processor, as a user's local copy is saved, and ``reference_score(folder, image, caption)`` scores
one pair by a loop written from the library's documented API (fp32, one pair at a time). The
generic tests (`tests/test_scorer_families.py`, `tests/test_precision_choice.py`) read every
family's kit from its record, so a new family is tested by adding its module and its record.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

from transformers import BertTokenizer, PreTrainedTokenizerFast

WORDS = "a an the red blue green yellow small large big cube sphere ball cylinder left right of on under behind and"
SPECIAL = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "[ENC]"]
SMALL = {"hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 4, "intermediate_size": 48}
SPREAD = 0.3  # a wider init than the default 0.02, so random scores differ by more than float noise


def bert_tokenizer(folder: Path) -> BertTokenizer:
    """A WordPiece tokenizer over `WORDS` with BERT's special tokens and BLIP's ``[ENC]``."""
    vocab = folder / "vocab.txt"
    vocab.write_text("\n".join(SPECIAL + WORDS.split()) + "\n")
    return BertTokenizer(str(vocab), additional_special_tokens=["[ENC]"])


def word_tokenizer(words: str) -> PreTrainedTokenizerFast:
    """A word-level tokenizer built offline with the tokenizers library (LLaVA's special tokens, then
    `WORDS` and `words`)."""
    from tokenizers import Tokenizer, models, pre_tokenizers

    names = ["<pad>", "<unk>", "<s>", "</s>", "<image>", *WORDS.split(), *words.split()]
    core = Tokenizer(models.WordLevel({w: i for i, w in enumerate(dict.fromkeys(names))}, unk_token="<unk>"))
    core.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.WhitespaceSplit(), pre_tokenizers.Punctuation()])
    return PreTrainedTokenizerFast(
        tokenizer_object=core, unk_token="<unk>", pad_token="<pad>", bos_token="<s>", eos_token="</s>",
        extra_special_tokens={"image_token": "<image>"},
    )  # fmt: skip


@functools.cache
def reference_model(folder: Path, model_class: Any, processor_class: Any) -> tuple[Any, Any]:
    """A reference's model (fp32, eval) and processor, loaded once per folder, as a user's script
    loads them once before its loop over pairs."""
    return model_class.from_pretrained(folder).eval(), processor_class.from_pretrained(folder)
