"""VQAScore as t2v_metrics scores LLaVA-1.5 (Lin et al. 2024): exp(-mean cross-entropy) of the
answer "Yes" and the end of sequence after the question, in LLaVA's conversation format.

Read from t2v_metrics (github.com/linzhiqiu/t2v_metrics at 335e4c2),
``t2v_metrics/models/vqascore_models/llava_model.py`` (``LLaVAModel.forward``, ``format_question``,
``format_answer``, ``load_images``) and ``mm_utils.py`` (``tokenizer_image_token``, ``expand2square``):

* the prompt is ``SYSTEM_MSG + " USER: <image>\\n" + question + " ASSISTANT: " + "Yes</s>"``, the
  question ``Does this figure show "{caption}"? Please answer yes or no.``;
* it is tokenized a piece at a time around ``<image>`` (each piece by the tokenizer with its special
  tokens, a leading beginning-of-sequence token kept only on the first piece), the image in between;
* the labels are the prompt's tokens with the first ``len(question's tokens) - 1`` ignored (the
  question ends in a space, which LLaVA's tokenizer makes a token of its own and the answer's first
  token absorbs): the loss covers ``Yes`` and ``</s>``;
* each image is padded to a square in the image processor's mean colour, then processed;
* the score is exp(-mean cross-entropy) of each pair's labelled tokens, predicted one position before.

On a transformers LLaVA (``LlavaForConditionalGeneration``, as ``llava-hf/llava-1.5-7b-hf`` is
saved) the one image place becomes as many image tokens as the model has image features, which the
model fills as LLaVA's own code splices them in; the padding is on the right, ignored by the loss.
Only LLaVA-type models are taken: the format is LLaVA-1.5's.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch
from PIL import Image
from transformers import AutoProcessor, LlavaForConditionalGeneration

from foil_studio.analysis.scorers import base, vqascore
from foil_studio.analysis.scorers.base import weights_folder

SYSTEM_MSG = (  # t2v_metrics/constants.py
    "A chat between a curious user and an artificial intelligence assistant. "
    "The assistant gives helpful, detailed, and polite answers to the user's questions."
)
IMAGE_PLACE = "<image>"  # DEFAULT_IMAGE_TOKEN
IGNORED = -100  # IGNORE_INDEX: a label the loss skips


def question_prompt(caption: str) -> str:
    """`format_question` in t2v_metrics' 'chat' style: the system message, the user's turn with the
    image and the question, and the assistant's turn opened."""
    return f"{SYSTEM_MSG} USER: {IMAGE_PLACE}\n{vqascore.QUESTION.format(caption)} ASSISTANT: "


def answer_text() -> str:
    """`format_answer` in the 'chat' style: "Yes" and the end of sequence."""
    return vqascore.ANSWER + "</s>"


