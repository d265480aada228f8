"""A layer, a head and a token as the steps pick and name them (attention, the block, the lab's
"How the ViT learned"): a choice clipped to the model, and its name on screen.

Layers and heads are 0-based in code and in the choices and counted from 1 on screen ("Layer 1",
"Head 1"). ``HEAD_MEAN`` (-1) as a head choice means the mean of the heads; it is never passed to
vitviz.analyses.analysis as a head index. A token keeps its index in the sequence, where [CLS] is
token 0, so with a [CLS] token, token k is patch k.
"""

from __future__ import annotations

from vitviz.analyses import analysis
from vitviz.steps.subject import Subject

HEAD_MEAN = -1

TOKEN_KEYS = {  # a page's sentences for a token: [CLS], and a patch's
    "attention": ("attention.token_cls", "attention.token_patch"),
    "block": ("block.token_cls", "block.token_patch"),
}


def clipped(value: object, default: int, low: int, high: int) -> int:
    """A numeric choice clipped to [low, high] (a new model has fewer layers or patches); anything
    but an integer gives the default."""
    if not isinstance(value, int) or isinstance(value, bool):
        return default
    return min(max(value, low), high)


def layer_label(subject: Subject, index: int) -> str:
    """ "Layer 1" for blocks[0]."""
    return subject.tr("attention.layer_n", n=index + 1)


def head_label(subject: Subject, index: int) -> str:
    """ "Head 1" for head 0, or the mean of the heads for ``HEAD_MEAN``."""
    return subject.tr("attention.mean_heads") if index == HEAD_MEAN else subject.tr("attention.head_n", n=index + 1)


def token_label(subject: Subject, token: int, key: str = "attention") -> str:
    """ "token 37 = patch 37 (row 5, col 5)", or "token 0 = [CLS]" (``key``: the page's sentences)."""
    trace = subject.trace
    patch = analysis.token_to_patch(token, trace.grid_size, trace.num_prefix_tokens)
    cls_key, patch_key = TOKEN_KEYS[key]
    if patch is None:
        return subject.tr(cls_key, token=token)
    patch_number = token - trace.num_prefix_tokens + 1
    return subject.tr(patch_key, token=token, patch=patch_number, row=patch[0] + 1, col=patch[1] + 1)
