"""Step 8's experiments (``analyses.compare.EXPERIMENTS``): the same change made for the ViT and for
the CNN (the image's patches shuffled, the image shifted by a few pixels, the ViT's position
embeddings left out, some patches hidden), and both answers before and after it. The step
(``vitviz.steps.compare``) ends with them; ``subject.compute.experiment`` runs one (cached in the app).
"""

from __future__ import annotations

import torch

from vitviz.analyses import claims, compare
from vitviz.models.data import denormalize
from vitviz.models.prediction import top_k
from vitviz.render import plots
from vitviz.steps.blocks import Button, Choices, Control, Controls, Figure, Heading, Select, Table, Text
from vitviz.steps.subject import Subject

SHIFTS = (1, 2, 3, 4)  # pixels, wrapping round
SEEDS = (0, 999)  # the shuffle's numbers, first to last


def experiments(subject: Subject, choices: Choices, cnn_name: str, cnn, cnn_logits: torch.Tensor) -> list:
    """The experiment ``compare_experiment`` (its settings: ``compare_shift`` pixels, ``compare_seed``
    for the shuffle, the patches in ``compare_hidden``) and both models' answers before and after
    it; while hiding, a click on the image hides a patch or shows it again."""
    tr, trace, config = subject.tr, subject.trace, subject.config
    kind = choices.get("compare_experiment")
    kind = kind if kind in compare.EXPERIMENTS else compare.EXPERIMENTS[0]
    shift = choices.get("compare_shift")
    shift = shift if shift in SHIFTS else compare.DEFAULT_SHIFT
    seed = choices.get("compare_seed")
    seed = seed if isinstance(seed, int) and SEEDS[0] <= seed <= SEEDS[-1] else compare.DEFAULT_SEED
    num_patches = trace.grid_size[0] * trace.grid_size[1]
    hidden = [i for i in choices.get("compare_hidden", []) if isinstance(i, int) and 0 <= i < num_patches]
    experiment_label, shift_label, seed_label = tr("compare.experiment"), tr("compare.shift_px"), tr("compare.seed")
    controls = (
        Control(
            "compare_experiment",
            "radio",
            experiment_label,
            compare.EXPERIMENTS,
            kind,
            f"{experiment_label}: {tr(f'compare.exp.{kind}')}",
            format=lambda k: tr(f"compare.exp.{k}"),
        ),
        Control(
            "compare_shift",
            "int_slider",
            shift_label,
            SHIFTS,
            shift,
            _static(shift_label, shift, kind == "shift"),
            disabled=kind != "shift",
        ),
        Control(
            "compare_seed",
            "number",
            seed_label,
            SEEDS,
            seed,
            _static(seed_label, seed, kind == "shuffle"),
            disabled=kind != "shuffle",
        ),
    )
    outcome = subject.compute.experiment(  # only the setting of the chosen experiment is part of its key
        subject,
        cnn_name,
        kind,
        shift=shift if kind == "shift" else 0,
        seed=seed if kind == "shuffle" else 0,
        hidden=tuple(hidden) if kind == "hide" else (),
    )

    def answer(model, logits: torch.Tensor | None) -> tuple[str, float] | None:
        return None if logits is None else top_k(model.config.class_names, logits, 1)[0]

    def written(found: tuple[str, float] | None) -> str:
        return tr("compare.na") if found is None else tr("compare.answer", name=subject.label(found[0]), p=found[1])

    vit_before, vit_after = answer(subject.model, trace.logits), answer(subject.model, outcome.vit_logits)
    cnn_before, cnn_after = answer(cnn, cnn_logits), answer(cnn, outcome.cnn_logits)
    rows = tuple(
        {
            tr("compare.col.model"): model,
            tr("compare.col.before"): written(before),
            tr("compare.col.after"): written(after),
        }
        for model, before, after in (("ViT", vit_before, vit_after), ("CNN", cnn_before, cnn_after))
    )
    takeaway = subject.says(claims.experiment(vit_before, vit_after, cnn_before, cnn_after))
    seen = denormalize(outcome.vit_input[0], config.preprocess)
    blocks: list = [
        Heading(tr("compare.experiments")),
        Text(tr("compare.experiments_intro")),
        Controls(controls),
        Table(rows),
    ]
    if kind == "hide":  # the image is the control: a click hides a patch, a second click shows it again
        grid = plots.patch_grid(seen, config.token_size, title=tr("compare.input_title"), height=300)
        select = Select("compare_hidden", num_patches, toggle=True)
        blocks += [
            Figure("compare_hide_grid", grid, takeaway, select=select),
            Text(tr("compare.hide_hint", n=len(hidden)), "caption"),
            Button("compare_show_all", tr("compare.hide_clear"), {"compare_hidden": []}, disabled=not hidden),
        ]
    else:
        blocks.append(Figure("compare_input", plots.image(seen, tr("compare.input_title"), height=260), takeaway))
    return blocks


def _static(label: str, value: object, used: bool) -> str:
    """What paper says of an experiment's setting: its value where the experiment uses it, else nothing."""
    return f"{label}: {value}" if used else ""