def expand_to_square(image: Image.Image, colour: tuple[int, ...]) -> Image.Image:
    """The image centred on a square of `colour`, its longer side the square's (LLaVA's `expand2square`)."""
    width, height = image.size
    if width == height:
        return image
    side = max(width, height)
    square = Image.new(image.mode, (side, side), colour)
    square.paste(image, ((side - width) // 2, (side - height) // 2))
    return square


def image_features(model: Any, pixels: torch.Tensor) -> list[torch.Tensor]:
    """Each image's features as the model splices them into its input (image tokens x hidden size)."""
    found = model.get_image_features(
        pixel_values=pixels,
        vision_feature_layer=model.config.vision_feature_layer,
        vision_feature_select_strategy=model.config.vision_feature_select_strategy,
    )
    return list(getattr(found, "pooler_output", found))  # transformers 5: an output whose pooler_output is the list


class T2vLlavaScorer:
    """A LLaVA model scoring pairs by t2v_metrics' LLaVA-1.5 rule."""

    def __init__(self, model: Any, processor: Any, device: torch.device) -> None:
        self.model, self.processor, self.device = model, processor, device
        self.dtype = next(model.parameters()).dtype
        self.tokenizer = processor.tokenizer
        self.image_token = int(model.config.image_token_index)
        self.pad = self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else 0
        mean = processor.image_processor.image_mean
        self.background = tuple(int(x * 255) for x in mean)
        self.per_image: int | None = None

    def pieces(self, text: str) -> list[int | None]:
        """`tokenizer_image_token`: each piece around the image place tokenized on its own, a leading
        beginning-of-sequence token kept on the first piece only; None where the image goes."""
        chunks = [self.tokenizer(chunk).input_ids for chunk in text.split(IMAGE_PLACE)]
        bos = self.tokenizer.bos_token_id
        offset = 1 if chunks and chunks[0] and chunks[0][0] == bos else 0
        ids: list[int | None] = [chunks[0][0]] if offset else []
        for number, chunk in enumerate(chunks):
            if number:
                ids.append(None)
            ids.extend(chunk[offset:])
        return ids

    def prepare_images(self, images: list[Image.Image]) -> list[Image.Image]:
        """Each image padded to a square in the processor's mean colour (`load_images` with 'pad')."""
        return [expand_to_square(image.convert("RGB"), self.background) for image in images]

    def prepare_texts(self, texts: list[str]) -> list[str]:
        """Each caption's question prompt (the answer is added where the pair is scored)."""
        return [question_prompt(text) for text in texts]

    def _labelled(self, question: str, image_tokens: int) -> tuple[list[int], list[int]]:
        """The whole prompt's ids (the image place as `image_tokens` image tokens) and its labels:
        the first len(question's tokens) - 1 ignored, as t2v_metrics masks them."""
        ids = self.pieces(question + answer_text())
        hidden = len(self.pieces(question)) - (1 if question.endswith(" ") else 0)
        expanded, labels = [], []
        for position, token in enumerate(ids):
            tokens = [self.image_token] * image_tokens if token is None else [token]
            expanded += tokens
            labels += [IGNORED if position < hidden or token is None else token for token in tokens]
        return expanded, labels

    @torch.inference_mode()
    def score_pairs(self, images: Sequence[Image.Image], texts: Sequence[str]) -> list[float]:
        """exp(-mean cross-entropy of the answer's tokens) per pair."""
        pixels = self.processor.image_processor(images=list(images), return_tensors="pt")["pixel_values"]
        pixels = pixels.to(self.device, dtype=self.dtype)
        if self.per_image is None:  # the model's image features per image, for the image tokens
            self.per_image = int(image_features(self.model, pixels[:1])[0].shape[0])
        rows = [self._labelled(text, self.per_image) for text in texts]
        width = max(len(ids) for ids, _ in rows)
        ids = torch.full((len(rows), width), self.pad, dtype=torch.long)
        labels = torch.full((len(rows), width), IGNORED, dtype=torch.long)
        mask = torch.zeros((len(rows), width), dtype=torch.long)
        for row, (row_ids, row_labels) in enumerate(rows):
            ids[row, : len(row_ids)] = torch.tensor(row_ids)
            labels[row, : len(row_labels)] = torch.tensor(row_labels)
            mask[row, : len(row_ids)] = 1
        logits = self.model(input_ids=ids.to(self.device), attention_mask=mask.to(self.device), pixel_values=pixels)
        logits = logits.logits.float()
        shifted, targets = logits[:, :-1], labels[:, 1:].to(logits.device)
        losses = torch.nn.functional.cross_entropy(
            shifted.transpose(1, 2), targets, ignore_index=IGNORED, reduction="none"
        )
        counted = (targets != IGNORED).sum(dim=1)
        return torch.exp(-losses.sum(dim=1) / counted).cpu().tolist()

    def image_encoder(self) -> torch.nn.Module:
        """The module that takes the images (LLaVA: the whole model)."""
        return self.model

    def stamp(self) -> dict[str, Any]:
        """The prompt, the answer scored and the image padding."""
        return {
            "question_template": vqascore.QUESTION,
            "prompt_format": "t2v_metrics LLaVA-1.5 chat: system message, USER: <image>\\n..., ASSISTANT:",
            "answer": answer_text(),
            "image_padding": f"square in {self.background}",
        }


def load(ref: str, precision: str, device: torch.device) -> T2vLlavaScorer:
    """A LLaVA model and its processor from a save_pretrained folder or a cached hub name."""
    folder = weights_folder(ref)
    model = base.load_whole(LlavaForConditionalGeneration, folder, precision)  # another model's: said by the caller
    base.place(model, device)
    return T2vLlavaScorer(model, AutoProcessor.from_pretrained(folder), device)


def tiny_model(folder: Path) -> Path:
    """Test kit: vqascore's random LLaVA (CLIP vision tower, Llama decoder) with its processor."""
    return vqascore.tiny_model(folder)


@torch.no_grad()
def reference_score(folder: Path, image: Image.Image, caption: str) -> float:
    """Test kit: one pair scored as t2v_metrics' llava_model.py does, step by step from its code
    (fp32, one pair): the pieces tokenized around the image, the labels masked up to the question's
    length less one, the image padded to a square, exp(-CrossEntropyLoss(reduction='mean'))."""
    from foil_studio.analysis.scorers import tiny

    model, processor = tiny.reference_model(folder, LlavaForConditionalGeneration, AutoProcessor)
    tokenizer = processor.tokenizer
    question = SYSTEM_MSG + " USER: " + "<image>" + "\n" + vqascore.QUESTION.format(caption) + " ASSISTANT: "
    prompt = question + "Yes" + "</s>"

    def tokenizer_image_token(text: str) -> list[int]:  # IMAGE_TOKEN_INDEX (-200) where the image goes
        chunks = [tokenizer(chunk).input_ids for chunk in text.split("<image>")]
        out, offset = [], 0
        if chunks and chunks[0] and chunks[0][0] == tokenizer.bos_token_id:
            offset = 1
            out.append(chunks[0][0])
        for x in [e for sub in zip(chunks, [[-200] * (offset + 1)] * len(chunks), strict=True) for e in sub][:-1]:
            out.extend(x[offset:])
        return out

    input_ids = tokenizer_image_token(prompt)
    labels = list(input_ids)
    masked = len(tokenizer_image_token(question)) - (1 if question[-1] == " " else 0)
    labels[:masked] = [-100] * masked
    mean = processor.image_processor.image_mean
    square = expand_to_square(image.convert("RGB"), tuple(int(x * 255) for x in mean))
    pixels = processor.image_processor(images=[square], return_tensors="pt")["pixel_values"]
    # LLaVA's prepare_inputs_labels_for_multimodal: the image's features where -200 is, labelled -100
    embeds = model.get_input_embeddings()
    features = image_features(model, pixels)[0]
    spliced, spliced_labels = [], []
    for token, label in zip(input_ids, labels, strict=True):
        if token == -200:
            spliced.append(features)
            spliced_labels += [-100] * features.shape[0]
        else:
            spliced.append(embeds(torch.tensor([token])))
            spliced_labels.append(label)
    inputs_embeds = torch.cat(spliced).unsqueeze(0)
    logits = model(inputs_embeds=inputs_embeds).logits[0].float()
    loss = torch.nn.CrossEntropyLoss(reduction="mean")(logits[:-1], torch.tensor(spliced_labels[1:]))
    return float(torch.exp(-loss))
