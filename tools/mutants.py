"""Plant bugs in vitviz's core one at a time and check that the unit tests catch each one.

    python tools/mutants.py              # every mutant (a few minutes on 2 cores)
    python tools/mutants.py --list       # their names, files and tests
    python tools/mutants.py -k ig,grid   # only the mutants whose name contains "ig" or "grid"
    python tools/mutants.py --file vitviz/steps/prediction.py   # only those planted in that file

Each mutant is one plausible bug written as a text replacement in the code that computes what a
class sees (vitviz/analyses/analysis.py and compare.py, vitviz/models/patches.py, the pass a map
explains in model.py) or writes what it reads (claims.py, faithfulness.py, ablation.py,
projection.py, the handout's numbers as steps 3 and 7 write them, the mirror sentences of
vitviz/steps/answers.py and mistakes.py, step 6's MLP boxes), with the unit tests that should catch
it. The work tree is never touched: its files (tracked and untracked, not ignored) are copied to a
temporary folder once, the tests every chosen mutant runs are run there without any mutant, then
every mutant is planted there in turn, its tests run there (``pytest -x``), and the file is
put back. A mutant is "killed" when a test fails, "survived" when every test passes, and
"stale" when its text is no longer in the file (the code moved on: mend the list).

The exit status is 0 when every mutant is killed or is a known survivor (``survives`` says why
it cannot be caught, e.g. an equivalent change), 1 otherwise. docs/mutants.md has the routine
and the last run's result.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BIG = 1_000_000  # bytes: larger files (the shipped weights) are linked into the copy, not copied
TIMEOUT_S = 300  # a mutant that makes its tests hang counts as killed


@dataclass(frozen=True)
class Mutant:
    name: str
    path: str  # relative to the repository
    old: str  # must occur exactly once in the file
    new: str
    tests: tuple[str, ...]  # pytest arguments: files, node ids, -k expressions
    survives: str = ""  # why a test cannot catch it (an equivalent change); empty: it must be killed


ANALYSIS, PATCHES, COMPARE = "vitviz/analyses/analysis.py", "vitviz/models/patches.py", "vitviz/analyses/compare.py"
CLAIMS, FAITHFULNESS, ABLATION = (
    "vitviz/analyses/claims.py",
    "vitviz/analyses/faithfulness.py",
    "vitviz/analyses/ablation.py",
)
PROJECTION = "vitviz/analyses/projection.py"
MISTAKES = "vitviz/steps/mistakes.py"
VECTORS, PREDICTION = "vitviz/steps/vectors.py", "vitviz/steps/prediction.py"
T_PREDICTION, T_MISTAKES = "tests/unit/test_steps_prediction.py", "tests/unit/test_steps_mistakes.py"
T_EXPLAINED = ("tests/unit/test_explained_pass.py",)
VALUES, ACCESS, STATE, BUDGET = (
    "vitviz/server/values.py",
    "vitviz/server/access.py",
    "vitviz/app/state.py",
    "vitviz/models/budget.py",
)
T_VALUES, T_ACCESS, T_BUDGET = "tests/unit/test_values.py", "tests/unit/test_access.py", "tests/unit/test_budget.py"
T_ANALYSIS, T_LAB, T_PATCHES = "tests/unit/test_analysis.py", "tests/unit/test_lab.py", "tests/unit/test_patches.py"
T_COMPARE, T_CLAIMS, T_FAITHFULNESS = (
    "tests/unit/test_compare.py",
    "tests/unit/test_claims.py",
    "tests/unit/test_faithfulness.py",
)
T_ABLATION, T_PROJECTION, T_HANDOUT = (
    "tests/unit/test_ablation.py",
    "tests/unit/test_projection.py",
    "tests/unit/test_handout.py",
)

MUTANTS = (
    # ---- attention rollout and what the pooled token reads
    Mutant(
        "rollout-later-blocks-on-the-right",
        ANALYSIS,
        "rollout = fused if rollout is None else fused @ rollout",
        "rollout = fused if rollout is None else rollout @ fused",
        (T_ANALYSIS, "-k", "rollout"),
    ),
    Mutant(
        "rollout-halves-instead-of-renormalising",
        ANALYSIS,
        "fused = fused / row_sums  # (B, T, T), rows sum to 1",
        "fused = fused / 2  # (B, T, T), rows sum to 1",
        (T_ANALYSIS, "-k", "rollout"),
    ),
    Mutant(
        "rollout-discards-the-strongest",
        ANALYSIS,
        "fused.topk(num_discard, dim=-1, largest=False)",
        "fused.topk(num_discard, dim=-1, largest=True)",
        (T_ANALYSIS, "-k", "rollout"),
    ),
    Mutant(
        "rollout-max-fusion-is-the-mean",
        ANALYSIS,
        "fused = attention.amax(dim=1)",
        "fused = attention.mean(dim=1)",
        (T_ANALYSIS, "-k", "rollout or no_cls"),
    ),
    Mutant(
        "pooled-row-of-the-first-patch",
        ANALYSIS,
        "return matrix[:, 0, prefix:]",
        "return matrix[:, prefix, prefix:]",
        (T_ANALYSIS, T_LAB, "-k", "rollout"),
    ),
    Mutant(
        "no-cls-pooled-row-flat",  # the mean over the keys' axis gives 1/N everywhere
        ANALYSIS,
        "matrix[:, prefix:, prefix:].mean(dim=1)",
        "matrix[:, prefix:, prefix:].mean(dim=2)",
        (T_ANALYSIS, T_LAB, "-k", "rollout or no_cls"),
    ),
    Mutant(
        "grad-rollout-keeps-negative-links",
        ANALYSIS,
        "(grad * attention.detach()).clamp_min(0.0).mean(dim=1, keepdim=True)",
        "(grad * attention.detach()).mean(dim=1, keepdim=True)",
        (T_LAB, "-k", "grad_rollout"),
    ),
    Mutant(
        "grad-rollout-gradient-alone",
        ANALYSIS,
        "(grad * attention.detach()).clamp_min(0.0)",
        "grad.clamp_min(0.0)",
        (T_LAB, "-k", "grad_rollout"),
    ),
    # ---- mean attention distance
    Mutant(
        "distance-normalised-over-the-keys-axis",  # symmetric fixtures let it pass
        ANALYSIS,
        "weights = weights / weights.sum(dim=-1, keepdim=True).clamp_min(1e-12)",
        "weights = weights / weights.sum(dim=-2, keepdim=True).clamp_min(1e-12)",
        (T_ANALYSIS, "-k", "distance"),
    ),
    Mutant(
        "distance-keeps-the-prefix-weight",
        ANALYSIS,
        "weights = weights / weights.sum(dim=-1, keepdim=True).clamp_min(1e-12)",
        "weights = weights",
        (T_ANALYSIS, "-k", "distance"),
    ),
    Mutant(
        "distance-from-patch-corners",
        ANALYSIS,
        "+ 0.5) * patch_size  # (N, 2)",
        ") * patch_size  # (N, 2)",
        (T_ANALYSIS, "-k", "distance"),
        survives="equivalent: moving every centre by half a patch changes no distance between two of them",
    ),
    # ---- logit lens ranks
    Mutant(
        "class-rank-counts-ties-above",
        ANALYSIS,
        "return (lens > score).sum(dim=-1)  # (L+1, B)",
        "return (lens >= score).sum(dim=-1) - 1  # (L+1, B)",
        (T_ANALYSIS, "-k", "rank"),
    ),
    # ---- patches
    Mutant(
        "grid-size-ignores-the-width",
        PATCHES,
        "if height % patch_size or width % patch_size:",
        "if height % patch_size:",
        (T_PATCHES,),
    ),
    Mutant(
        "grid-size-width-first",
        PATCHES,
        "return (height // patch_size, width // patch_size)",
        "return (width // patch_size, height // patch_size)",
        (T_PATCHES,),
    ),
    Mutant(
        "patchify-channels-last",
        PATCHES,
        '"b c (gh p1) (gw p2) -> b (gh gw) (c p1 p2)", p1=patch_size',
        '"b c (gh p1) (gw p2) -> b (gh gw) (p1 p2 c)", p1=patch_size',
        (T_PATCHES,),
    ),
    Mutant(
        "unfold-route-column-major",
        PATCHES,
        "x = x.permute(0, 2, 3, 1, 4, 5)  # (B, grid_h, grid_w, C, P, P)",
        "x = x.permute(0, 3, 2, 1, 4, 5)  # (B, grid_h, grid_w, C, P, P)",
        (T_PATCHES,),
    ),
    Mutant(
        "loop-route-forgets-the-bias",
        PATCHES,
        "tokens.append(token if bias is None else token + bias)",
        "tokens.append(token)",
        (T_PATCHES,),
    ),
    Mutant(
        "patch-boxes-transposed",
        PATCHES,
        "(row * patch_size, col * patch_size, (row + 1) * patch_size, (col + 1) * patch_size)",
        "(col * patch_size, row * patch_size, (col + 1) * patch_size, (row + 1) * patch_size)",
        (T_PATCHES,),
    ),
    Mutant(
        "tiles-not-unnormalised-by-std",
        PATCHES,
        "(tiles * torch.tensor(std) + torch.tensor(mean))",
        "(tiles + torch.tensor(mean))",
        (T_PATCHES,),
    ),
    # ---- compare: Grad-CAM, integrated gradients, the experiments' inputs
    Mutant(
        "ig-explains-class-0",
        COMPARE,
        "target=class_index, n_steps=steps",
        "target=0, n_steps=steps",
        (T_COMPARE, "-k", "integrated"),
    ),
    Mutant(
        "ig-ignores-the-steps",
        COMPARE,
        "n_steps=steps, internal_batch_size=steps",
        "n_steps=32, internal_batch_size=32",
        (T_COMPARE, "-k", "integrated"),
    ),
    Mutant(
        "ig-abs-before-the-channel-sum",
        COMPARE,
        "attribution[0].sum(dim=0).abs()",
        "attribution[0].abs().sum(dim=0)",
        (T_COMPARE, "-k", "integrated"),
    ),
    Mutant(
        "gradcam-without-relu",
        COMPARE,
        "cams = F.relu((alpha * features.detach()).sum(dim=1))",
        "cams = (alpha * features.detach()).sum(dim=1)",
        (T_COMPARE, "-k", "gradcam"),
    ),
    Mutant(
        "gradcam-mirror-not-flipped-back",
        COMPARE,
        "cam = (cams[0] + cams[1].flip(-1)) / 2 if mirrored else cams[0]",
        "cam = (cams[0] + cams[1]) / 2 if mirrored else cams[0]",
        (T_COMPARE, "-k", "gradcam"),
    ),
    Mutant(
        "shuffle-applies-the-inverse",
        COMPARE,
        "patches[:, permutation]",
        "patches[:, permutation.argsort()]",
        (T_COMPARE, "-k", "shuffle or experiments"),
    ),
    Mutant(
        "shift-swaps-the-axes",
        COMPARE,
        "shifts=(dy, dx), dims=(-2, -1)",
        "shifts=(dx, dy), dims=(-2, -1)",
        (T_COMPARE, "-k", "shift or experiments"),
    ),
    Mutant(
        "mean-position-keeps-every-position",
        COMPARE,
        "x = x + model.pos_embed.mean(dim=1, keepdim=True)",
        "x = x + model.pos_embed",
        (T_COMPARE, "-k", "position or experiments"),
    ),
    # ---- claims: the sentences that read the numbers (each names the threshold it sits on)
    Mutant(
        "claims-local-includes-the-limit",
        CLAIMS,
        "local = distances < limit",
        "local = distances <= limit",
        (T_CLAIMS, "-k", "local"),
    ),
    Mutant(
        "claims-near-uniform-one-sided",
        CLAIMS,
        "np.abs(distances / uniform - 1) <= NEAR_UNIFORM",
        "(distances / uniform - 1) <= NEAR_UNIFORM",
        (T_CLAIMS, "-k", "uniform"),
    ),
    Mutant(
        "claims-depth-farther-sign",
        CLAIMS,
        '"farther" if last > first else "nearer"',
        '"farther" if last < first else "nearer"',
        (T_CLAIMS, "-k", "farther"),
    ),
    Mutant(
        "claims-rise-without-the-threshold",
        CLAIMS,
        "return bool(before[peak] > curve[0] + RISE)",
        "return bool(before[peak] > curve[0])",
        (T_CLAIMS, "-k", "rise"),
    ),
    Mutant(
        "claims-rise-peak-before-the-last-drop",
        CLAIMS,
        "before = curve[: dropped[0] if dropped.size else curve.size]",
        "before = curve[: dropped[-1] if dropped.size else curve.size]",
        (T_CLAIMS, "-k", "rise"),
    ),
    Mutant(
        "claims-fall-at-half-exactly",
        CLAIMS,
        "below = np.flatnonzero(curve < FALL_SHARE * curve[0])",
        "below = np.flatnonzero(curve <= FALL_SHARE * curve[0])",
        (T_CLAIMS, "-k", "occlusion or curve or fall or halve"),
    ),
    Mutant(
        "claims-layernorm-narrower-without-the-factor",
        CLAIMS,
        "if cv_after * NARROWER <= cv_before:",
        "if cv_after <= cv_before:",
        (T_CLAIMS, "-k", "layer_norm"),
    ),
    Mutant(
        "claims-layernorm-equal-reads-the-input",
        CLAIMS,
        "if cv_after < EQUAL_SPREAD:",
        "if cv_before < EQUAL_SPREAD:",
        (T_CLAIMS, "-k", "layer_norm"),
    ),
    Mutant(
        "claims-components-one-short",
        CLAIMS,
        "np.searchsorted(np.cumsum(ratios), VARIANCE_SHARE - 1e-9)) + 1",
        "np.searchsorted(np.cumsum(ratios), VARIANCE_SHARE - 1e-9))",
        (T_CLAIMS, "-k", "filters or shown or share"),
    ),
    Mutant(
        "claims-even-spread-excludes-the-share",
        CLAIMS,
        "if needed >= EVEN_SHARE * total else",
        "if needed > EVEN_SHARE * total else",
        (T_CLAIMS, "-k", "filters or even"),
    ),
    Mutant(
        "claims-lens-steady-looks-one-ahead",
        CLAIMS,
        "while steady > 0 and top1[steady - 1] == final_class:",
        "while steady > 0 and top1[steady] == final_class:",
        (T_CLAIMS, "-k", "lens"),
    ),
    Mutant(
        "claims-reach-needs-more-than-the-side",
        CLAIMS,
        "if size >= side),",
        "if size > side),",
        (T_CLAIMS, "-k", "reach"),
    ),
    Mutant(
        "claims-trust-best-by-insertion",  # the table's best margin is not its best insertion
        CLAIMS,
        "best = max(rows, key=lambda m: margin[m])",
        'best = max(rows, key=lambda m: rows[m]["insertion_auc"])',
        (T_CLAIMS, "-k", "test_set_table"),
    ),
    Mutant(
        "claims-costliest-one-percent-is-little",
        CLAIMS,
        'if float(drops.max()) >= SMALL_DROP else "trust.costliest_none"',
        'if float(drops.max()) > SMALL_DROP else "trust.costliest_none"',
        (T_CLAIMS, "-k", "costliest"),
    ),
    Mutant(
        "claims-costliest-layer-and-head-swapped",
        CLAIMS,
        "layer, head = np.unravel_index(int(np.argmax(drops)), drops.shape)",
        "head, layer = np.unravel_index(int(np.argmax(drops)), drops.shape)",
        (T_CLAIMS, "-k", "costliest"),
    ),
    Mutant(
        "claims-neighbour-self-of-the-first-chunk",  # a map larger than one chunk
        CLAIMS,
        "distances[np.arange(len(block)), np.arange(start, start + len(block))] = np.inf",
        "distances[np.arange(len(block)), np.arange(len(block))] = np.inf",
        (T_CLAIMS, "-k", "neighbour"),
    ),
    Mutant(
        "claims-ablation-kept-share-of-the-new-answer",
        CLAIMS,
        '"p_kept": f"{float(after[first]):.1%}"',
        '"p_kept": f"{float(after[then]):.1%}"',
        (T_CLAIMS, "-k", "ablation"),
    ),
    # ---- a class's patch poll beside the model's map; how the ViT learned
    Mutant(
        "claims-patch-poll-ranks-ties-above",
        CLAIMS,
        "rank = int((weights > weights[top]).sum()) + 1",
        "rank = int((weights >= weights[top]).sum()) + 1",
        (T_CLAIMS, "-k", "patch_poll"),
    ),
    Mutant(
        "claims-patch-poll-top-k-exclusive",
        CLAIMS,
        '"claims.patch_poll.among" if rank <= k else',
        '"claims.patch_poll.among" if rank < k else',
        (T_CLAIMS, "-k", "patch_poll"),
    ),
    Mutant(
        "claims-learn-positions-most-alike-by-near-alone",
        CLAIMS,
        "most = int(np.argmax(gaps))",
        "most = int(np.argmax(near))",
        ("tests/unit/test_steps_learn.py", "-k", "position"),
    ),
    # ---- faithfulness: the curves, the verdict against chance, the table over images
    Mutant(
        "faithfulness-better-at-the-band-edge",
        FAITHFULNESS,
        "BETTER if margins[m] > high else",
        "BETTER if margins[m] >= high else",
        (T_FAITHFULNESS, "-k", "verdict or chance or sentences"),
    ),
    Mutant(
        "faithfulness-worse-at-the-band-edge",
        FAITHFULNESS,
        "WORSE if margins[m] < low else",
        "WORSE if margins[m] <= low else",
        (T_FAITHFULNESS, "-k", "verdict or chance or sentences"),
    ),
    Mutant(
        "faithfulness-best-by-insertion",  # a ranking whose best insertion is not its best margin
        FAITHFULNESS,
        "best=max(ranked, key=lambda m: margins[m])",
        "best=max(ranked, key=lambda m: ranked[m].insertion_auc)",
        (T_FAITHFULNESS, "-k", "verdict or sentences"),
    ),
    Mutant(
        "faithfulness-best-deletion-is-the-highest",
        FAITHFULNESS,
        "best_deletion=min(ranked, key=lambda m: ranked[m].deletion_auc)",
        "best_deletion=max(ranked, key=lambda m: ranked[m].deletion_auc)",
        (T_FAITHFULNESS, "-k", "worse or verdict or sentences"),
    ),
    Mutant(
        "faithfulness-margin-sign",
        FAITHFULNESS,
        "return self.insertion_aucs - self.deletion_aucs",
        "return self.deletion_aucs - self.insertion_aucs",
        (T_FAITHFULNESS, "-k", "curve or verdict"),
    ),
    Mutant(
        "faithfulness-ranking-lowest-first",
        FAITHFULNESS,
        "torch.sort(scores.float().cpu(), descending=True, stable=True)",
        "torch.sort(scores.float().cpu(), descending=False, stable=True)",
        (T_FAITHFULNESS, "-k", "occlusion_ranks"),
    ),
    Mutant(
        "faithfulness-every-image-one-seed",
        FAITHFULNESS,
        "num_random=num_random, seed=seed + i, patch_size=patch_size",
        "num_random=num_random, seed=seed, patch_size=patch_size",
        (T_FAITHFULNESS, "-k", "over_images or seed"),
    ),
    Mutant(
        "faithfulness-below-random-is-not-better",
        FAITHFULNESS,
        'row["below_random"] = verdicts.count(WORSE) / n',
        'row["below_random"] = 1 - verdicts.count(BETTER) / n',
        (T_FAITHFULNESS, "-k", "over_images or summar"),
    ),
    Mutant(
        "faithfulness-per-patch-column-major",
        FAITHFULNESS,
        "return blocks.sum(dim=(1, 3)).flatten()  # (N,)",
        "return blocks.sum(dim=(1, 3)).T.flatten()  # (N,)",
        (T_FAITHFULNESS, "-k", "per_patch"),
    ),
    # ---- ablation: which head, which layer, and the grid's numbers
    Mutant(
        "ablation-drop-sign",
        ABLATION,
        '"layer_drop": [round(clean - a, 6) for a in layers]',
        '"layer_drop": [round(a - clean, 6) for a in layers]',
        (T_ABLATION, "-k", "grid"),
    ),
    Mutant(
        "ablation-means-over-batches-not-images",
        ABLATION,
        "means = total / len(data)",
        "means = total / len(starts)",
        (T_ABLATION, "-k", "grid"),
    ),
    Mutant(
        "ablation-grid-runs-from-the-next-stream",
        ABLATION,
        "_correct(forward_from(variant, hidden[layer], layer), labels)",
        "_correct(forward_from(variant, hidden[layer + 1], layer), labels)",
        (T_ABLATION, "-k", "grid"),
    ),
    Mutant(
        "ablation-layer-check-admits-depth",
        ABLATION,
        "if not (0 <= layer < depth and 0 <= head < num_heads):",
        "if not (0 <= layer <= depth and 0 <= head < num_heads):",
        (T_ABLATION, "-k", "refused"),
    ),
    Mutant(
        "ablation-head-means-mean-of-batch-means",
        ABLATION,
        "sums.append(head_outputs(block.attn, block.norm1(x)).float().sum(dim=0))",
        "sums.append(head_outputs(block.attn, block.norm1(x)).float().mean(dim=0))",
        (T_ABLATION, "-k", "mean_ablation"),
    ),
    # ---- projection: the map of the test set
    Mutant(
        "projection-pca-sign-without-abs",
        PROJECTION,
        "largest = axes.abs().argmax(dim=1)",
        "largest = axes.argmax(dim=1)",
        (T_PROJECTION, "-k", "pca"),
    ),
    Mutant(
        "projection-pca-axes-are-columns",
        PROJECTION,
        "axes = vh[:dims]  # (dims, D)",
        "axes = vh[:, :dims].T  # (dims, D)",
        (T_PROJECTION, "-k", "pca"),
    ),
    Mutant(
        "projection-default-layers-one-short",
        PROJECTION,
        "return sorted({depth // 2, depth})",
        "return sorted({depth // 2, depth - 1})",
        (T_PROJECTION, "-k", "points_are"),
    ),
    Mutant(
        "projection-cls-is-the-first-patch",
        PROJECTION,
        'picked = stream[:, 0] if token == "cls"',
        'picked = stream[:, prefix] if token == "cls"',
        (T_PROJECTION, "-k", "points_are"),
    ),
    # ---- handout: the file a student takes home
    Mutant(
        "handout-centre-patch-one-left",
        VECTORS,
        "return (grid_h // 2) * grid_w + grid_w // 2",
        "return (grid_h // 2) * grid_w + grid_w // 2 - 1",
        (T_HANDOUT, "-k", "numbers_in_the_file"),
    ),
    Mutant(
        "handout-lens-rank-from-zero",
        PREDICTION,
        "name=answers.class_name(subject, final_class)): int(final_rank[i]) + 1,",
        "name=answers.class_name(subject, final_class)): int(final_rank[i]),",
        (T_HANDOUT, "-k", "numbers_in_the_file or lens"),
    ),
    Mutant(
        "handout-occlusion-share-of-the-tokens",
        PREDICTION,
        "fractions = counts / num_patches",
        "fractions = counts / config.num_tokens",
        (T_HANDOUT, "-k", "numbers_in_the_file or occlusion"),
    ),
    # ---- what a visitor sends (values, the URL's state) and what the server allows (access, budget)
    Mutant(
        "clicks-a-forged-selection-read-as-a-dict",
        "vitviz/render/clicks.py",
        "        if not isinstance(point, dict):\n            continue\n",
        "",
        ("tests/unit/test_attention.py", "-k", "forged"),
    ),
    Mutant(
        "clicks-a-huge-number-through-float",
        "vitviz/render/clicks.py",
        "    return isinstance(value, int) or (isinstance(value, float) and value.is_integer())",
        "    return isinstance(value, int | float) and float(value).is_integer()",
        ("tests/unit/test_attention.py", "-k", "forged"),
    ),
    Mutant(
        "state-a-reversed-confidence-range-kept",
        "vitviz/app/state.py",
        "check=lambda v: 0 <= v[0] <= v[1] <= 1",
        "check=lambda v: 0 <= min(v) and max(v) <= 1",
        ("tests/app/test_app_core.py", "-k", "translated_label"),
    ),
    Mutant(
        "navigation-a-slide-index-in-any-digits",
        "vitviz/app/navigation.py",
        "(number := values.integer(index)) is not None",
        '(number := int(index) if index.lstrip("-").isdigit() and len(index) < 4 else None) is not None',
        ("tests/app/test_app_presenter.py", "-k", "other_digits"),
    ),
    Mutant(
        "students-a-class-code-echoed-as-typed",
        "vitviz/app/students.py",
        "code=values.echo(typed, 12)",
        'code=values.echo(st.query_params["class"], 12)',
        ("tests/app/test_app_class.py", "-k", "never_drawn"),
    ),
    Mutant(
        "map-every-value-error-called-other-classes",
        "vitviz/steps/testset.py",
        "    except OtherClasses:",
        "    except ValueError:",
        ("tests/unit/test_steps_lab.py", "-k", "other_classes"),
    ),
    Mutant(
        "overview-a-cls-token-taken-for-its-readout",
        "vitviz/steps/overview.py",
        '    if config.global_pool == "token":',
        "    if config.class_token:",
        ("tests/unit/test_steps_overview.py", "-k", "intro_says"),
    ),
    Mutant(
        "values-integer-takes-any-unicode-digit",
        VALUES,
        'rf"-?[0-9]{{1,{MAX_DIGITS}}}"',
        'rf"-?\\d{{1,{MAX_DIGITS}}}"',
        (T_VALUES,),
    ),
    Mutant("values-integer-of-any-length", VALUES, 'rf"-?[0-9]{{1,{MAX_DIGITS}}}"', 'rf"-?[0-9]+"', (T_VALUES,)),
    Mutant("values-clip-low-off-by-one", VALUES, "value = max(value, low)", "value = max(value, low + 1)", (T_VALUES,)),
    Mutant(
        "values-test-image-takes-a-negative-index",
        VALUES,
        "number is not None and number >= 0",
        "number is not None and number >= -1",
        (T_VALUES,),
    ),
    Mutant("values-echo-not-cut", VALUES, "line[: limit - 1]", "line[:limit]", (T_VALUES,)),
    Mutant(
        "state-layer-zero-read-as-the-mean",
        STATE,
        "number - 1 if number is not None and number >= 1 else text",
        "number - 1 if number is not None and number >= 0 else text",
        (T_VALUES, "-k", "links_numbers"),
    ),
    Mutant(
        "state-step-counted-from-one",
        STATE,
        "        return text if number is None else number\n",
        "        return text if number is None else number - 1\n",
        (T_VALUES, "-k", "links_numbers"),
    ),
    Mutant(
        "access-relative-name-read-in-the-working-folder",
        ACCESS,
        "candidates = [name] if Path(name).is_absolute() else [",
        "candidates = [name] + [",
        (T_ACCESS, "-k", "relative_name"),
    ),
    Mutant(
        "access-any-folder-offered",
        ACCESS,
        'os.path.isfile(os.path.join(entry.path, "config.json"))',
        "True",
        (T_ACCESS, "-k", "relative_name"),
    ),
    Mutant(
        "access-offered-shows-the-folder",
        ACCESS,
        "names.add(entry.name)",
        "names.add(entry.path)",
        (T_ACCESS, "-k", "relative_name"),
    ),
    Mutant("budget-limit-refuses-its-own-value", BUDGET, "if value > limit:", "if value >= limit:", (T_BUDGET,)),
    Mutant(
        "budget-shape-refuses-its-lowest-value",
        BUDGET,
        "if not low <= value <= high:",
        "if not low < value <= high:",
        (T_BUDGET, "-k", "shapes"),
    ),
    Mutant(
        "budget-no-attention-maps-in-memory",
        BUDGET,
        "outputs = 3 * depth * tokens * width + depth * config.num_heads * tokens * tokens\n",
        "outputs = 3 * depth * tokens * width\n",
        (T_BUDGET,),
    ),
    Mutant(
        "budget-no-rollout",
        BUDGET,
        "forward_flops + depth * 2 * tokens**3",
        "forward_flops",
        (T_BUDGET,),
    ),
    # ---- a model that averages its mirror image: the lab's answer beside the tour's one pass
    Mutant(
        "prediction-lab-answer-from-one-view",
        "vitviz/steps/answers.py",
        "logits = model(on_weights(trace.pixels[:1], model)).float().cpu()",
        "logits = model.forward_one_view(on_weights(trace.pixels[:1], model)).float().cpu()",
        (T_PREDICTION, "-k", "averages_its_mirror"),
    ),
    Mutant(
        "prediction-differing-answers-without-a-box",
        "vitviz/steps/answers.py",
        'return [Text(subject.tr(differs, **filled), role="info", slide=True)]',
        'return [Text(subject.tr(differs, **filled), role="caption", slide=True)]',
        (T_PREDICTION, "-k", "averages_its_mirror"),
    ),
    Mutant(
        "prediction-differing-answers-kept-off-the-slide",
        "vitviz/steps/answers.py",
        'return [Text(subject.tr(differs, **filled), role="info", slide=True)]',
        'return [Text(subject.tr(differs, **filled), role="info")]',
        (T_PREDICTION, "-k", "averages_its_mirror"),
    ),
    Mutant(
        "mistakes-one-view-figure-of-other-images",
        MISTAKES,
        'and card.tested_on.get("fingerprint") == data.fingerprint',
        'and card.tested_on.get("fingerprint") is not None',
        (T_MISTAKES, "-k", "averages_its_mirror"),
    ),
    Mutant(
        "mistakes-close-up-one-pass-is-the-lab-s-answer",
        MISTAKES,
        "    if one == predicted:\n",
        "    if True:\n",
        (T_MISTAKES, "-k", "close_up"),
    ),
    Mutant(
        "mistakes-close-up-silent-on-the-pass",
        MISTAKES,
        '    if inference(subject.model) == "image":\n        return []\n    one = ',
        "    if True:\n        return []\n    one = ",
        (T_MISTAKES, "-k", "close_up"),
    ),
    Mutant(
        "mistakes-close-up-first-point-of-the-lens",
        MISTAKES,
        "one = int(np.argmax(lens[-1]))",
        "one = int(np.argmax(lens[0]))",
        (T_MISTAKES, "-k", "close_up"),
    ),
    # ---- the block diagram's MLP boxes say the model's own width
    Mutant(
        "block-diagram-mlp-always-4d",
        "vitviz/steps/block.py",
        '    return "D" if ratio == 1 else f"{ratio:g}D"',
        '    return "4D"',
        ("tests/unit/test_steps_block.py", "-k", "width"),
    ),
    # ---- a slide's captions and boxes: the figure's own, and a box marked for the slide on it
    Mutant(
        "slides-a-figure-s-captions-to-the-next-slide",
        "vitviz/steps/blocks.py",
        'if isinstance(block, Text) and after_figure and block.role != "body":',
        "if False:",
        ("tests/unit/test_steps.py", "-k", "captions_and_boxes"),
    ),
    Mutant(
        "slides-a-slide-box-left-in-the-notes",
        "vitviz/steps/blocks.py",
        "dict(callouts=last.callouts + (block,)) if block.slide else dict(notes=last.notes + (block.text,))",
        "dict(notes=last.notes + (block.text,))",
        ("tests/unit/test_steps.py", "-k", "captions_and_boxes"),
    ),
    Mutant(
        "mistakes-one-pass-box-kept-off-the-slide",
        "vitviz/steps/mistakes.py",
        'Text(subject.tr("mistakes.one_pass_differs", **filled), role="info", slide=True)',
        'Text(subject.tr("mistakes.one_pass_differs", **filled), role="info")',
        ("tests/unit/test_steps_mistakes.py", "-k", "close_up_says"),
    ),
    # ---- a true class below the top k still gets its green bar, and its rank
    Mutant(
        "bars-true-class-below-the-top-k-left-out",
        "vitviz/steps/bars.py",
        "    if found is not None and found.true_class not in names:",
        "    if found is not None and found.true_class not in names and found.rank <= len(names) + 1:",
        ("tests/unit/test_explain.py", "-k", "green"),
    ),
    Mutant(
        "bars-true-class-rank-from-zero",
        "vitviz/steps/bars.py",
        'notes.append(t("verdict.rank_bar", lang, rank=found.rank, n=found.num_classes))',
        'notes.append(t("verdict.rank_bar", lang, rank=found.rank - 1, n=found.num_classes))',
        ("tests/unit/test_explain.py", "-k", "green"),
    ),
    # ---- ... and every curve and experiment beside a map follows the one pass the map explains
    Mutant(
        "explained-pass-is-the-lab-s-answer",
        "vitviz/models/model.py",
        "return model.forward_one_view if isinstance(model, VisionTransformer) else model",
        "return model",
        T_EXPLAINED,
    ),
    Mutant(
        "occlusion-curve-of-the-lab-s-answer",
        "vitviz/analyses/analysis.py",
        "probs = explained_pass(model)(images).float()",
        "probs = model(images).float()",
        T_EXPLAINED,
    ),
    Mutant(
        "faithfulness-of-the-lab-s-answer",
        "vitviz/analyses/faithfulness.py",
        "explained = explained_pass(model)",
        "explained = model",
        T_EXPLAINED,
    ),
    Mutant(
        "integrated-gradients-of-the-lab-s-answer",
        "vitviz/analyses/compare.py",
        "IntegratedGradients(explained_pass(model))",
        "IntegratedGradients(model)",
        T_EXPLAINED,
    ),
    Mutant(
        "experiments-on-the-lab-s-answer",
        "vitviz/analyses/compare.py",
        "one_pass = explained_pass(vit)",
        "one_pass = vit",
        T_EXPLAINED,
    ),
    Mutant(
        "tables-of-the-lab-s-answer-read",
        "vitviz/analyses/evaluate.py",
        'return inference(model) if explained_pass(model) is model else "image"',
        "return inference(model)",
        T_EXPLAINED,
    ),
)


def copy_tree(destination: Path) -> None:
    """The work tree's files, as git would see them (tracked and untracked, ignored ones left out)."""
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
        cwd=ROOT,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split("\0")
    for name in filter(None, listed):
        source = ROOT / name
        if not source.is_file():  # deleted in the work tree, not yet in git
            continue
        target = destination / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.stat().st_size > BIG:
            target.symlink_to(source)
        else:
            shutil.copy2(source, target)


