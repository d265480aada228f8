"""Sentences that state a fact about the model or the image on screen, read from the numbers.

A page never asserts what a trained ViT *usually* does ("some heads stay local", "after
LayerNorm the tokens have the same length"): it asks this module, which reads the numbers the
figure beside the sentence shows and returns the ``Claim`` that is true for them, an i18n key
and the values that fill it. ``text(claim, lang)`` writes it in either language. Every function
has a unit test with numbers made so that the opposite is true, and docs/claims.md lists every
such sentence of the app with the numbers that decide it.

Thresholds are module constants, named and documented here, so a sentence's meaning ("local",
"rises", "nearly the same") is defined once.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from vitviz.analyses.analysis import occlusion_reading
from vitviz.render.i18n import DEFAULT_LANGUAGE, Markdown, class_label, escape, t

# Mean attention distance. A head is *local* when its mean distance is under LOCAL_SHARE of the
# distance of uniform attention (about a quarter of a square image's side, since uniform
# attention over a square grid averages about 0.52 of the side); *near uniform* when it is
# within NEAR_UNIFORM of it (either side).
LOCAL_SHARE = 0.5
NEAR_UNIFORM = 0.15
# Layer 1 and the last layer "look about as far" when their means differ by under this share of
# the uniform distance.
DEPTH_SAME = 0.1
MOST_LISTED = 6  # heads named one by one; more are counted

# Occlusion. A curve *rises* when it climbs more than RISE above its start; it *falls* at the
# first step under FALL_SHARE of its start; the two areas differ when their means differ by more
# than AREA_MARGIN.
RISE = 0.05
FALL_SHARE = 0.5
PATCH_TOP_K = 5  # the class's patch poll: is its most-voted patch among the model's this many?
AREA_MARGIN = 0.05

# The normalised input is centred "near 0" when its mean is within NEAR_ZERO of 0 (in units of
# the training pixels' standard deviation).
NEAR_ZERO = 0.25

# LayerNorm. Token lengths are *nearly equal* when their coefficient of variation (std / mean
# over the tokens) is under EQUAL_SPREAD; LayerNorm *narrows* them when it divides the spread by
# at least NARROWER.
EQUAL_SPREAD = 0.02
NARROWER = 1.5

# Principal components of the patch filters: those that carry VARIANCE_SHARE of the variance are
# shown (at most MOST_COMPONENTS tiles, the paper's 28); the variance is *spread evenly*, as in
# random filters, when they are at least EVEN_SHARE of all components. The paper's Fig. 7 (left)
# shows ViT-L/32's filters, PAPER_PATCH pixels a side; a tile under SMOOTH_SIDE pixels a side is
# too coarse to show its smooth blobs and stripes.
VARIANCE_SHARE = 0.95
MOST_COMPONENTS = 28
EVEN_SHARE = 0.8
PAPER_PATCH = 32
SMOOTH_SIDE = 8


@dataclass(frozen=True)
class Claim:
    """One sentence: its i18n key and the values that fill it. A value may itself be a Claim, a
    ``ClassName`` (written in the reader's language) or a tuple of them (joined by ``claims.join``)."""

    key: str
    values: dict[str, object] = field(default_factory=dict)


def text(sentences: Claim | Sequence[Claim], lang: str = DEFAULT_LANGUAGE) -> str:
    """The sentence(s) in ``lang``; several are joined by a space, as one paragraph."""
    if isinstance(sentences, Claim):
        values = {name: _written(value, lang) for name, value in sentences.values.items()}
        return t(sentences.key, lang, **values)
    return " ".join(text(claim, lang) for claim in sentences)


def _written(value: object, lang: str) -> object:
    if isinstance(value, Claim):
        return text(value, lang)
    if isinstance(value, ClassName):
        return class_label(value.name, lang)
    if isinstance(value, tuple) and value and all(isinstance(v, Claim | ClassName) for v in value):
        parts = (_written(v, lang) for v in value)
        return Markdown(t("claims.join", lang).join(p if isinstance(p, Markdown) else escape(str(p)) for p in parts))
    return value


# --------------------------------------------------------------------------------------------
# Page 5: mean attention distance
# --------------------------------------------------------------------------------------------


def attention_distance(distances: np.ndarray, uniform: float, image_side: int) -> list[Claim]:
    """Which heads are local, and how far from uniform attention they all are.

    Args:
        distances: (depth, heads) mean attention distance in pixels (``analysis.mean_attention_distance``).
        uniform: the distance of attention spread evenly (``analysis.uniform_attention_distance``).
        image_side: the longer side of the model's input in pixels.

    Returns:
        The definition of "local" for this model, then which heads are local (none, some: named,
        or all) with the range of distances as shares of ``uniform``, then (for more than one
        layer) whether the last layer looks farther than the first.
    """
    distances = np.asarray(distances, dtype=np.float64)
    depth, heads = distances.shape
    limit = LOCAL_SHARE * uniform
    claims = [
        Claim(
            "claims.distance.local_means",
            {"limit": limit, "limit_share": limit / image_side, "side": image_side, "uniform": uniform},
        )
    ]
    local = distances < limit
    count, total = int(local.sum()), depth * heads
    others = distances[~local]
    nearest = np.unravel_index(int(distances.argmin()), distances.shape)
    spread = {
        "n": total,
        "low": float(distances.min()),
        "high": float(distances.max()),
        "low_pct": float(distances.min()) / uniform,
        "high_pct": float(distances.max()) / uniform,
        "uniform": uniform,
        "nearest": Claim("claims.layer_head", {"layer": int(nearest[0]) + 1, "head": int(nearest[1]) + 1}),
        "nearest_px": float(distances.min()),
    }
    if count == 0:
        near = bool((np.abs(distances / uniform - 1) <= NEAR_UNIFORM).all())
        claims.append(Claim("claims.distance.none_near" if near else "claims.distance.none", spread))
    elif count == total:
        claims.append(Claim("claims.distance.all", spread))
    else:
        named = tuple(
            Claim("claims.layer_head", {"layer": int(layer) + 1, "head": int(head) + 1})
            for layer, head in np.argwhere(local)[:MOST_LISTED]
        )
        claims.append(
            Claim(
                "claims.distance.some" if count <= MOST_LISTED else "claims.distance.some_more",
                {
                    "k": count,
                    "n": total,
                    "heads": named,
                    "more": count - len(named),
                    "low": float(others.min()),
                    "high": float(others.max()),
                    "low_pct": float(others.min()) / uniform,
                    "high_pct": float(others.max()) / uniform,
                    "uniform": uniform,
                },
            )
        )
    if depth > 1:
        first, last = float(distances[0].mean()), float(distances[-1].mean())
        trend = "same" if abs(last - first) < DEPTH_SAME * uniform else "farther" if last > first else "nearer"
        claims.append(Claim(f"claims.distance.depth_{trend}", {"first": first, "last": last, "depth": depth}))
    return claims


# --------------------------------------------------------------------------------------------
# Page 7: occlusion
# --------------------------------------------------------------------------------------------


def _rise(curve: np.ndarray, fractions: np.ndarray) -> tuple[bool, float, float]:
    """(rises first, peak, hidden share at the peak): the peak before the curve first drops more
    than RISE under its start, and whether it is more than RISE over the start."""
    dropped = np.flatnonzero(curve < curve[0] - RISE)
    before = curve[: dropped[0] if dropped.size else curve.size]
    peak = int(before.argmax())
    return bool(before[peak] > curve[0] + RISE), float(before[peak]), float(fractions[peak])


def _fall(curve: np.ndarray, fractions: np.ndarray) -> float | None:
    """The hidden share at the first step under FALL_SHARE of the start, or None."""
    below = np.flatnonzero(curve < FALL_SHARE * curve[0])
    return float(fractions[below[0]]) if below.size else None


def occlusion(fractions: np.ndarray, rollout_curve: np.ndarray, random_curve: np.ndarray) -> list[Claim]:
    """What the two occlusion curves show, read over their whole length.

    Args:
        fractions: (S + 1,) share of the patches hidden at each step, from 0 to 1.
        rollout_curve: (S + 1,) probability of the predicted class, patches hidden in rollout's order.
        random_curve: (S + 1,) the same in a random order.

    Returns:
        Whether either curve first rises (and to what), where each falls under half its start,
        and which has the smaller area (mean probability over the evenly spaced steps), with
        what that says about rollout's ranking.
    """
    fractions = np.asarray(fractions, dtype=np.float64)
    red = np.asarray(rollout_curve, dtype=np.float64)
    grey = np.asarray(random_curve, dtype=np.float64)
    start = float(red[0])
    claims = []
    red_rises, red_peak, red_at = _rise(red, fractions)
    grey_rises, grey_peak, grey_at = _rise(grey, fractions)
    rise = {"start": start, "red_peak": red_peak, "red_at": red_at, "grey_peak": grey_peak, "grey_at": grey_at}
    if red_rises and grey_rises:
        claims.append(Claim("claims.occlusion.rise_both", rise))
    elif red_rises:
        claims.append(Claim("claims.occlusion.rise_red", rise))
    elif grey_rises:
        claims.append(Claim("claims.occlusion.rise_grey", rise))
    red_fall, grey_fall = _fall(red, fractions), _fall(grey, fractions)
    fall = {"half": FALL_SHARE * start, "red_at": red_fall, "grey_at": grey_fall}
    if red_fall is not None and red_fall == grey_fall:
        claims.append(Claim("claims.occlusion.fall_together", fall))
    elif red_fall is not None and grey_fall is not None:
        claims.append(Claim("claims.occlusion.fall_both", fall))
    elif red_fall is not None:
        claims.append(Claim("claims.occlusion.fall_red", fall))
    elif grey_fall is not None:
        claims.append(Claim("claims.occlusion.fall_grey", fall))
    else:
        claims.append(Claim("claims.occlusion.fall_none", fall))
    faster, red_area, grey_area = occlusion_reading(red, grey, AREA_MARGIN)
    area = {"rollout_faster": "red_lower", "random_faster": "grey_lower", "similar": "similar"}[faster]
    claims.append(Claim(f"claims.occlusion.area_{area}", {"red": red_area, "grey": grey_area}))
    return claims


# --------------------------------------------------------------------------------------------
# Page 6: what LayerNorm does to the tokens' lengths
# --------------------------------------------------------------------------------------------


def spread(lengths: np.ndarray) -> float:
    """Coefficient of variation: standard deviation / mean (0 when every value is the same)."""
    lengths = np.asarray(lengths, dtype=np.float64)
    mean = float(lengths.mean())
    return float(lengths.std()) / mean if mean > 0 else 0.0


def layer_norm_lengths(before: np.ndarray, after: np.ndarray) -> Claim:
    """How alike the tokens' lengths are before and after a LayerNorm.

    Args:
        before: (T,) ||x|| of every token.
        after: (T,) ||norm(x)|| of every token.

    Returns:
        "nearly the same length", "more alike but not equal" or "not more alike", with both
        ranges and both spreads (coefficient of variation over the tokens).
    """
    before, after = np.asarray(before, dtype=np.float64), np.asarray(after, dtype=np.float64)
    cv_before, cv_after = spread(before), spread(after)
    values = {
        "tokens": before.size,
        "before_low": float(before.min()),
        "before_high": float(before.max()),
        "after_low": float(after.min()),
        "after_high": float(after.max()),
        "cv_before": cv_before,
        "cv_after": cv_after,
        "times": cv_before / cv_after if cv_after > 0 else float("inf"),
    }
    if cv_after < EQUAL_SPREAD:
        return Claim("claims.layernorm.equal", values)
    if cv_after * NARROWER <= cv_before:
        return Claim("claims.layernorm.narrower", values)
    return Claim("claims.layernorm.not_narrower", values)


def token_axis(num_prefix_tokens: int) -> Claim:
    """The title of an axis of token indices: what index 0 is for this model."""
    return Claim("claims.token_axis.cls" if num_prefix_tokens else "claims.token_axis.no_cls")


# --------------------------------------------------------------------------------------------
# Page 3: principal components of the patch filters
# --------------------------------------------------------------------------------------------


def components_needed(ratios: np.ndarray) -> int:
    """How many leading components carry VARIANCE_SHARE of the variance."""
    ratios = np.asarray(ratios, dtype=np.float64)
    return min(int(np.searchsorted(np.cumsum(ratios), VARIANCE_SHARE - 1e-9)) + 1, ratios.size)


def components_to_show(ratios: np.ndarray) -> int:
    """``components_needed``, at most MOST_COMPONENTS tiles."""
    return max(1, min(components_needed(ratios), MOST_COMPONENTS))


def filter_components(ratios: np.ndarray, patch_size: int) -> dict[str, Claim]:
    """What the components of the patch filters carry, and what they can look like.

    Args:
        ratios: every component's share of the variance, largest first (all of them: the
            second output of ``analysis.patch_embed_components`` with k = all).
        patch_size: the filters' side P in pixels.

    Returns:
        "title": how many components are shown and the share they carry; "spread": how many
        of all components carry VARIANCE_SHARE (few: the filters vary along a few patterns;
        most: spread evenly, as in random filters); "size": whether P x P tiles are fine enough
        to look like the paper's smooth patterns.
    """
    ratios = np.asarray(ratios, dtype=np.float64)
    total = ratios.size
    needed = components_needed(ratios)
    shown = components_to_show(ratios)
    values = {
        "shown": shown,
        "needed": needed,
        "total": total,
        "share": VARIANCE_SHARE,
        "carried": float(ratios[:shown].sum()),
        "last": float(ratios[shown - 1]),
        "p": patch_size,
        "pp": patch_size * patch_size,
        "paper_p": PAPER_PATCH,
    }
    return {
        "title": Claim("claims.filters.title" if shown == needed else "claims.filters.title_capped", values),
        "spread": Claim("claims.filters.even" if needed >= EVEN_SHARE * total else "claims.filters.few", values),
        "size": Claim("claims.filters.small" if patch_size < SMOOTH_SIDE else "claims.filters.paper_size", values),
    }


def gelu_inputs(preactivations: np.ndarray) -> Claim:
    """How many of the numbers GELU receives for one token are negative (the histogram beside it)."""
    pre = np.asarray(preactivations, dtype=np.float64)
    return Claim("block.gelu_caption", {"hidden": pre.size, "negative": float((pre < 0).mean())})


def depth_trend(
    residual_norm: np.ndarray, attn_ratio: np.ndarray, mlp_ratio: np.ndarray, cosine: np.ndarray
) -> list[Claim]:
    """How the stream and the two branches change over the layers (the "layer by layer" charts).

    Args:
        residual_norm: (depth,) mean ||x|| of the tokens entering each block.
        attn_ratio, mlp_ratio: (depth,) mean ||branch|| / ||stream|| in each block.
        cosine: (depth,) mean cosine of each block's output with its input.

    Returns:
        Whether the stream grows, shrinks or stays (its last layer's size against its first's,
        DEPTH_SAME apart), whether every branch is smaller than the stream it is added to (or
        in which layers one is not), and the range of the cosines.
    """
    residual_norm = np.asarray(residual_norm, dtype=np.float64)
    per_layer = np.maximum(np.asarray(attn_ratio, dtype=np.float64), np.asarray(mlp_ratio, dtype=np.float64))
    ratios = np.concatenate([np.asarray(attn_ratio, dtype=np.float64), np.asarray(mlp_ratio, dtype=np.float64)])
    cosine = np.asarray(cosine, dtype=np.float64)
    first, last = float(residual_norm[0]), float(residual_norm[-1])
    change = (last - first) / max(first, last, 1e-12)
    stream = "same" if abs(change) < DEPTH_SAME else "grows" if change > 0 else "shrinks"
    branches = "smaller" if float(ratios.max()) < 1 else "larger"
    values = {
        "first": first,
        "last": last,
        "depth": residual_norm.size,
        "ratio_low": float(ratios.min()),
        "ratio_high": float(ratios.max()),
        "cos_low": float(cosine.min()),
        "cos_high": float(cosine.max()),
        "layers": ", ".join(str(layer + 1) for layer in np.flatnonzero(per_layer >= 1)),
    }
    return [Claim(f"claims.depth.stream_{stream}", values), Claim(f"claims.depth.branches_{branches}", values)]


@dataclass(frozen=True)
class ClassName:
    """A class name as the model spells it, written in the reader's language by ``text``."""

    name: str


def logit_lens(top1: Sequence[int], final_class: int, class_names: Sequence[str] | None) -> Claim:
    """After which layer the final answer takes the lead for good (the logit lens table).

    Args:
        top1: (depth + 1,) the class on top after each block (entry 0: the embeddings).
        final_class: the model's answer (the last entry of ``top1``).
        class_names: the model's class names, or None (classes are then numbered).

    Returns:
        "only at the end", "from layer l on" (or "from the embeddings on"), with the classes
        that led before, in the order they first led.
    """
    top1 = [int(c) for c in top1]
    steady = len(top1) - 1
    while steady > 0 and top1[steady - 1] == final_class:
        steady -= 1

    def name(index: int) -> ClassName | Claim:
        return ClassName(class_names[index]) if class_names else Claim("prediction.class_n", {"n": index})

    others = tuple(name(c) for c in dict.fromkeys(top1[:steady]) if c != final_class)
    values = {"name": name(final_class), "layer": steady, "depth": len(top1) - 1, "others": others}
    if steady == 0:
        return Claim("claims.lens.from_embeddings", values)
    if steady == len(top1) - 1:
        return Claim("claims.lens.only_last", values)
    return Claim("claims.lens.from_layer", values)


def normalised_input(values: np.ndarray) -> Claim:
    """The title of the histogram of the normalised input: where its values are centred.

    The training mean and standard deviation centre the *training set* near 0; a dark or bright
    image is not. Centred "near 0" means a mean within NEAR_ZERO of it (a quarter of a standard
    deviation of the training pixels).
    """
    values = np.asarray(values, dtype=np.float64)
    mean = float(values.mean())
    where = "near" if abs(mean) < NEAR_ZERO else "below" if mean < 0 else "above"
    return Claim(f"claims.input.{where}", {"mean": mean, "std": float(values.std())})


def routes(differences: dict[str, float], tolerance: float) -> Claim:
    """Whether every route to the patch tokens agrees with the model's Conv2d (page 3's table)."""
    worst = max(differences.values())
    key = "vectors.check_ok" if worst < tolerance else "vectors.check_fail"
    return Claim(key, {"diff": f"{worst:.1e}", "tol": f"{tolerance:.0e}"})


def reach(fields: Sequence[tuple[str, int]], distances: np.ndarray, side: int) -> Claim:
    """The ViT's farthest-looking head of layer 1 against the CNN's first receptive field, and the
    first CNN layer whose receptive field covers the image (page 8's reach chart)."""
    covering = next((name for name, size in fields if size >= side), None)
    values = {"vit": float(np.asarray(distances, dtype=np.float64)[0].max()), "cnn": fields[0][1], "side": side}
    if covering is None:  # the last layer's field, the widest, short of the image
        return Claim("compare.reach_reading_never", values | {"last": fields[-1][1]})
    return Claim("compare.reach_reading", values | {"layer": Markdown(f"`{covering}`")})


# --------------------------------------------------------------------------------------------
# The lab's trust page: the test set's table, a switched-off head, the costliest head
# --------------------------------------------------------------------------------------------


def trust_over_images(summary: dict) -> list[Claim]:
    """What the shipped faithfulness table says over its images: the ranking with the highest mean
    insertion area minus deletion area, and the one that beats every random order on the most
    images (``vitviz.analyses.faithfulness.over_images``'s table).
    """
    rows = {m: row for m, row in summary["methods"].items() if "beats_random" in row}
    if not rows:
        return []
    margin = {m: row["insertion_auc"] - row["deletion_auc"] for m, row in rows.items()}
    best = max(rows, key=lambda m: margin[m])
    beats = max(rows, key=lambda m: rows[m]["beats_random"])
    values = {
        "method": Claim(f"trust.method.{best}"),
        "margin": margin[best],
        "images": summary["images"],
        "beats_method": Claim(f"trust.method.{beats}"),
        "beats": f"{rows[beats]['beats_random']:.0%}",
    }
    return [Claim("trust.set_reading", values)]


def ablation_answer(
    before: np.ndarray, after: np.ndarray, class_names: Sequence[str], heads: int, layers: int
) -> Claim:
    """What switching heads or layers off did to the answer: nothing switched off, the same answer
    (its probability before and after), or another answer."""
    first, then = int(np.argmax(before)), int(np.argmax(after))
    values = {
        "heads": heads,
        "layers": layers,
        "before": ClassName(class_names[first]),
        "p_before": f"{float(before[first]):.1%}",
        "after": ClassName(class_names[then]),
        "p_after": f"{float(after[then]):.1%}",
        "p_kept": f"{float(after[first]):.1%}",
    }
    if heads == 0 and layers == 0:
        return Claim("trust.ablation_none", values)
    return Claim("trust.ablation_same" if first == then else "trust.ablation_changed", values)


def costliest_head(drops: np.ndarray, accuracy: float, images: int, mode: str) -> Claim:
    """Which head, switched off alone, costs the test set the most accuracy (layers and heads
    counted from 1), and how many heads cost less than one image in a hundred."""
    drops = np.asarray(drops, dtype=np.float64)
    layer, head = np.unravel_index(int(np.argmax(drops)), drops.shape)
    values = {
        "layer": int(layer) + 1,
        "head": int(head) + 1,
        "drop": f"{float(drops[layer, head]):.1%}",
        "accuracy": f"{accuracy:.1%}",
        "images": f"{images:,}",
        "small": int((drops < SMALL_DROP).sum()),
        "total": drops.size,
        "mode": Claim(f"trust.mode.{mode}"),
    }
    return Claim("trust.costliest" if float(drops.max()) >= SMALL_DROP else "trust.costliest_none", values)


SMALL_DROP = 0.01  # a head whose removal costs under 1% of the test images' accuracy "costs little"


def neighbour_agreement(points: np.ndarray, labels: np.ndarray, chunk: int = 1024) -> float:
    """The share of points whose nearest other point (in the plane) has the same label."""
    points = np.asarray(points, dtype=np.float32)
    labels = np.asarray(labels)
    same = 0
    squared = (points**2).sum(axis=1)
    for start in range(0, len(points), chunk):
        block = points[start : start + chunk]  # (c, 2)
        distances = squared[start : start + chunk, None] - 2 * block @ points.T + squared[None, :]  # (c, n)
        distances[np.arange(len(block)), np.arange(start, start + len(block))] = np.inf  # not itself
        same += int((labels[distances.argmin(axis=1)] == labels[start : start + chunk]).sum())
    return same / max(len(points), 1)


def test_set_map(points: np.ndarray, labels: np.ndarray, predictions: np.ndarray, mirrored: bool = False) -> Claim:
    """What the map of the test set shows: how many images are answered right, and how often a
    point's nearest neighbour on the map has its class (how well the projection keeps classes apart).
    ``predictions`` are the one pass the map shows; ``mirrored``: the model answers in the lab with
    the mean of each image and its mirror image, and the sentence says whose count this is."""
    labels, predictions = np.asarray(labels), np.asarray(predictions)
    values = {
        "right": f"{int((labels == predictions).sum()):,}",
        "count": f"{len(labels):,}",
        "same": f"{neighbour_agreement(points, labels):.0%}",
    }
    return Claim("map.reading_one_pass" if mirrored else "map.reading", values)


# --------------------------------------------------------------------------------------------
# Page 2: the patch grid (takeaways: arithmetic on the model's sizes, which change per model)
# --------------------------------------------------------------------------------------------


def patch_grid(
    image_size: tuple[int, int], square: int, grid: tuple[int, int], patch_dim: int, hybrid: bool = False
) -> Claim:
    """How the image becomes tokens: the grid and the numbers each token holds (of a hybrid, the
    squares of pixels its tokens stand for)."""
    (height, width), (grid_h, grid_w) = image_size, grid
    values = {"height": height, "width": width, "grid_h": grid_h, "grid_w": grid_w, "count": grid_h * grid_w}
    values |= {"s": square, "dim": patch_dim}
    return Claim("claims.patch_grid_hybrid" if hybrid else "claims.patch_grid", values)


def patch_order(count: int, grid_w: int) -> Claim:
    """Reading order: patch 1 at the top left, the second row starting at patch ``grid_w + 1``."""
    if count <= grid_w:
        return Claim("claims.patch_order_one_row", {"count": count})
    return Claim("claims.patch_order", {"count": count, "second_row": grid_w + 1})


def attention_pairs(tokens: int) -> Claim:
    """Attention compares every pair of tokens: ``tokens`` squared scores per head and layer."""
    return Claim("patches.attention_cost", {"tokens": tokens, "pairs": f"{tokens * tokens:,}"})


# --------------------------------------------------------------------------------------------
# Pages 7 and 8: the answer, a map's focus, the occluded strip, an experiment (takeaways)
# --------------------------------------------------------------------------------------------

# An answer is *clear* when its probability is at least CLEAR_LEAD times the next class's. A map
# is *focused* when its brightest quarter of cells holds at least FOCUSED of its weight (an even
# map: a quarter).
CLEAR_LEAD = 2.0
FOCUSED = 0.5
QUARTER = 0.25


def top_answer(names: Sequence[str], probabilities: Sequence[float]) -> Claim:
    """The answer and how far it leads the next class (the top-k bars, best first).

    Args:
        names: the classes as the model spells them, best first.
        probabilities: their probabilities, best first.
    """
    values: dict[str, object] = {"name": ClassName(names[0]), "p": float(probabilities[0])}
    if len(names) < 2:
        return Claim("claims.top.only", values)
    first, second = float(probabilities[0]), float(probabilities[1])
    values |= {"runner": ClassName(names[1]), "q": second, "gap": f"{100 * (first - second):.1f}"}
    if second <= 0 or first >= CLEAR_LEAD * second:
        values["ratio"] = f"{first / second:.1f}" if second > 0 else "∞"
        return Claim("claims.top.clear", values)
    return Claim("claims.top.close", values)


def map_focus(values: np.ndarray) -> Claim:
    """How much of a map's weight (its values clipped at 0) its brightest quarter of cells holds."""
    weights = np.clip(np.asarray(values, dtype=np.float64).ravel(), 0.0, None)
    total = float(weights.sum())
    if total <= 0:
        return Claim("claims.focus.empty")
    count = max(1, round(QUARTER * weights.size))
    share = float(np.sort(weights)[::-1][:count].sum()) / total
    return Claim("claims.focus.focused" if share >= FOCUSED else "claims.focus.spread", {"share": share})


def occluded_strip(hidden: float, kept: float, start: float, name: ClassName | Claim) -> Claim:
    """The occlusion strip's last picture: the answer's probability with ``hidden`` of the patches
    hidden (most attended first), against ``start`` with none hidden; it *falls* under FALL_SHARE
    of its start."""
    values = {"hidden": float(hidden), "kept": float(kept), "start": float(start), "name": name}
    return Claim("claims.occluded.falls" if kept < FALL_SHARE * start else "claims.occluded.holds", values)


def experiment(
    vit_before: tuple[str, float],
    vit_after: tuple[str, float],
    cnn_before: tuple[str, float],
    cnn_after: tuple[str, float] | None,
) -> Claim:
    """Whether each model keeps its answer after an experiment ((class, probability) before and
    after; ``cnn_after`` None: the experiment does not apply to the CNN)."""
    values = {"vit": ClassName(vit_after[0]), "vit_p": float(vit_after[1])}
    vit_keeps = vit_after[0] == vit_before[0]
    if cnn_after is None:
        return Claim("claims.experiment.vit_keeps_na" if vit_keeps else "claims.experiment.vit_changes_na", values)
    values |= {"cnn": ClassName(cnn_after[0]), "cnn_p": float(cnn_after[1])}
    cnn_keeps = cnn_after[0] == cnn_before[0]
    key = {(True, True): "both_keep", (False, False): "both_change", (False, True): "vit_changes"}
    return Claim(f"claims.experiment.{key.get((vit_keeps, cnn_keeps), 'cnn_changes')}", values)


def occlusion_area(rollout_curve: np.ndarray, random_curve: np.ndarray) -> Claim:
    """The occlusion chart's one line: which order costs the answer more over the whole curve (the
    lower mean probability, by more than AREA_MARGIN), as ``occlusion``'s last sentence reads it."""
    faster, red_area, grey_area = occlusion_reading(
        np.asarray(rollout_curve, dtype=np.float64), np.asarray(random_curve, dtype=np.float64), AREA_MARGIN
    )
    key = {"rollout_faster": "red_lower", "random_faster": "grey_lower", "similar": "similar"}[faster]
    return Claim(f"claims.occlusion.short_{key}", {"red": red_area, "grey": grey_area})


# --------------------------------------------------------------------------------------------
# Pages 5 and 6: the takeaways of the attention maps and of the encoder block's charts
# --------------------------------------------------------------------------------------------

# An attention map is *focused* when its largest weight is at least PEAKED times an even share
# (the map's mean); below that it spreads its attention almost evenly. One key *takes most* of a
# query's weight at MOST_WEIGHT or more; the top keys shown carry *most* of it at MOST_WEIGHT.
PEAKED = 2.0
MOST_WEIGHT = 0.5


def _patch(index: int, grid_w: int) -> dict[str, int]:
    """A patch's number and place counted from 1, as the pages write them."""
    return {"patch": index + 1, "row": index // grid_w + 1, "col": index % grid_w + 1}


def attention_focus(values: np.ndarray, who: str, own: int | None = None) -> Claim:
    """Where one attention map (a figure's colours) puts its largest weight.

    Args:
        values: (grid_h, grid_w) the weights a query gives the patches.
        who: the query, as the figure's title names it ("[CLS] · Layer 1, Head 1").
        own: the query's own patch index (0-based), when the query is a patch.

    Returns:
        "spreads almost evenly" (the largest weight under PEAKED times the mean), "looks most at
        itself", or "looks most at patch p", with the weight and its multiple of an even share.
    """
    values = np.asarray(values, dtype=np.float64)
    peak = int(values.argmax())
    mean = float(values.mean())
    top = float(values.flat[peak])
    said = {"who": who, "top": top, "times": top / mean if mean > 0 else 1.0, **_patch(peak, values.shape[-1])}
    if said["times"] < PEAKED:
        return Claim("claims.focus.even", said)
    if own is not None and peak == own:
        return Claim("claims.focus.self", said)
    return Claim("claims.focus.peak", said)


def head_peaks(maps: np.ndarray, where: str) -> Claim:
    """Whether the heads of one layer look most at the same patch (the small multiples).

    Args:
        maps: (heads, grid_h, grid_w) one query's attention in every head.
        where: the layer, as the page names it ("Layer 1").
    """
    maps = np.asarray(maps, dtype=np.float64)
    heads, grid_w = maps.shape[0], maps.shape[-1]
    peaks = maps.reshape(heads, -1).argmax(axis=1)
    found, counts = np.unique(peaks, return_counts=True)
    common = int(found[counts.argmax()])
    said = {"heads": heads, "where": where, "k": int(found.size), "shared": int(counts.max()), **_patch(common, grid_w)}
    if heads == 1:
        return Claim("claims.heads.one", said)
    if found.size == 1:
        return Claim("claims.heads.same", said)
    if found.size == heads:
        return Claim("claims.heads.differ", said)
    return Claim("claims.heads.some", said)


def key_weights(weights: Sequence[float], tokens: Sequence[int], total: int) -> Claim:
    """How much of one query's weight its top keys take (the worked example's bars).

    Args:
        weights: the shown keys' softmax weights, largest first.
        tokens: their token indices.
        total: how many keys the query weighs (every token).
    """
    weights = np.asarray(weights, dtype=np.float64)
    said = {"k": weights.size, "tokens": total, "shown": float(weights.sum()), "top": float(weights[0])}
    said["token"] = int(tokens[0])
    if said["top"] >= MOST_WEIGHT:
        return Claim("claims.keys.one", said)
    return Claim("claims.keys.few" if said["shown"] >= MOST_WEIGHT else "claims.keys.spread", said)


def block_shape(shape: Sequence[int], hidden: int, depth: int) -> Claim:
    """What one block does to the shape of the tokens (the diagram): it keeps it, so blocks
    stack; inside, the MLP passes each token through ``hidden`` numbers."""
    dim = int(shape[-1])
    said = {"depth": depth, "shape": "(" + ", ".join(map(str, shape)) + ")", "dim": dim, "hidden": hidden}
    said["times"] = hidden / dim
    return Claim("claims.block.widens" if hidden > dim else "claims.block.narrows", said)


def layer_norm_takeaway(before: np.ndarray, after: np.ndarray) -> Claim:
    """``layer_norm_lengths`` in one line: the spreads before and after norm1, and what that means."""
    found = layer_norm_lengths(before, after)
    line = {
        "claims.layernorm.equal": "claims.layernorm_line.equal",
        "claims.layernorm.narrower": "claims.layernorm_line.narrower",
        "claims.layernorm.not_narrower": "claims.layernorm_line.not_narrower",
    }
    return Claim(line[found.key], found.values)


def branch_sizes(attn_ratio: np.ndarray, mlp_ratio: np.ndarray, layer: int) -> Claim:
    """Which branch changes the tokens more in one layer: the mean over the tokens of
    ||branch|| / ||stream|| (the ratio chart).

    Args:
        attn_ratio, mlp_ratio: (T,) each token's ratio.
        layer: the layer, counted from 1.
    """
    attn, mlp = float(np.mean(attn_ratio)), float(np.mean(mlp_ratio))
    said = {"attn": attn, "mlp": mlp, "layer": layer}
    return Claim("claims.branches.mlp" if mlp > attn else "claims.branches.attn", said)


def gelu_share(preactivations: np.ndarray) -> Claim:
    """``gelu_inputs`` in one line: whether most of what GELU gets for a token is negative."""
    pre = np.asarray(preactivations, dtype=np.float64)
    said = {"hidden": pre.size, "negative": float((pre < 0).mean())}
    return Claim("claims.gelu.mostly_negative" if said["negative"] >= 0.5 else "claims.gelu.mostly_positive", said)


# Pages 0, 1, 3 and 4: the overview, the input, patch vectors and tokens
# --------------------------------------------------------------------------------------------

WHOLE_PHOTO = 0.995  # a crop that keeps this share of the photo keeps all of it
SAME_SCALE = 0.05  # a photo within 5% of the input's size is not resized
FULL_RANGE = 0.5  # pixels whose 1st to 99th percentiles span this much of [0, 1] spread widely
SMALL_POSITION = 0.25  # position embeddings under a quarter of the patch tokens' length are "small"
LAYOUT_MARGIN = 0.1  # neighbours this much more alike (cosine) than positions in general: a 2D layout


def _kept_box(size: tuple[int, int], pre) -> tuple[float, float, int, int]:
    """The photo's region the model's input shows, as ``data.resize_and_crop`` cuts it: its
    (width, height) in the photo's pixels, and the input's (width, height)."""
    width, height = size
    resized_w, resized_h, out_w, out_h = pre.sizes(width, height)
    kept_w = min(out_w, resized_w) * width / resized_w
    kept_h = min(out_h, resized_h) * height / resized_h
    return kept_w, kept_h, out_w, out_h


def kept_region(size: tuple[int, int], pre) -> Claim:
    """How much of the photo (``size``: its width and height) the preprocessing ``pre``
    (``config.Preprocess``) keeps: all of it, or the middle that the centre crop leaves."""
    kept_w, kept_h, _, _ = _kept_box(size, pre)
    share = kept_w * kept_h / (size[0] * size[1])
    if share >= WHOLE_PHOTO:
        return Claim("claims.kept_all")
    return Claim("claims.kept_crop", {"kept_w": round(kept_w), "kept_h": round(kept_h), "share": f"{share:.0%}"})


def input_scale(size: tuple[int, int], pre) -> Claim:
    """How many of the photo's pixels one input pixel stands for (or the other way round, for a
    photo smaller than the input)."""
    kept_w, _, out_w, _ = _kept_box(size, pre)
    factor = kept_w / out_w  # photo pixels per input pixel, across
    if abs(factor - 1) < SAME_SCALE:
        return Claim("claims.scale_same")
    if factor > 1:
        return Claim("claims.scale_down", {"f": f"{factor:.1f}"})
    return Claim("claims.scale_up", {"f": f"{1 / factor:.1f}"})


def channel_means(names: Sequence[str], channels: np.ndarray) -> Claim:
    """Which channel is highest and which lowest on average (``channels``: (C, ...) values)."""
    channels = np.asarray(channels, dtype=np.float64)
    means = channels.reshape(len(channels), -1).mean(axis=1)
    if len(means) == 1:
        return Claim("claims.channel_one", {"mean": f"{means[0]:.2f}"})
    high, low = int(means.argmax()), int(means.argmin())
    values = {
        "high": names[high],
        "high_mean": f"{means[high]:.2f}",
        "low": names[low],
        "low_mean": f"{means[low]:.2f}",
    }
    return Claim("claims.channel_highest", values)


def pixel_range(values: np.ndarray) -> Claim:
    """Where 98% of the pixel values in [0, 1] lie (1st to 99th percentile): widely spread, or in
    a narrow part of the range (a low-contrast picture)."""
    low, high = np.percentile(np.asarray(values, dtype=np.float64), [1, 99])
    key = "claims.range_full" if high - low >= FULL_RANGE else "claims.range_narrow"
    return Claim(key, {"low": f"{low:.2f}", "high": f"{high:.2f}"})


def normalisation(before: np.ndarray, after: np.ndarray) -> Claim:
    """What normalisation did to the pixel values' mean and spread, and where the mean lands
    against the training images' (0, within NEAR_ZERO)."""
    before, after = np.asarray(before, dtype=np.float64), np.asarray(after, dtype=np.float64)
    mean = float(after.mean())
    where = "near" if abs(mean) < NEAR_ZERO else "below" if mean < 0 else "above"
    values = {"before": f"{before.mean():.2f}", "after": f"{mean:.2f}", "std": f"{after.std():.2f}"}
    return Claim(f"claims.normalised.{where}", values)


def chosen_patch(index: int, grid: tuple[int, int], square: int) -> Claim:
    """Where the chosen patch (0-based ``index``) lies: its row and column, and its pixels."""
    grid_h, grid_w = grid
    row, col = divmod(index, grid_w)
    values = {
        "index": index + 1,
        "count": grid_h * grid_w,
        "row": row + 1,
        "col": col + 1,
        "x0": col * square + 1,
        "x1": (col + 1) * square,
        "y0": row * square + 1,
        "y1": (row + 1) * square,
    }
    return Claim("claims.chosen_patch", values)


def vector_peak(vector: np.ndarray, patch_size: int, names: Sequence[str] | None) -> Claim:
    """Where the patch vector x_p (in (c p1 p2) order) has its largest number: the channel, row
    and column of the patch it comes from (``names``: the channels'; None for a hybrid's cell of
    feature channels)."""
    vector = np.asarray(vector, dtype=np.float64)
    position = int(vector.argmax())
    values = {"value": f"{vector[position]:.2f}", "position": position + 1, "length": vector.size}
    if names is None:
        return Claim("claims.vector_peak_hybrid", values)
    channel, within = divmod(position, patch_size * patch_size)
    row, col = divmod(within, patch_size)
    return Claim("claims.vector_peak", values | {"channel": names[channel], "row": row + 1, "col": col + 1})


def projection(length: int, dim: int) -> Claim:
    """What W does to the patch vector's size: more, as many or fewer numbers."""
    key = (
        "claims.projection_more"
        if dim > length
        else "claims.projection_same"
        if dim == length
        else "claims.projection_fewer"
    )
    return Claim(key, {"length": length, "dim": dim})


def patch_rows(count: int, dim: int) -> Claim:
    """The patch tokens as rows: one row a patch, each of D numbers."""
    return Claim("claims.patch_rows", {"count": count, "dim": dim})


def sequence(count: int, dim: int, prefix: int) -> Claim:
    """The sequence the first block reads: [CLS] (and other prefix tokens) on top of the patches."""
    if prefix == 0:
        return Claim("claims.sequence_no_cls", {"count": count})
    return Claim("claims.sequence_cls", {"count": count, "tokens": count + prefix, "dim": dim, "prefix": prefix})


def position_share(patch_tokens: np.ndarray, pos_embed: np.ndarray, prefix: int) -> Claim:
    """How long the patches' position embeddings are against the patch tokens they are added to
    (the mean over patches of the ratio of their lengths)."""
    tokens = np.linalg.norm(np.asarray(patch_tokens, dtype=np.float64), axis=-1)  # (N,)
    positions = np.linalg.norm(np.asarray(pos_embed, dtype=np.float64)[prefix:], axis=-1)  # (N,)
    ratio = float(np.mean(positions / np.maximum(tokens, 1e-12)))
    return Claim("claims.pos_small" if ratio < SMALL_POSITION else "claims.pos_large", {"ratio": f"{ratio:.0%}"})


def position_layout(similarity: np.ndarray) -> Claim:
    """Whether the position embeddings hold the 2D layout: neighbours (above, below, left,
    right) more alike than positions in general, by LAYOUT_MARGIN in cosine similarity.
    ``similarity``: (grid_h, grid_w, grid_h, grid_w)."""
    similarity = np.asarray(similarity, dtype=np.float64)
    grid_h, grid_w = similarity.shape[:2]
    if grid_h * grid_w < 2:
        return Claim("claims.layout_one")
    near, far = neighbours_and_all(similarity)
    key = "claims.layout_learned" if near - far >= LAYOUT_MARGIN else "claims.layout_none"
    return Claim(key, {"near": f"{near:.2f}", "far": f"{far:.2f}"})


def neighbours_and_all(similarity: np.ndarray) -> tuple[float, float]:
    """The mean cosine similarity of grid neighbours (above, below, left, right) and of all pairs
    of different positions, from a (grid_h, grid_w, grid_h, grid_w) grid with at least two
    positions (``position_layout`` compares the two)."""
    similarity = np.asarray(similarity, dtype=np.float64)
    grid_h, grid_w = similarity.shape[:2]
    flat = similarity.reshape(grid_h * grid_w, grid_h * grid_w)
    others = ~np.eye(grid_h * grid_w, dtype=bool)
    pairs = [(r, c, r + dr, c + dc) for r in range(grid_h) for c in range(grid_w) for dr, dc in ((0, 1), (1, 0))]
    near = float(np.mean([similarity[pair] for pair in pairs if pair[2] < grid_h and pair[3] < grid_w]))
    return near, float(flat[others].mean())


def nearest_position(similarity: np.ndarray, chosen: tuple[int, int]) -> Claim:
    """The position most like the chosen one (``similarity``: its (grid_h, grid_w) map), and
    whether it is next to it (one of the eight around it)."""
    similarity = np.asarray(similarity, dtype=np.float64).copy()
    grid_h, grid_w = similarity.shape
    if grid_h * grid_w < 2:
        return Claim("claims.layout_one")
    row, col = chosen
    similarity[row, col] = -np.inf
    other_row, other_col = divmod(int(similarity.argmax()), grid_w)
    values = {
        "index": row * grid_w + col + 1,
        "other": other_row * grid_w + other_col + 1,
        "row": other_row + 1,
        "col": other_col + 1,
        "cos": f"{similarity[other_row, other_col]:.2f}",
    }
    beside = max(abs(other_row - row), abs(other_col - col)) == 1
    return Claim("claims.nearest_beside" if beside else "claims.nearest_far", values)


def _correlation(a: np.ndarray, b: np.ndarray) -> float:
    a, b = np.asarray(a, dtype=np.float64).ravel(), np.asarray(b, dtype=np.float64).ravel()
    if a.std() == 0 or b.std() == 0:
        return 0.0
    return float(np.corrcoef(a, b)[0, 1])


def closest_scheme(model: np.ndarray, sincos_1d: np.ndarray, sincos_2d: np.ndarray) -> Claim:
    """Which fixed scheme the model's similarity map of one position follows more closely (the
    correlation of the maps' values)."""
    one, two = _correlation(model, sincos_1d), _correlation(model, sincos_2d)
    key = "claims.scheme_2d" if two >= one else "claims.scheme_1d"
    return Claim(key, {"c1": f"{one:.2f}", "c2": f"{two:.2f}"})


# --------------------------------------------------------------------------------------------
# Step 9, the model card, and the lab: a training record, accuracy per class
# --------------------------------------------------------------------------------------------


def training_curve(history: Sequence[dict]) -> Claim | None:
    """Where the record's accuracy went: the test accuracy over the epochs it was measured (the
    training accuracy where it never was), from its first to its last value, and its best. None
    for a record with no accuracy."""
    tested = [row for row in history if "test_accuracy" in row]
    rows, kind = (tested, "test") if tested else ([r for r in history if "train_accuracy" in r], "train")
    if not rows:
        return None
    key = f"{kind}_accuracy"
    best = max(rows, key=lambda row: row[key])
    values = {
        "what": Claim(f"claims.curve_{kind}"),
        "first": f"{rows[0][key]:.1%}",
        "start": rows[0]["epoch"],
        "last": f"{rows[-1][key]:.1%}",
        "end": rows[-1]["epoch"],
        "best": f"{best[key]:.1%}",
        "best_epoch": best["epoch"],
    }
    return Claim("claims.curve_rose" if rows[-1][key] >= rows[0][key] else "claims.curve_fell", values)


def class_accuracy(accuracies: dict[str, float]) -> Claim:
    """Which class the model gets right most often, and which least (a tie: the first named)."""
    best = max(accuracies, key=lambda name: accuracies[name])
    worst = min(accuracies, key=lambda name: accuracies[name])
    values = {
        "best": ClassName(best),
        "p_best": f"{accuracies[best]:.1%}",
        "worst": ClassName(worst),
        "p_worst": f"{accuracies[worst]:.1%}",
        "count": len(accuracies),
    }
    return Claim("claims.class_accuracy_even" if best == worst else "claims.class_accuracy", values)


# --------------------------------------------------------------------------------------------
# The lab's trust page: each figure's line (the deletion and insertion curves, rollout with
# heads switched off)
# --------------------------------------------------------------------------------------------


def trust_curve(reading, kind: str) -> Claim:
    """What the deletion (or insertion) figure of one image shows: the map whose order moves the
    answer's probability fastest (lowest deletion area, highest insertion area), against the
    random orders' mean area. ``reading``: ``vitviz.analyses.faithfulness.read``'s."""
    best = reading.best_deletion if kind == "deletion" else reading.best_insertion
    areas = reading.deletion if kind == "deletion" else reading.insertion
    shown, chance = round(areas[best], 3), round(areas["random"], 3)  # as the sentence writes them
    faster = shown < chance if kind == "deletion" else shown > chance
    values = {
        "method": Claim(f"trust.method.{best}"),
        "area": f"{areas[best]:.3f}",
        "random": f"{areas['random']:.3f}",
        "orders": reading.orders,
    }
    return Claim(f"claims.trust_{kind}" if faster else f"claims.trust_{kind}_not", values)


def _strongest(values: np.ndarray) -> tuple[int, int, int]:
    """The (patch counted from 1, row, column) of a (grid_h, grid_w) map's largest value."""
    row, col = np.unravel_index(int(np.argmax(values)), values.shape)
    return int(row) * values.shape[1] + int(col) + 1, int(row) + 1, int(col) + 1


def map_peak(values: np.ndarray) -> Claim:
    """Where a patch map is strongest, and its share of the map's total."""
    values = np.asarray(values, dtype=np.float64)
    patch, row, col = _strongest(values)
    total = float(np.abs(values).sum())
    share = float(values.max()) / total if total > 0 else 0.0
    return Claim("claims.map_peak", {"patch": patch, "row": row, "col": col, "share": f"{share:.1%}"})


def map_shift(before: np.ndarray, after: np.ndarray) -> Claim:
    """Whether switching parts of the model off moved a map's strongest patch, and how alike the
    maps stay (Pearson's correlation over the patches; two flat maps are alike only if equal)."""
    before, after = np.asarray(before, dtype=np.float64), np.asarray(after, dtype=np.float64)
    if before.std() > 0 and after.std() > 0:
        alike = float(np.corrcoef(before.ravel(), after.ravel())[0, 1])
    else:
        alike = 1.0 if np.allclose(before, after) else 0.0
    first, then = _strongest(before)[0], _strongest(after)[0]
    values = {"before": first, "after": then, "r": f"{alike:.2f}"}
    return Claim("claims.map_same_peak" if first == then else "claims.map_new_peak", values)


def top_two(probs: np.ndarray, class_names: Sequence[str]) -> Claim:
    """What top-k bars show: the answer and its probability, and the runner-up's (one class: the answer alone)."""
    probs = np.asarray(probs, dtype=np.float64)
    order = np.argsort(-probs, kind="stable")
    values = {"first": ClassName(class_names[order[0]]), "p_first": f"{probs[order[0]]:.1%}"}
    if len(order) < 2:
        return Claim("claims.top_one", values)
    values |= {"second": ClassName(class_names[order[1]]), "p_second": f"{probs[order[1]]:.1%}"}
    return Claim("claims.top_two", values)


# --------------------------------------------------------------------------------------------
# The misclassification lab: the confusion matrix, a gallery page, one image's logit lens
# --------------------------------------------------------------------------------------------


def most_confused(confusion: np.ndarray, class_names: Sequence[str]) -> Claim:
    """The confusion matrix's largest cell off the diagonal: which true class is most often taken
    for which other (rows true, columns predicted); none when every image is right."""
    counts = np.array(confusion, dtype=np.int64)
    np.fill_diagonal(counts, 0)
    true, predicted = np.unravel_index(int(np.argmax(counts)), counts.shape)
    values = {
        "true": ClassName(class_names[true]),
        "predicted": ClassName(class_names[predicted]),
        "count": f"{int(counts[true, predicted]):,}",
        "wrong": f"{int(counts.sum()):,}",
    }
    return Claim("claims.most_confused" if counts.sum() else "claims.none_confused", values)


def gallery_page(true: Sequence[str], predicted: Sequence[str], confidence: Sequence[float]) -> Claim:
    """What a gallery page shows: its most frequent (true, predicted) pair, and the confidence of
    its first and last image (the gallery lists the most confident first)."""
    pairs: dict[tuple[str, str], int] = {}
    for pair in zip(true, predicted, strict=True):
        pairs[pair] = pairs.get(pair, 0) + 1
    (first, then), count = max(pairs.items(), key=lambda item: item[1])  # a tie: the first met
    values = {
        "true": ClassName(first),
        "predicted": ClassName(then),
        "count": count,
        "shown": len(true),
        "high": f"{max(confidence):.0%}",
        "low": f"{min(confidence):.0%}",
    }
    return Claim("claims.gallery_page" if count > 1 else "claims.gallery_page_mixed", values)


def lens_lost(rank_true: Sequence[int], depth: int, name: str) -> Claim:
    """When the true class lost the lead in the logit lens (0: the embeddings): after the last
    point where it was the top answer, or never top; it may still be the final answer."""
    top = [point for point, rank in enumerate(rank_true) if int(rank) == 0]
    values = {"name": ClassName(name)}
    if not top:
        return Claim("mistakes.never_top", values)
    last = top[-1]
    if last >= depth:
        return Claim("claims.lens_kept", values)
    values |= {"block": last, "next": last + 1, "index": last}
    return Claim("mistakes.lost_at_embed" if last == 0 else "mistakes.lost_at", values)


# --------------------------------------------------------------------------------------------
# The lab's "How the ViT learned": one run, epoch by epoch
# --------------------------------------------------------------------------------------------

# The test loss *rose again* when its last value is more than LOSS_RISE (relative) above its lowest.
# The first components of the patch filters carry *more* of the variance than at the run's first
# snapshot when their share is MORE_VARIANCE (absolute) higher.
LOSS_RISE = 0.02
MORE_VARIANCE = 0.02


def when(epoch: int) -> Claim:
    """An epoch as a sentence names it: "before training" (0), "after epoch 5"."""
    return Claim("learn.when.before") if epoch == 0 else Claim("learn.when.after", {"epoch": epoch})


def positions_over_training(epochs: Sequence[int], near: Sequence[float], far: Sequence[float]) -> Claim:
    """When the position embeddings came to hold the 2D layout: the first epoch at which grid
    neighbours are more alike than positions in general by LAYOUT_MARGIN (``position_layout``'s
    test), and the epoch at which they are most alike relative to the rest (the largest gap); where
    that is not the last epoch, the last epoch's numbers too.

    Args:
        epochs: the epochs measured, in order (0: before training).
        near: the mean cosine similarity of neighbours at each (``neighbours_and_all``).
        far: that of all pairs of positions at each.
    """
    gaps = np.asarray(near, dtype=np.float64) - np.asarray(far, dtype=np.float64)
    most = int(np.argmax(gaps))
    values = {"last": epochs[-1], "most": when(epochs[most]), "near": f"{near[most]:.2f}", "far": f"{far[most]:.2f}"}
    formed = np.flatnonzero(gaps >= LAYOUT_MARGIN)
    if not formed.size:
        return Claim("learn.positions_not_formed", values)
    first = int(formed[0])
    values |= {"first": when(epochs[first]), "first_near": f"{near[first]:.2f}", "first_far": f"{far[first]:.2f}"}
    if most == len(epochs) - 1:
        return Claim("learn.positions_formed", values)
    values |= {"last_near": f"{near[-1]:.2f}", "last_far": f"{far[-1]:.2f}"}  # and where they ended
    return Claim("learn.positions_formed_then", values)


def accuracy_over_training(history: Sequence[dict]) -> Claim | None:
    """How test accuracy went over a run (its rows with a test accuracy; epoch 0: the weights
    before training): from the first to the last, and by which epoch half of the rise was made;
    or that it did not rise. None for fewer than two measured epochs."""
    rows = [row for row in history if "test_accuracy" in row]
    if len(rows) < 2:
        return None
    first, last = rows[0]["test_accuracy"], rows[-1]["test_accuracy"]
    values = {
        "start": when(rows[0]["epoch"]),
        "end": rows[-1]["epoch"],
        "before": f"{first:.1%}",
        "after": f"{last:.1%}",
    }
    if last <= first:
        return Claim("learn.accuracy_not_rose", values)
    half = next(row["epoch"] for row in rows if row["test_accuracy"] - first >= (last - first) / 2)
    return Claim("learn.accuracy_rose", values | {"half": half})


def loss_over_training(history: Sequence[dict]) -> Claim | None:
    """Where the test loss was lowest over a run, and whether it rose again after it by more than
    LOSS_RISE (the model beginning to fit its training images more than the test's). None for
    fewer than two measured epochs."""
    rows = [row for row in history if "test_loss" in row]
    if len(rows) < 2:
        return None
    best = min(rows, key=lambda row: row["test_loss"])
    values = {"best": f"{best['test_loss']:.3f}", "best_epoch": when(best["epoch"])}
    values |= {"first": f"{rows[0]['test_loss']:.3f}", "start": when(rows[0]["epoch"])}
    values |= {"last": f"{rows[-1]['test_loss']:.3f}", "end": rows[-1]["epoch"]}
    rose = rows[-1]["test_loss"] > best["test_loss"] * (1 + LOSS_RISE)
    return Claim("learn.loss_rose_again" if rose else "learn.loss_fell", values)


def filters_over_training(ratios: np.ndarray, first_ratios: np.ndarray, shown: int, epoch: int, first: int) -> Claim:
    """How much of the patch filters' variance their first ``shown`` principal components carry
    after ``epoch``, against the run's first snapshot (``first``: 0, before training): more by
    MORE_VARIANCE (the filters came to vary along fewer patterns), or not.

    Args:
        ratios: every component's share of the variance at ``epoch``, largest first.
        first_ratios: the same at the first snapshot.
    """
    now, start = float(np.sum(ratios[:shown])), float(np.sum(first_ratios[:shown]))
    values = {"shown": shown, "total": len(ratios), "now": f"{now:.1%}", "start": f"{start:.1%}", "first": when(first)}
    if epoch == first:
        return Claim("learn.filters_first", values | {"when": when(epoch)})
    return Claim("learn.filters_more" if now - start >= MORE_VARIANCE else "learn.filters_not_more", values)


def class_patch(votes: np.ndarray, model_map: np.ndarray, k: int = PATCH_TOP_K) -> Claim:
    """The class's patch poll beside the model's map (both per patch, row-major): whether the
    patch most students clicked is among the ``k`` the map ranks highest. Patches are counted
    from 1, as the hover names them."""
    votes, weights = np.asarray(votes, dtype=float).ravel(), np.asarray(model_map, dtype=float).ravel()
    if votes.sum() <= 0:
        return Claim("claims.patch_poll.no_votes", {"k": k})
    top = int(votes.argmax())
    rank = int((weights > weights[top]).sum()) + 1
    values = {"patch": top + 1, "votes": int(votes[top]), "total": int(votes.sum()), "rank": rank, "k": k}
    return Claim("claims.patch_poll.among" if rank <= k else "claims.patch_poll.outside", values)
