"""Step 1: from the photo to the model's input tensor, using the model's own preprocessing."""

from __future__ import annotations

from vitviz.analyses import claims
from vitviz.models.data import denormalize, input_pixels, inverts, original_size
from vitviz.render import plots
from vitviz.steps.blocks import Choices, Download, Figure, Figures, Heading, Step, Table, Text, shape_text
from vitviz.steps.subject import Subject


def describe(subject: Subject, choices: Choices) -> Step:
    """The photo beside the model's input, the preprocessing recipe, and the normalised input
    channel by channel with the pixel values before and after normalisation."""
    tr, config, trace = subject.tr, subject.config, subject.trace
    pre = config.preprocess
    picture = subject.compute.picture(subject)
    width, height = original_size(picture)
    resized = (
        input_pixels(picture, pre, config.in_chans).permute(1, 2, 0).numpy()
    )  # (H, W, C) uint8, as the model gets it
    gray = config.in_chans == 1
    inverted = inverts(picture, pre, config.in_chans)
    normalised = trace.pixels[0].numpy()  # (C, H, W)
    blocks: list = [Text(tr("input.gray_note"), role="info")] if gray else []

    original = subject.image  # the picture as load_image kept it (a large photo scaled down as it was opened)
    kept_height, kept_width = original.shape[:2]
    if (width, height) == (kept_width, kept_height):
        original_title = tr("input.original", width=width, height=height)
    else:
        original_title = tr(
            "input.original_scaled", width=width, height=height, kept_width=kept_width, kept_height=kept_height
        )
    title = "input.resized_gray_inverted" if inverted else "input.resized_gray" if gray else "input.resized"
    resized_title = tr(title, width=resized.shape[1], height=resized.shape[0])
    blocks.append(
        Figures(
            (
                Figure(
                    "input_original",
                    plots.image(original, original_title, photo=subject.paper),  # paper: a JPEG
                    subject.says(claims.kept_region((width, height), pre)),
                ),
                Figure(
                    "input_resized",
                    plots.image(resized, resized_title),
                    subject.says(claims.input_scale((width, height), pre)),
                ),
            )
        )
    )

    resize = (
        tr("input.shorter_side", size=pre.resize)
        if isinstance(pre.resize, int)
        else f"{pre.resize[0]} x {pre.resize[1]}"
    )
    means, stds = ", ".join(f"{m:.4g}" for m in pre.mean), ", ".join(f"{s:.4g}" for s in pre.std)
    steps = [
        (tr("input.step.resize"), f"{resize}, {pre.interpolation}"),
        (tr("input.step.crop"), "-" if pre.crop is None else f"{pre.crop[0]} x {pre.crop[1]}"),
    ]
    if gray:
        steps.append((tr("input.step.gray"), tr("input.step.gray_value")))
    if pre.dark_background:
        steps.append((tr("input.step.invert"), tr("input.step.invert_yes" if inverted else "input.step.invert_no")))
    steps += [
        (tr("input.step.scale"), tr("input.step.scale_value")),
        (tr("input.step.normalise"), f"(x - mean) / std, mean=({means}), std=({stds})"),
    ]
    rows = tuple({tr("input.col.step"): step, tr("input.col.value"): value} for step, value in steps)
    blocks += [Heading(tr("input.recipe")), Table(rows)]

    blocks.append(Heading(tr("input.channels")))
    names = ["R", "G", "B"] if len(normalised) == 3 else ["L"]
    channel_titles = [f"{n}: (x - {m:.3f}) / {s:.3f}" for n, m, s in zip(names, pre.mean, pre.std, strict=True)]
    blocks.append(
        Figure(
            "input_channels",
            plots.channel_maps(normalised, channel_titles),
            subject.says(claims.channel_means(names, normalised)),
        )
    )
    # the legends name the channels alone (the x axes say what was done to them): one row on a slide
    before = {n: resized[..., i] / 255.0 for i, n in enumerate(names)}
    after = {n: normalised[i] for i, n in enumerate(names)}
    count = tr("input.hist_y")
    before_chart = plots.histogram(before, tr("input.hist_before"), x_title=tr("input.hist_x_before"), y_title=count)
    after_title = subject.says(claims.normalised_input(normalised))
    after_chart = plots.histogram(after, after_title, x_title=tr("input.hist_x_after"), y_title=count)
    blocks.append(
        Figures(
            (
                Figure("input_hist_before", before_chart, subject.says(claims.pixel_range(resized / 255.0))),
                Figure(
                    "input_hist_after", after_chart, subject.says(claims.normalisation(resized / 255.0, normalised))
                ),
            )
        )
    )
    arrays = {"pixels": normalised, "resized": resized, "model_input": denormalize(trace.pixels[0], pre)}
    blocks.append(Download("download.npz", "model_input.npz", "input_npz", arrays))
    return Step(tr("page.input"), tr("input.intro"), tuple(blocks), shape=shape_text(trace.pixels.shape))