# Imported once by this process and shared with every forked test run: importing torch alone
# takes seconds, the tests of one mutant often less. vitviz and the tests are never imported here,
# so each run reads the (mutated) copy afresh.
WARM = ("torch", "numpy", "einops", "PIL.Image", "safetensors.torch", "captum.attr", "plotly.graph_objects", "pytest")


def warm_up() -> None:
    sys.dont_write_bytecode = True  # a mutant and the original can share a size and a second: no stale .pyc
    for name in WARM:
        with contextlib.suppress(ImportError):  # the tests that need it will say so
            importlib.import_module(name)


def baseline_tests(chosen: list[Mutant]) -> tuple[str, ...]:
    """One pytest selection that runs what the chosen mutants' selections run, and no more.

    Each mutant's files and ``-k`` become one clause, ``((file names) and (expression))``, and the
    clauses are joined by ``or``: -k also matches a test's module file name, so the clause of one
    file's mutant selects nothing in another file. Running whole files instead would run their
    slow tests (a UMAP or t-SNE map) that no mutant asks for.
    """
    files, clauses = [], []
    for m in chosen:
        mine = [t for t in m.tests if t.startswith("tests/")]
        rest = [t for t in m.tests if not t.startswith("tests/")]
        if rest[:1] == ["-k"] and len(rest) == 2:
            expression = rest[1]
        elif not rest:
            expression = ""
        else:
            raise SystemExit(f"{m.name}: give its tests as files and at most one -k expression.")
        names = " or ".join(Path(t).name for t in mine)
        clauses.append(f"(({names}) and ({expression}))" if expression else f"({names})")
        files.extend(mine)
    return (*dict.fromkeys(files), "-k", " or ".join(dict.fromkeys(clauses)))


