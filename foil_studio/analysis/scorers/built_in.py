"""The model families foil ships, one record each: what `--help`, the Model scores form and
docs/scoring.md say of a family is read here, and the loader named by its ``load`` is imported
only when a model is loaded. A new family is its module (the ``load`` function and its scorer) and
one record below with its line in ``BUILT_INS`` (which ``scorers.REGISTRY`` reads), or an
installed package's entry point in group ``foil_studio.scorers`` (docs/plugins.md). The module also
holds the family's test kit (``ScorerFamily.test_kit``), through which the generic tests test it.

open_clip's models load and score in ``analysis.models`` and ``analysis.scoring`` (QuickGELU where
the weights need it, exact trimming, cached embeddings); its record only lists it beside the others.
"""

from __future__ import annotations

from foil_studio.analysis.scorers.record import ScorerFamily

OPEN_CLIP = ScorerFamily(
    "open_clip",
    "any open_clip architecture with a pretrained tag, an hf-hub: name or a local checkpoint",
    "cosine of the L2-normalised image and caption embeddings",
    "CLIP's contrastive similarity, as ARO's model_zoo/clip_models.py and SugarCrepe's evaluation score CLIP",
    "ViT-B-32 --pretrained openai",
)


BLIP_ITM = ScorerFamily(
    "blip-itm",
    "BLIP image-text matching (transformers' BlipForImageTextRetrieval), scored as ARO scores it",
    "ITM head match logit + ITC cosine; ITM reads [ENC] as first token, captions cut at 35 tokens",
    "ARO, model_zoo/blip_models.py (run_scores_batched), github.com/mertyg/vision-language-models-are-bows @81fdd20",
    "blip-itm:Salesforce/blip-itm-base-coco",
    "foil_studio.analysis.scorers.blip_itm:load",
    test_kit="foil_studio.analysis.scorers.blip_itm",
    differs="with a tokenizer lacking [ENC], ITM reads [CLS] as transformers does (the run says which)",
)


FLAVA_ITM = ScorerFamily(
    "flava-itm",
    "FLAVA (transformers' FlavaForPreTraining), scored as ARO scores it",
    "softmax probability of 'match' from the ITM head, nothing masked",
    "ARO, model_zoo/flava.py (get_retrieval_scores_batched), "
    "github.com/mertyg/vision-language-models-are-bows @81fdd20",
    "flava-itm:facebook/flava-full",
    "foil_studio.analysis.scorers.flava_itm:load",
    test_kit="foil_studio.analysis.scorers.flava_itm",
    probability=True,
)


BLIP2_ITM = ScorerFamily(
    "blip2-itm",
    "BLIP-2 image-text matching (transformers' Blip2ForImageTextRetrieval), scored as LAVIS scores it",
    "softmax probability of 'match' from the Q-Former ITM head (logits averaged over the query tokens); "
    "captions through LAVIS's blip_caption text processor, then cut at 32 tokens",
    "LAVIS, lavis/models/blip2_models/blip2_image_text_matching.py (Blip2ITM.forward, match_head='itm'), "
    "github.com/salesforce/LAVIS @020aad3",
    "blip2-itm:Salesforce/blip2-itm-vit-g",
    "foil_studio.analysis.scorers.blip2_itm:load",
    test_kit="foil_studio.analysis.scorers.blip2_itm",
    differs="transformers keeps the Q-Former in fp32 whatever the precision",
    probability=True,
)


VQASCORE = ScorerFamily(
    "vqascore",
    "VQAScore: any generative vision-language model transformers loads with AutoModelForImageTextToText, "
    "asked whether the image shows the caption",
    "probability of the next token 'Yes' after 'Does this figure show \"{caption}\"? Please answer yes or no.' "
    "(in the processor's chat template where it has one)",
    "t2v_metrics, t2v_metrics/models/vqascore_models/paligemma_model.py (PaliGemmaModel.forward), "
    "github.com/linzhiqiu/t2v_metrics @0ab6f3e",
    "vqascore:llava-hf/llava-1.5-7b-hf",
    "foil_studio.analysis.scorers.vqascore:load",
    test_kit="foil_studio.analysis.scorers.vqascore",
    differs="t2v_metrics' own LLaVA-1.5 wrapper (llava_model.py) scores exp(-mean cross-entropy) of 'Yes</s>' in "
    "LLaVA's conversation format (family vqascore-t2v); here only the first answer token, as its transformers "
    "wrappers score it. "
    "'Yes' is encoded without special tokens (paligemma_model.py takes encode('Yes')[0])",
    probability=True,
)


VQASCORE_T2V = ScorerFamily(
    "vqascore-t2v",
    "VQAScore as t2v_metrics scores LLaVA-1.5: a LLaVA model transformers loads, asked in LLaVA's "
    "conversation format whether the image shows the caption",
    "exp(-mean cross-entropy) of the answer 'Yes</s>' after the system message, 'USER: <image>\\n' and "
    "'Does this figure show \"{caption}\"? Please answer yes or no. ASSISTANT: ', the image padded to a square",
    "t2v_metrics, t2v_metrics/models/vqascore_models/llava_model.py (LLaVAModel.forward) and mm_utils.py, "
    "github.com/linzhiqiu/t2v_metrics @335e4c2",
    "vqascore-t2v:llava-hf/llava-1.5-7b-hf",
    "foil_studio.analysis.scorers.vqascore_t2v:load",
    test_kit="foil_studio.analysis.scorers.vqascore_t2v",
    differs="the image's features fill as many image tokens as the model has features (transformers' LLaVA), "
    "where LLaVA's own code splices them in for one placeholder: the same sequence the model reads",
    probability=True,
)


# Foil's own families in the order --help, the forms and docs/scoring.md list them.
BUILT_INS = (
    OPEN_CLIP,
    BLIP_ITM,
    FLAVA_ITM,
    BLIP2_ITM,
    VQASCORE,
    VQASCORE_T2V,
)
