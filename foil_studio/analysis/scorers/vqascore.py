"""VQAScore (Lin et al. 2024, "Evaluating Text-to-Visual Generation with Image-to-Text
Generation"): a generative vision-language model is asked whether the image shows the caption,
and the pair's score is the probability that its next token is "Yes".

Read from t2v_metrics (github.com/linzhiqiu/t2v_metrics at 0ab6f3e),
``t2v_metrics/models/vqascore_models/paligemma_model.py`` (``PaliGemmaModel.forward``): the question
is ``Does this figure show "{caption}"? Please answer yes or no.``, the model generates one token
and the score is ``softmax(scores of that step)[id of "Yes"]``; the same question template is
``default_question_template`` in its ``llava_model.py``.

Any model transformers loads with ``AutoModelForImageTextToText`` (LLaVA, PaliGemma, Idefics3,
Qwen2-VL, ...) with its ``AutoProcessor``: the question goes through the processor's chat template
(one user turn: the image, then the question; the generation prompt added) when the processor has
one, else it is the bare question after the processor's image token (PaliGemma's processor then
builds the same input as from the bare question t2v_metrics gives it). The id of "Yes" is the
tokenizer's encoding of ``Yes`` without special tokens; a tokenizer that makes it more than one
token, or the unknown token, is refused. Pairs are batched with right padding, and the logits are
read at each pair's last real token (causal attention: the padding after it changes nothing before it).
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch
from PIL import Image
from transformers import (
    AutoModelForImageTextToText,
    AutoProcessor,
    BlipImageProcessor,
    LlavaConfig,
    LlavaForConditionalGeneration,
    LlavaProcessor,
)

from foil_studio.analysis.model_spec import ModelUnavailableError
from foil_studio.analysis.scorers import base, tiny
from foil_studio.analysis.scorers.base import weights_folder

QUESTION = 'Does this figure show "{}"? Please answer yes or no.'  # t2v_metrics' default_question_template
ANSWER = "Yes"  # t2v_metrics' default_answer_template


class NotScorableError(ModelUnavailableError):
    """The model loads but VQAScore's rule cannot be applied to it (no single "Yes" token, not a
    generative image-text model)."""


def yes_token_id(tokenizer: Any) -> int:
    """The id of "Yes": its encoding without special tokens, which must be one token, not the unknown one."""
    ids = tokenizer.encode(ANSWER, add_special_tokens=False)
    if len(ids) != 1:
        pieces = tokenizer.convert_ids_to_tokens(ids)
        raise NotScorableError(
            f"this tokenizer writes {ANSWER!r} as {len(ids)} tokens ({pieces}); VQAScore reads the probability of "
            "one next token, so this model cannot be scored by it"
        )
    if ids[0] == tokenizer.unk_token_id:
        raise NotScorableError(
            f"this tokenizer has no token for {ANSWER!r} (it reads as the unknown token); VQAScore cannot score with it"
        )
    return int(ids[0])


class VqaScorer:
    """A loaded generative vision-language model scoring pairs by VQAScore's rule."""

    def __init__(self, model: Any, processor: Any, device: torch.device) -> None:
        self.model, self.processor, self.device = model, processor, device
        self.dtype = next(model.parameters()).dtype
        self.tokenizer = processor.tokenizer
        self.tokenizer.padding_side = "right"  # each pair's tokens at the same positions as alone
        self.yes_id = yes_token_id(self.tokenizer)
        self.chat = bool(getattr(processor, "chat_template", None))
        self.keeps_logits = "logits_to_keep" in inspect.signature(model.forward).parameters

    def prompt(self, caption: str) -> str:
        """The question about `caption`, in the processor's chat template when it has one."""
        question = QUESTION.format(caption)
        if self.chat:
            turn = [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": question}]}]
            return str(self.processor.apply_chat_template(turn, add_generation_prompt=True, tokenize=False))
        image_token = getattr(self.processor, "image_token", None)
        return f"{image_token}{question}" if isinstance(image_token, str) else question

    def prepare_images(self, images: list[Image.Image]) -> list[Image.Image]:
        """The images themselves: the processor reads an image and its prompt together (the number of
        image tokens a prompt holds can depend on the image's size)."""
        return [image.convert("RGB") for image in images]

    def prepare_texts(self, texts: list[str]) -> list[str]:
        """Each caption's prompt."""
        return [self.prompt(text) for text in texts]

    @torch.inference_mode()
    def score_pairs(self, images: Sequence[Image.Image], texts: Sequence[str]) -> list[float]:
        """softmax(next-token logits after the prompt)["Yes"] per pair."""
        inputs = self.processor(images=list(images), text=list(texts), padding=True, return_tensors="pt")
        inputs.pop("labels", None)  # PaliGemma's processor adds training labels: no loss is wanted
        inputs = inputs.to(self.device, dtype=self.dtype)
        last = inputs["attention_mask"].sum(dim=1) - 1
        if self.keeps_logits:  # the lm head only where it is read
            kept, row = torch.unique(last, return_inverse=True)
            logits = self.model(**inputs, logits_to_keep=kept).logits
        else:
            row, logits = last, self.model(**inputs).logits
        picked = logits[torch.arange(len(texts), device=logits.device), row]
        return torch.softmax(picked.float(), dim=-1)[:, self.yes_id].cpu().tolist()

    def image_encoder(self) -> torch.nn.Module:
        """The module that takes the images: its weights' dtype is the run's precision."""
        return getattr(self.model, "vision_model", self.model)  # LLaVA: the whole model takes them

    def stamp(self) -> dict[str, Any]:
        """The question, how it was formatted, and the token read."""
        return {
            "question_template": QUESTION,
            "prompt_format": "chat template" if self.chat else "plain question after the image token",
            "answer_token": self.tokenizer.convert_ids_to_tokens(self.yes_id),
            "answer_token_id": self.yes_id,
        }


def load(ref: str, precision: str, device: torch.device) -> VqaScorer:
    """A generative vision-language model and its processor from a save_pretrained folder or a cached hub name."""
    folder = weights_folder(ref)
    try:
        model = base.load_whole(AutoModelForImageTextToText, folder, precision)
    except base.IncompleteWeightsError:
        raise  # another model's folder: said as any family's wrong folder is
    except ValueError as error:  # transformers: "Unrecognized configuration class ..."
        raise NotScorableError(
            f"{ref} is not a model transformers loads with AutoModelForImageTextToText: {str(error).splitlines()[0]}"
        ) from error
    base.place(model, device)
    return VqaScorer(model, AutoProcessor.from_pretrained(folder), device)


LLAVA_WORDS = 'Does this figure show " ? . Please answer yes or no Yes No USER ASSISTANT :'
LLAVA_TEMPLATE = (  # LLaVA-1.5's "USER: <image>\n... ASSISTANT:"
    "{% for message in messages %}{{ message['role'].upper() }}: {% for part in message['content'] %}"
    "{% if part['type'] == 'image' %}<image>\n{% else %}{{ part['text'] }}{% endif %}{% endfor %} {% endfor %}"
    "{% if add_generation_prompt %}ASSISTANT:{% endif %}"
)


def tiny_model(folder: Path, words: str = LLAVA_WORDS, chat_template: str | None = LLAVA_TEMPLATE) -> Path:
    """Test kit: a random LLaVA (CLIP vision tower, Llama decoder) with a processor holding
    LLaVA-1.5's chat template (or `chat_template`), saved as a user's local copy is."""
    tokenizer = tiny.word_tokenizer(words)
    small, spread = tiny.SMALL, tiny.SPREAD
    vision = {"model_type": "clip_vision_model", **small, "image_size": 32, "patch_size": 8, "projection_dim": 16}
    text = {"model_type": "llama", **small, "num_key_value_heads": 2, "vocab_size": len(tokenizer)}
    image_token = tokenizer.convert_tokens_to_ids("<image>")
    config = LlavaConfig(
        vision_config={**vision, "initializer_range": spread},
        text_config={**text, "max_position_embeddings": 128, "pad_token_id": 0, "bos_token_id": 2, "eos_token_id": 3},
        image_token_index=image_token if isinstance(image_token, int) else image_token[0],
        initializer_range=spread,  # type: ignore[call-arg]  # read from the keyword arguments, not in the signature
    )
    torch.manual_seed(0)
    model = LlavaForConditionalGeneration(config)
    with torch.no_grad():  # "Yes" turned round: its probability then neither near zero nor alike for every pair
        model.lm_head.weight[tokenizer.convert_tokens_to_ids("Yes")] *= -1
    out = folder / ("llava" if chat_template else "llava-plain")
    model.save_pretrained(out)
    images = BlipImageProcessor(size={"height": 32, "width": 32})
    LlavaProcessor(
        images, tokenizer, patch_size=8, vision_feature_select_strategy="default", chat_template=chat_template,
        num_additional_image_tokens=1,
    ).save_pretrained(out)  # fmt: skip
    return out


@torch.no_grad()
def reference_score(folder: Path, image: Image.Image, caption: str) -> float:
    """Test kit: VQAScore of one pair as t2v_metrics' paligemma_model.py computes it: one generated
    token, the softmax of its scores at "Yes" (the prompt in the processor's chat template, where it
    has one)."""
    model, processor = tiny.reference_model(folder, AutoModelForImageTextToText, AutoProcessor)
    question = f'Does this figure show "{caption}"? Please answer yes or no.'
    if processor.chat_template:
        turn = [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": question}]}]
        prompt = processor.apply_chat_template(turn, add_generation_prompt=True, tokenize=False)
    else:
        prompt = "<image>" + question
    inputs = processor(images=image, text=prompt, return_tensors="pt")
    out = model.generate(**inputs, max_new_tokens=1, do_sample=False, output_scores=True, return_dict_in_generate=True)
    return float(torch.softmax(out.scores[0][0], dim=-1)[processor.tokenizer.convert_tokens_to_ids("Yes")])
