"""FLAVA as ARO scores it: the softmax probability of "match" from FlavaForPreTraining's ITM head.

Read from ARO's ``model_zoo/flava.py`` (``get_retrieval_scores_batched``,
github.com/mertyg/vision-language-models-are-bows at 81fdd20): each (image, caption) goes through
``FlavaForPreTraining`` with nothing masked (``input_ids_masked`` = ``input_ids``,
``bool_masked_pos`` all zero), and the score is ``softmax(itm_logits)[:, 1]``. With nothing masked
that ITM pass is the unimodal encoders' last hidden states, projected and concatenated, through the
multimodal encoder and the ITM head; here the unimodal states are computed once per distinct image
and caption, and only the multimodal encoder runs per pair.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from PIL import Image
from transformers import FlavaConfig, FlavaForPreTraining, FlavaImageProcessor, FlavaProcessor

from foil_studio.analysis.scorers import base, tiny
from foil_studio.analysis.scorers.base import weights_folder


@dataclass(frozen=True)
class FlavaText:
    """A caption's projected text states (unpadded) for the multimodal encoder."""

    states: torch.Tensor


class FlavaItmScorer:
    """A loaded FLAVA pre-training model scoring pairs by ARO's rule."""

    def __init__(self, model: FlavaForPreTraining, processor: FlavaProcessor, device: torch.device) -> None:
        self.model, self.processor, self.device = model, processor, device
        self.dtype = next(model.parameters()).dtype
        text_config: Any = model.config.text_config
        self.max_tokens = int(text_config.max_position_embeddings)

    @torch.inference_mode()
    def prepare_images(self, images: list[Image.Image]) -> list[torch.Tensor]:
        """Projected image states (last hidden layer, before the final norm, as FlavaModel feeds them)."""
        pixels = self.processor.image_processor(images, return_tensors="pt").pixel_values
        flava = self.model.flava
        output = flava.image_model(pixel_values=pixels.to(self.device, self.dtype), output_hidden_states=True)
        return list(flava.image_to_mm_projection(output.hidden_states[-1]))

    @torch.inference_mode()
    def prepare_texts(self, texts: list[str]) -> list[FlavaText]:
        """Projected text states, one per caption, cut to its real tokens."""
        encoded = self.processor.tokenizer(
            texts, padding=True, truncation=True, max_length=self.max_tokens, return_tensors="pt"
        ).to(self.device)
        flava = self.model.flava
        output = flava.text_model(
            input_ids=encoded.input_ids,
            attention_mask=encoded.attention_mask,
            token_type_ids=encoded.get("token_type_ids"),
            output_hidden_states=True,
        )
        states = flava.text_to_mm_projection(output.hidden_states[-1])
        lengths = encoded.attention_mask.sum(dim=1).tolist()
        return [FlavaText(s[:n]) for s, n in zip(states, lengths)]

    @torch.inference_mode()
    def score_pairs(self, images: Sequence[torch.Tensor], texts: Sequence[FlavaText]) -> list[float]:
        """softmax(ITM logits)[match] per pair."""
        text = torch.nn.utils.rnn.pad_sequence([t.states for t in texts], batch_first=True)
        lengths = torch.tensor([len(t.states) for t in texts], device=text.device)
        text_mask = (torch.arange(text.shape[1], device=text.device)[None, :] < lengths[:, None]).to(self.dtype)
        image = torch.stack(list(images))
        multimodal = self.model.flava.multimodal_model
        n_image = image.shape[1] + (1 if multimodal.use_cls_token else 0)
        image_mask = torch.ones(len(texts), n_image, dtype=self.dtype, device=text.device)
        hidden = multimodal(
            torch.cat([image, text], dim=1), attention_mask=torch.cat([image_mask, text_mask], dim=1)
        ).last_hidden_state
        logits = self.model.itm_head(hidden)
        return torch.softmax(logits.float(), dim=-1)[:, 1].cpu().tolist()

    def image_encoder(self) -> torch.nn.Module:
        """The module that takes the images: its weights' dtype is the run's precision."""
        return self.model.flava.image_model

    def stamp(self) -> dict[str, Any]:
        """The caption length limit (the text tower's positions)."""
        return {"max_text_tokens": self.max_tokens}


def load(ref: str, precision: str, device: torch.device) -> FlavaItmScorer:
    """A FLAVA pre-training model and its processor from a save_pretrained folder or a cached hub name."""
    folder = weights_folder(ref)
    model = base.load_whole(FlavaForPreTraining, folder, precision)
    base.place(model, device)
    return FlavaItmScorer(model, FlavaProcessor.from_pretrained(folder), device)


def tiny_model(folder: Path) -> Path:
    """Test kit: a random FLAVA pre-training model with its processor, saved as a user's local copy is."""
    tokenizer = tiny.bert_tokenizer(folder)
    small, spread = tiny.SMALL, tiny.SPREAD
    config = FlavaConfig(
        image_config={**small, "image_size": 32, "patch_size": 8, "initializer_range": spread},
        text_config={**small, "vocab_size": len(tokenizer), "max_position_embeddings": 40, "initializer_range": spread},
        multimodal_config={**small, "initializer_range": spread},
        image_codebook_config={"hidden_size": 16, "num_groups": 2, "num_blocks_per_group": 1, "vocab_size": 32},
        hidden_size=32,
        projection_dim=16,
        initializer_range=spread,
    )
    torch.manual_seed(0)
    out = folder / "flava"
    FlavaForPreTraining(config).save_pretrained(out)
    square = {"height": 32, "width": 32}
    images = FlavaImageProcessor(
        size=square, crop_size=square, codebook_size=square, codebook_crop_size=square, input_size_patches=4,
        total_mask_patches=4, mask_group_min_patches=1,
    )  # fmt: skip
    FlavaProcessor(images, tokenizer).save_pretrained(out)
    return out


@torch.no_grad()
def reference_score(folder: Path, image: Image.Image, caption: str) -> float:
    """Test kit: ARO's FLAVA score of one pair through transformers' documented API,
    softmax(itm_logits)[match] with nothing masked."""
    model, processor = tiny.reference_model(folder, FlavaForPreTraining, FlavaProcessor)
    inputs = processor(
        text=[caption], images=[image], return_tensors="pt", padding="max_length", max_length=40,
        return_codebook_pixels=True, return_image_mask=True,
    )  # fmt: skip
    inputs["input_ids_masked"] = inputs["input_ids"].clone()
    inputs["bool_masked_pos"] = torch.zeros_like(inputs["bool_masked_pos"])
    return float(torch.softmax(model(**inputs).itm_logits, dim=-1)[0, 1])
