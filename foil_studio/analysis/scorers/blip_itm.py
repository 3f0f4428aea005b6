"""BLIP image-text matching as ARO scores it: the ITM head's match logit plus the ITC cosine.

Read from ARO's ``model_zoo/blip_models.py`` (``get_retrieval_scores_batched`` and
``run_scores_batched``, github.com/mertyg/vision-language-models-are-bows at 81fdd20): captions
are tokenized to at most 35 tokens; the ITC text feature is read at ``[CLS]``; for the ITM pass the
first token is replaced by BLIP's ``[ENC]`` token, the text encoder cross-attends to every image
token, and the score is ``itm_head(h[CLS position])[1] + cos(image_feat, text_feat)``.
Transformers' ``BlipForImageTextRetrieval.forward`` keeps ``[CLS]`` for ITM (transformers issue
25629); here ``[ENC]`` is used whenever the tokenizer has it, and the run records which token was read.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from PIL import Image
from transformers import BlipConfig, BlipForImageTextRetrieval, BlipImageProcessor, BlipProcessor

from foil_studio.analysis.scorers import base, tiny
from foil_studio.analysis.scorers.base import weights_folder

MAX_TOKENS = 35  # ARO's max_length for BLIP captions
ENC_TOKEN = "[ENC]"


@dataclass(frozen=True)
class BlipImage:
    """An image's vision tokens (for ITM cross-attention) and its normalised ITC feature."""

    tokens: torch.Tensor
    feature: torch.Tensor


@dataclass(frozen=True)
class BlipText:
    """A caption's token ids (unpadded) and its normalised ITC feature."""

    ids: torch.Tensor
    feature: torch.Tensor


class BlipItmScorer:
    """A loaded BLIP retrieval model scoring pairs by ARO's rule."""

    def __init__(self, model: BlipForImageTextRetrieval, processor: BlipProcessor, device: torch.device) -> None:
        self.model, self.processor, self.device = model, processor, device
        self.dtype = next(model.parameters()).dtype
        vocab = processor.tokenizer.get_vocab()
        self.enc_id = vocab.get(ENC_TOKEN)
        self.pad_id = processor.tokenizer.pad_token_id or 0

    @torch.inference_mode()
    def prepare_images(self, images: list[Image.Image]) -> list[BlipImage]:
        """Vision tokens and ITC features, one per image."""
        pixels = self.processor.image_processor(images, return_tensors="pt").pixel_values
        tokens = self.model.vision_model(pixel_values=pixels.to(self.device, self.dtype)).last_hidden_state
        features = F.normalize(self.model.vision_proj(tokens[:, 0, :]), dim=-1)
        return [BlipImage(t, f) for t, f in zip(tokens, features)]

    @torch.inference_mode()
    def prepare_texts(self, texts: list[str]) -> list[BlipText]:
        """Token ids and ITC features (read at [CLS]), one per caption."""
        encoded = self.processor.tokenizer(
            texts, padding=True, truncation=True, max_length=MAX_TOKENS, return_tensors="pt"
        ).to(self.device)
        hidden = self.model.text_encoder(
            input_ids=encoded.input_ids, attention_mask=encoded.attention_mask
        ).last_hidden_state
        features = F.normalize(self.model.text_proj(hidden[:, 0, :]), dim=-1)
        lengths = encoded.attention_mask.sum(dim=1).tolist()
        return [BlipText(ids[:n], f) for ids, n, f in zip(encoded.input_ids, lengths, features)]

    @torch.inference_mode()
    def score_pairs(self, images: Sequence[BlipImage], texts: Sequence[BlipText]) -> list[float]:
        """ITM match logit (first token [ENC]) plus the ITC cosine, per pair."""
        ids, mask = self._padded([t.ids for t in texts])
        if self.enc_id is not None:
            ids[:, 0] = self.enc_id
        tokens = torch.stack([i.tokens for i in images])
        hidden = self.model.text_encoder(
            input_ids=ids,
            attention_mask=mask,
            encoder_hidden_states=tokens,
            encoder_attention_mask=torch.ones(tokens.shape[:-1], dtype=torch.long, device=self.device),
        ).last_hidden_state
        match = self.model.itm_head(hidden[:, 0, :])[:, 1]
        cosine = (torch.stack([i.feature for i in images]) * torch.stack([t.feature for t in texts])).sum(dim=-1)
        return (match.float() + cosine.float()).cpu().tolist()

    def _padded(self, rows: list[torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
        ids = torch.nn.utils.rnn.pad_sequence(rows, batch_first=True, padding_value=self.pad_id)
        lengths = torch.tensor([len(r) for r in rows], device=ids.device)
        mask = (torch.arange(ids.shape[1], device=ids.device)[None, :] < lengths[:, None]).long()
        return ids, mask

    def image_encoder(self) -> torch.nn.Module:
        """The module that takes the images: its weights' dtype is the run's precision."""
        return self.model.vision_model

    def stamp(self) -> dict[str, Any]:
        """The ITM token read and the caption length limit."""
        return {"itm_first_token": ENC_TOKEN if self.enc_id is not None else "[CLS]", "max_text_tokens": MAX_TOKENS}


def load(ref: str, precision: str, device: torch.device) -> BlipItmScorer:
    """A BLIP ITM model and its processor from a save_pretrained folder or a cached hub name."""
    folder = weights_folder(ref)
    model = base.load_whole(BlipForImageTextRetrieval, folder, precision)
    base.place(model, device)
    return BlipItmScorer(model, BlipProcessor.from_pretrained(folder), device)


def tiny_model(folder: Path) -> Path:
    """Test kit: a random BLIP ITM model with its processor, saved as a user's local copy is."""
    tokenizer = tiny.bert_tokenizer(folder)
    text = {**tiny.SMALL, "vocab_size": len(tokenizer), "max_position_embeddings": 40, "encoder_hidden_size": 32}
    vision = {**tiny.SMALL, "image_size": 32, "patch_size": 8}
    config = BlipConfig(
        text_config={**text, "pad_token_id": 0, "bos_token_id": 2, "sep_token_id": 3, "initializer_range": tiny.SPREAD},
        vision_config={**vision, "initializer_range": tiny.SPREAD},
        image_text_hidden_size=16,
        projection_dim=16,
        initializer_range=tiny.SPREAD,
    )
    torch.manual_seed(0)
    out = folder / "blip"
    BlipForImageTextRetrieval(config).save_pretrained(out)
    BlipProcessor(BlipImageProcessor(size={"height": 32, "width": 32}), tokenizer).save_pretrained(out)
    return out


@torch.no_grad()
def reference_score(folder: Path, image: Image.Image, caption: str) -> float:
    """Test kit: ARO's BLIP score of one pair through transformers' documented API (the ITM match
    logit with [ENC] first, plus the ITC cosine)."""
    model, processor = tiny.reference_model(folder, BlipForImageTextRetrieval, BlipProcessor)
    inputs = processor(images=image, text=caption, return_tensors="pt", padding="max_length", max_length=MAX_TOKENS)
    cosine = model(**inputs, use_itm_head=False).itm_score[0, 0]
    inputs["input_ids"][:, 0] = processor.tokenizer.convert_tokens_to_ids(ENC_TOKEN)
    match = model(**inputs, use_itm_head=True).itm_score[0, 1]
    return float(match + cosine)
