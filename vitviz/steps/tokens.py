"""Step 4: the [CLS] token is prepended and position embeddings are added: (B, N, D) -> (B, N+1, D)."""

from __future__ import annotations

import numpy as np

from vitviz.analyses import analysis, claims
from vitviz.models import patches
from vitviz.render import plots
from vitviz.steps import common
from vitviz.steps.blocks import Choices, Controls, Download, Figure, Figures, Formula, Heading, Select, Step, Text
from vitviz.steps.blocks import shape_text as shape
from vitviz.steps.subject import Subject
from vitviz.steps.vectors import chosen, patch_control

MOST_TICKS = 16  # image rows named on a token axis


def describe(subject: Subject, choices: Choices) -> Step:
    """The patch tokens before and after [CLS] and the position embeddings; the embeddings'
    cosine similarities, position by position, for the chosen one (``pos``) beside every one;
    and that position under learned, 1D and 2D sinusoidal schemes."""
    tr, config, trace = subject.tr, subject.config, subject.trace
    prefix = trace.num_prefix_tokens
    grid_h, grid_w = trace.grid_size
    count = grid_h * grid_w
    dim = config.embed_dim
    hover = common.grid_hover(subject)

    blocks: list = [Heading(tr("tokens.sequence"))]
    cls_row = {0: "[CLS]"} if prefix else None
    if not prefix:
        blocks.append(Text(tr("tokens.no_cls"), role="info"))
    # Rows are named by what they are, so one patch has one name (and one height) in both maps.
    patch_rows = [tr("tokens.row_patch", n=n) for n in range(1, count + 1)]
    token_rows = ["[CLS]"] * prefix + patch_rows
    ticks = patch_rows[:: grid_w * -(-grid_h // MOST_TICKS)]  # each image row's first patch; [CLS] has its arrow
    axes = dict(
        y_title=tr("tokens.axis_token"),
        x_title=tr("tokens.axis_channel"),
        channel_word=tr("hover.channel"),
        rows=token_rows,
        ticks=ticks,
    )
    patch_tokens = trace.patch_tokens[0].numpy()  # (N, D)
    before = plots.token_matrix(patch_tokens, patch_rows, title=tr("tokens.before", n=count, d=dim), **axes)
    after_title = tr("tokens.after", t=trace.tokens.shape[1], d=dim)
    after = plots.token_matrix(trace.tokens[0].numpy(), token_rows, title=after_title, marked=cls_row, **axes)
    blocks.append(
        Figures(
            (
                Figure("tokens_before", before, subject.says(claims.patch_rows(count, dim))),
                Figure("tokens_after", after, subject.says(claims.sequence(count, dim, prefix))),
            )
        )
    )
    cls_tex = r"x_\mathrm{class};\; " if prefix else ""
    patches_tex = rf"x_p^1 W;\; x_p^2 W;\; \dots;\; x_p^{{{count}}} W"
    cls_plain = "x_class; " if prefix else ""
    blocks.append(  # the paper's eq. 1, with our W
        Formula(
            r"z_0 = [\," + cls_tex + patches_tex + r"\,] + E_\mathrm{pos}",
            f"z_0 = [{cls_plain}x_p^1 W; x_p^2 W; ...; x_p^{count} W] + E_pos",
        )
    )
    if prefix:
        blocks.append(Text(tr("tokens.formula_note", n=count), role="caption"))

    blocks.append(Heading(tr("tokens.pos")))
    if config.pos_embed == "sincos2d":
        blocks.append(Text(tr("tokens.pos_fixed")))
    else:
        first, below = patches.patch_number(0, 0, trace.grid_size), patches.patch_number(1, 0, trace.grid_size)
        blocks.append(Text(tr("tokens.pos_learned", first=first, below=below)))
        if not subject.trained:
            blocks.append(Text(tr("tokens.pos_untrained"), role="info"))
    pos_embed = subject.model.pos_embed.detach()[0].cpu()  # (T, D)
    pos_title = tr("tokens.pos_title", t=pos_embed.shape[0], d=dim)
    pos_chart = plots.token_matrix(pos_embed.numpy(), token_rows, title=pos_title, marked=cls_row, **axes)
    share = claims.position_share(patch_tokens, pos_embed.numpy(), prefix)
    blocks.append(Figure("tokens_pos_embed", pos_chart, subject.says(share)))

    blocks += [Heading(tr("tokens.similarity")), Text(tr("tokens.similarity_intro"))]
    similarities = {k: v.numpy() for k, v in analysis.position_similarities(pos_embed, trace.grid_size, prefix).items()}
    pos = chosen(choices.get("pos"), (grid_h, grid_w))
    row, col = divmod(pos, grid_w)
    blocks.append(
        Controls((patch_control(subject, "pos", "tokens.choose_pos", "tokens.pos_shown", (grid_h, grid_w), pos),))
    )
    mosaic_title = tr("tokens.mosaic_title", h=grid_h, w=grid_w)
    mosaic = plots.similarity_grid(similarities["model"], title=mosaic_title, selected=pos)
    large_title = tr("tokens.large_title", index=pos + 1, row=row + 1, col=col + 1)
    own = similarities["model"][row, col]  # (grid_h, grid_w)
    large = plots.similarity_maps(own[None], [large_title], marked=(row, col), height=460, hover=hover)
    blocks.append(
        Figures(
            (
                Figure(
                    "tokens_mosaic",
                    mosaic,
                    subject.says(claims.position_layout(similarities["model"])),
                    select=Select("pos", count),
                ),
                Figure("tokens_large", large, subject.says(claims.nearest_position(own, (row, col)))),
            )
        )
    )
    blocks.append(Text(tr("tokens.large_note"), role="caption"))

    blocks += [Heading(tr("tokens.compare")), Text(tr("tokens.compare_intro"))]
    own_kind = "tokens.kind.fixed" if config.pos_embed == "sincos2d" else "tokens.kind.learned"
    kinds = {"model": own_kind, "sincos_1d": "tokens.kind.sincos_1d", "sincos_2d": "tokens.kind.sincos_2d"}
    maps = np.stack([similarities[k][row, col] for k in kinds])
    compare = plots.similarity_maps(
        maps, [tr(v) for v in kinds.values()], marked=(row, col), own_range=True, hover=hover, height=360
    )
    blocks.append(Figure("tokens_compare", compare, subject.says(claims.closest_scheme(*maps))))
    blocks.append(Text(tr("tokens.own_range_note"), role="caption"))
    arrays = {
        "pos_embed": pos_embed.numpy(),
        "similarity": similarities["model"],
        "similarity_sincos_1d": similarities["sincos_1d"],
        "similarity_sincos_2d": similarities["sincos_2d"],
    }
    blocks.append(Download("tokens.download", "pos_embed_similarity.npz", "tokens_npz", arrays))
    moved = f"{shape(trace.patch_tokens.shape)} → {shape(trace.tokens.shape)}"
    return Step(tr("page.tokens"), tr("tokens.intro"), tuple(blocks), shape=moved)
