"""BLIP-2 image-text matching as LAVIS scores it: the softmax probability of "match" from the
Q-Former's ITM head.

Read from LAVIS's ``lavis/models/blip2_models/blip2_image_text_matching.py`` (``Blip2ITM.forward``
with ``match_head="itm"``, github.com/salesforce/LAVIS at 020aad3): the caption goes through the
text processor LAVIS's ITM models evaluate with, ``blip_caption`` (``BlipCaptionProcessor.pre_caption``
in ``lavis/processors/blip_processors.py``: ``lavis_caption`` here), and is tokenized to at most
``max_txt_len`` = 32 tokens; the learned query tokens and the caption's tokens go through the
Q-Former together, the queries cross-attending to the (layer-normed) vision tokens; the ITM head
reads each query's output, its two logits are averaged over the queries, and LAVIS's ITM example
scores ``softmax(itm_logits)[:, 1]``. Transformers' ``Blip2ForImageTextRetrieval`` with
``use_image_text_matching_head=True`` computes the same logits; here the vision tokens are computed
once per distinct image and the captions' token ids once per caption, and only the Q-Former runs per
pair.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch
from PIL import Image
from transformers import Blip2Config, Blip2ForImageTextRetrieval, Blip2Processor, BlipImageProcessor

from foil_studio.analysis.scorers import base, tiny
from foil_studio.analysis.scorers.base import weights_folder

MAX_TOKENS = 32  # LAVIS's max_txt_len for BLIP-2's Q-Former captions
MAX_WORDS = 50  # blip_caption's max_words
# The characters blip_caption replaces by a space, after lower-casing the caption
LAVIS_PUNCTUATION = re.compile(r"([.!\"()*#:;~])")


def lavis_caption(caption: str) -> str:
    """A caption as LAVIS's ``blip_caption`` processor hands it to BLIP-2: lower case, its
    ``. ! " ( ) * # : ;  ~`` replaced by spaces, runs of white space made one space, ends trimmed,
    at most 50 words.

    >>> lavis_caption('A Dog (brown) sits: "left" of the CAT.')
    'a dog brown sits left of the cat'
    """
    text = re.sub(r"\s{2,}", " ", LAVIS_PUNCTUATION.sub(" ", caption.lower())).rstrip("\n").strip(" ")
    words = text.split(" ")
    return " ".join(words[:MAX_WORDS]) if len(words) > MAX_WORDS else text


class Blip2ItmScorer:
    """A loaded BLIP-2 retrieval model scoring pairs by LAVIS's ITM rule."""

    def __init__(self, model: Blip2ForImageTextRetrieval, processor: Blip2Processor, device: torch.device) -> None:
        self.model, self.processor, self.device = model, processor, device
        self.dtype = next(model.vision_model.parameters()).dtype
        self.qformer_dtype = model.query_tokens.dtype  # transformers keeps the Q-Former in fp32
        self.pad_id = processor.tokenizer.pad_token_id or 0

    @torch.inference_mode()
    def prepare_images(self, images: list[Image.Image]) -> list[torch.Tensor]:
        """The vision tokens the queries cross-attend to (after the vision model's final layer norm)."""
        pixels = self.processor.image_processor(images, return_tensors="pt").pixel_values
        tokens = self.model.vision_model(pixel_values=pixels.to(self.device, self.dtype)).last_hidden_state
        return list(tokens.to(self.qformer_dtype))

    @torch.inference_mode()
    def prepare_texts(self, texts: list[str]) -> list[torch.Tensor]:
        """Each caption's token ids after LAVIS's text processor (`lavis_caption`), cut at 32 tokens
        as LAVIS cuts them (no image placeholder tokens: the Q-Former reads the queries itself)."""
        captions = [lavis_caption(text) for text in texts]
        encoded = self.processor.tokenizer(captions, truncation=True, max_length=MAX_TOKENS)
        return [torch.tensor(ids, device=self.device) for ids in encoded.input_ids]

    @torch.inference_mode()
    def score_pairs(self, images: Sequence[torch.Tensor], texts: Sequence[torch.Tensor]) -> list[float]:
        """softmax(ITM logits averaged over the query tokens)[match] per pair."""
        ids = torch.nn.utils.rnn.pad_sequence(list(texts), batch_first=True, padding_value=self.pad_id)
        lengths = torch.tensor([len(t) for t in texts], device=ids.device)
        text_mask = (torch.arange(ids.shape[1], device=ids.device)[None, :] < lengths[:, None]).long()
        vision = torch.stack(list(images))
        queries = self.model.query_tokens.expand(len(texts), -1, -1)
        n_queries = queries.shape[1]
        query_mask = torch.ones(len(texts), n_queries, dtype=torch.long, device=ids.device)
        hidden = self.model.qformer(
            query_embeds=self.model.embeddings(input_ids=ids, query_embeds=queries),
            query_length=n_queries,
            attention_mask=torch.cat([query_mask, text_mask], dim=1),
            encoder_hidden_states=vision,
            encoder_attention_mask=torch.ones(vision.shape[:-1], dtype=torch.long, device=ids.device),
        ).last_hidden_state
        logits = self.model.itm_head(hidden[:, :n_queries, :].to(self.model.itm_head.weight.dtype)).mean(dim=1)
        return torch.softmax(logits.float(), dim=-1)[:, 1].cpu().tolist()

    def image_encoder(self) -> torch.nn.Module:
        """The module that takes the images: its weights' dtype is the run's precision."""
        return self.model.vision_model

    def stamp(self) -> dict[str, Any]:
        """The text processor, the caption length limit and the number of query tokens."""
        return {
            "text_processor": f"LAVIS blip_caption (max_words {MAX_WORDS})",
            "max_text_tokens": MAX_TOKENS,
            "query_tokens": int(self.model.query_tokens.shape[1]),
        }