def run_tests(tree: Path, tests: tuple[str, ...], timeout: float = TIMEOUT_S) -> tuple[bool, str]:
    """Run pytest on ``tests`` in the copy, in a forked child of this (warm) process.

    Returns:
        (passed, the first failing test or a short reason).
    """
    import pytest

    log = tree / ".mutant-log"
    pid = os.fork()
    if pid == 0:  # the child: forget any vitviz or tests module, run pytest in the copy, exit
        code = 1
        try:
            os.chdir(tree)
            sys.path.insert(0, str(tree))
            for name in [n for n in sys.modules if n.split(".")[0] in ("vitviz", "tests")]:
                del sys.modules[name]
            with open(log, "w", encoding="utf-8") as out:
                os.dup2(out.fileno(), 1)
                os.dup2(out.fileno(), 2)
                code = int(pytest.main(["-x", "-q", "-rf", "--no-header", "-p", "no:warnings", *tests]))
        finally:
            sys.stdout.flush()
            os._exit(code)
    deadline = time.monotonic() + timeout
    while (done := os.waitpid(pid, os.WNOHANG))[0] == 0:
        if time.monotonic() > deadline:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
            return False, f"timed out after {timeout:.0f} s"
        time.sleep(0.05)
    code = os.waitstatus_to_exitcode(done[1])
    output = log.read_text(encoding="utf-8", errors="replace") if log.exists() else ""
    if code == 0:
        return True, ""
    failed = re.search(r"^(?:FAILED|ERROR) (\S+)", output, re.MULTILINE)
    if failed:
        return False, failed[1]
    if code == 5:  # no test selected: a wrong -k, not a caught bug
        raise SystemExit(f"No test was selected by {' '.join(tests)}: mend the mutant's tests.")
    lines = output.strip().splitlines()
    return False, (lines[-1] if lines else f"exit status {code}")[:120]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-k", default="", help="only the mutants whose name contains this (or one of a,b,c)")
    parser.add_argument(
        "--file", default="", help="only the mutants planted in a file whose path contains this (or one of a,b,c)"
    )
    parser.add_argument("--list", action="store_true", help="list the mutants and stop")
    args = parser.parse_args(argv)
    chosen = [
        m
        for m in MUTANTS
        if any(part in m.name for part in args.k.split(",")) and any(part in m.path for part in args.file.split(","))
    ]
    if args.list:
        for m in chosen:
            print(f"{m.name:42} {m.path:20} {' '.join(m.tests)}")
        return 0
    if not chosen:
        raise SystemExit(f"No mutant's name contains {args.k!r} and its file's path {args.file!r}.")

    started = time.perf_counter()
    warm_up()
    with tempfile.TemporaryDirectory(prefix="vitviz-mutants-") as folder:
        tree = Path(folder)
        copy_tree(tree)
        passed, why = run_tests(tree, baseline_tests(chosen), TIMEOUT_S * len(chosen))
        if not passed:
            raise SystemExit(f"The tests fail without any mutant ({why}): fix them first.")

        rows, unexpected = [], 0
        for m in chosen:
            file = tree / m.path
            original = file.read_text(encoding="utf-8")
            if original.count(m.old) != 1:
                rows.append((m.name, "stale", f"found {original.count(m.old)} times in {m.path}", 0.0))
                unexpected += 1
                continue
            file.write_text(original.replace(m.old, m.new), encoding="utf-8")
            cpu = resource.getrusage(resource.RUSAGE_CHILDREN)
            try:
                passed, why = run_tests(tree, m.tests)
            finally:
                file.write_text(original, encoding="utf-8")
            used = resource.getrusage(resource.RUSAGE_CHILDREN)
            seconds = used.ru_utime + used.ru_stime - cpu.ru_utime - cpu.ru_stime  # CPU: comparable on a busy machine
            if not passed:
                rows.append((m.name, "killed", why, seconds))
            elif m.survives:
                rows.append((m.name, "survived (known)", m.survives, seconds))
            else:
                rows.append((m.name, "SURVIVED", "no test failed: write one that does", seconds))
                unexpected += 1
            print(f"{rows[-1][1]:17} {m.name}", file=sys.stderr, flush=True)

    width = max(len(r[0]) for r in rows)
    print(f"\n{'mutant':{width}}  {'result':17} {'cpu s':>5}  by / why")
    for name, result, why, seconds in rows:
        print(f"{name:{width}}  {result:17} {seconds:5.1f}  {why}")
    killed = sum(r[1] == "killed" for r in rows)
    total = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = total.ru_utime + total.ru_stime + children.ru_utime + children.ru_stime
    print(f"\n{killed} of {len(rows)} killed; {time.perf_counter() - started:.0f} s in all ({cpu:.0f} s of CPU).")
    return 1 if unexpected else 0


if __name__ == "__main__":
    sys.exit(main())