def load(ref: str, precision: str, device: torch.device) -> Blip2ItmScorer:
    """A BLIP-2 ITM model and its processor from a save_pretrained folder or a cached hub name."""
    folder = weights_folder(ref)
    model = base.load_whole(Blip2ForImageTextRetrieval, folder, precision)
    base.place(model, device)
    return Blip2ItmScorer(model, Blip2Processor.from_pretrained(folder), device)


def tiny_model(folder: Path) -> Path:
    """Test kit: a random BLIP-2 ITM model (Q-Former reading text, four query tokens) with its
    processor, saved as a user's local copy is; the processor puts the queries' image tokens before
    the caption, as the hub's BLIP-2 processors do, and the model drops them again."""
    tokenizer = tiny.bert_tokenizer(folder)
    small, spread = tiny.SMALL, tiny.SPREAD
    processor = Blip2Processor(BlipImageProcessor(size={"height": 32, "width": 32}), tokenizer, num_query_tokens=4)
    qformer = {**small, "vocab_size": len(tokenizer), "max_position_embeddings": 40, "encoder_hidden_size": 32}
    config = Blip2Config(
        vision_config={**small, "image_size": 32, "patch_size": 8, "initializer_range": spread},
        qformer_config={**qformer, "use_qformer_text_input": True, "cross_attention_frequency": 1, "pad_token_id": 0},
        text_config={"model_type": "opt", "hidden_size": 32, "num_hidden_layers": 1, "num_attention_heads": 4,
                     "ffn_dim": 48, "vocab_size": 64, "word_embed_proj_dim": 32},
        num_query_tokens=4,
        image_token_index=processor.tokenizer.convert_tokens_to_ids(str(processor.image_token)),
        image_text_hidden_size=16,
        initializer_range=spread,
    )  # fmt: skip
    torch.manual_seed(0)
    out = folder / "blip2"
    Blip2ForImageTextRetrieval(config).save_pretrained(out)
    processor.save_pretrained(out)
    return out


@torch.no_grad()
def reference_score(folder: Path, image: Image.Image, caption: str) -> float:
    """Test kit: LAVIS's BLIP-2 ITM score of one pair through transformers' documented API,
    softmax(ITM logits)[match], the caption through LAVIS's text processor first."""
    model, processor = tiny.reference_model(folder, Blip2ForImageTextRetrieval, Blip2Processor)
    inputs = processor(images=image, text=lavis_caption(caption), return_tensors="pt")
    return float(torch.softmax(model(**inputs, use_image_text_matching_head=True).logits_per_image, dim=-1)[0, 1])
