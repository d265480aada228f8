"""Step 9: the model card: architecture, parameter counts, training and where it came from."""

from __future__ import annotations

from vitviz.analyses import claims
from vitviz.models import zoo
from vitviz.models.card import ModelCard
from vitviz.models.cnn import feature_shape
from vitviz.models.config import CNNConfig
from vitviz.models.model import flops_per_image
from vitviz.render import plots, tables
from vitviz.steps.blocks import Choices, Control, Controls, Download, Figure, Heading, Metrics, Step, Table, Text
from vitviz.steps.names import dataset_text, hardware_text, model_title
from vitviz.steps.subject import Subject

LEGEND_AT_THE_FOOT = dict(orientation="h", yref="container", y=0.0, yanchor="bottom", x=0.0)  # plotly makes room


def describe(subject: Subject, choices: Choices) -> Step:
    """The card of the subject's model, or of a registry CNN the ``card_model`` choice names (the
    one the ViT-vs-CNN step sets beside it); needs no image."""
    tr, lang = subject.tr, subject.lang
    owners = (subject.name, *(name for name, spec in zoo.REGISTRY.items() if spec.is_cnn and name != subject.name))
    owner = choices.get("card_model")
    owner = owner if owner in owners else subject.name
    blocks: list = []
    if len(owners) > 1:
        picker = Control(
            "card_model",
            "select",
            tr("card.which"),
            owners,
            owner,
            f"{tr('card.which')}: {model_title(owner, lang)}",
            format=lambda name: model_title(name, lang),
            help=tr("card.which_help"),
            quiet_default=True,
        )
        blocks.append(Controls((picker,)))
    model, spec = (subject.model, subject.spec) if owner == subject.name else subject.compute.model(owner)
    config, card = model.config, spec.card
    blocks += [Heading(spec.title_in(lang)), Text(spec.description_in(lang))]
    if not spec.trained:
        blocks.append(Text(tr("sidebar.untrained"), role="warning"))
    blocks += _size(subject, model, card)
    rows = tables.parameter_rows(model.params_by_module(), model.num_params())
    by_module = tuple(
        {tr("card.col.module"): name, tr("card.col.params"): f"{count:,}", tr("card.col.share"): f"{share:.1%}"}
        for name, count, share in rows
    )
    shown = {k: v for k, v in config.to_dict().items() if k not in ("class_names", "preprocess")}
    settings = tuple(
        {tr("card.col.setting"): k, tr("card.col.value"): tables.setting_text(v)} for k, v in shown.items()
    )
    blocks += [
        Text(f"**{tr('card.by_module')}**"),
        Table(by_module),
        Text(f"**{tr('card.config')}**"),
        Table(settings),
    ]
    if card.history:
        blocks += _training(subject, card)
    else:
        blocks.append(Text(tr("card.no_history"), role="info"))
    return Step(tr("page.card"), tr("card.intro"), tuple(blocks))


def _size(subject: Subject, model, card: ModelCard) -> list:
    """Parameters, compute, tokens (or a CNN's last feature map) and the test accuracy, one view
    (the protocol every card is compared by; a two-view CNN's own figure under it)."""
    tr, config = subject.tr, model.config
    metrics = [
        (tr("card.params"), f"{model.num_params():,}"),
        (tr("card.flops"), f"{flops_per_image(config) / 1e9:.2f} GFLOP"),
        (tr("card.feature_map"), " x ".join(map(str, feature_shape(config))))
        if isinstance(config, CNNConfig)
        else (tr("card.tokens"), f"{config.num_tokens} x {config.embed_dim}"),
    ]
    if card.one_view_accuracy is not None:
        metrics.append((tr("card.accuracy_one_view"), f"{card.one_view_accuracy:.2%}"))
    else:
        accuracy = card.test_accuracy
        metrics.append((tr("card.accuracy"), f"{accuracy:.2%}" if accuracy is not None else "-"))
    shown: list = [Metrics(tuple(metrics))]
    if card.views != "image" and card.test_accuracy is not None:
        # a ViT's tour explains one pass, of the image as it is: only the lab's answers are averaged
        key = "card.accuracy_mirror" if isinstance(config, CNNConfig) else "card.accuracy_mirror_vit"
        shown.append(Text(tr(key, accuracy=f"{card.test_accuracy:.2%}"), role="caption"))
    return shown


def stage_list(numbers: list[int]) -> str:
    """Stage numbers as a reader writes them: "7", "8-9", "2, 5"."""
    if len(numbers) > 1 and numbers == list(range(numbers[0], numbers[-1] + 1)):
        return f"{numbers[0]}-{numbers[-1]}"
    return ", ".join(map(str, numbers))


def _training(subject: Subject, card: ModelCard) -> list:
    """The training record: the curves with a line where each stage began, the facts, accuracy
    per class, and the recipe stage by stage."""
    tr = subject.tr
    shown: list = [Heading(tr("card.training"))]
    planned = card.planned_epochs or card.recipe.get("epochs")
    stages = card.stages
    if card.interim and card.schedule_end:  # the schedule ended below this checkpoint, which stayed
        end = card.schedule_end
        ended = tr(
            "card.interim_ended",
            epochs=card.epochs,
            total=planned or "?",
            end=end["epoch"],
            end_accuracy=f"{end['test_accuracy']:.2%}",
            accuracy=f"{card.test_accuracy:.2%}",
        )
        shown.append(Text(ended, role="info"))
    elif card.interim:
        shown.append(Text(tr("card.interim", epochs=card.epochs, total=planned or "?"), role="info"))
    starts = card.stage_starts()  # each stage's first epoch
    parts = []  # "stage 2, cifar10-vit-s2 (epochs 11-23)": the caption, and each stage label's hover text
    if len(stages) > 1:
        parts = [
            tr("card.stage", n=n, name=stage["name"], first=first, last=first + stage["epochs"] - 1)
            for n, (stage, first) in enumerate(zip(stages, starts, strict=True), start=1)
        ]
        shown.append(Text(tr("card.stages", count=len(stages), stages=" → ".join(parts)), role="caption"))
    labels = {key: tr(f"card.curve.{key}") for key in plots.CURVE_KEYS}
    # the legend under the axes' titles, at any height (a slide's)
    curves = plots.training_curves(
        card.history, labels, planned, starts[1:], stage_names=parts[1:], legend=LEGEND_AT_THE_FOOT
    )
    said = claims.training_curve(card.history)
    shown.append(Figure("card_curves", curves, subject.says(said) if said else ""))
    # a table, not the data grid: a long value (a teacher's name and weights) wraps instead of being cut
    shown.append(
        Table(
            tuple({tr("card.col.fact"): k, tr("card.col.value"): str(v)} for k, v in _facts(subject, card).items()),
            whole=True,
        )
    )
    per_class = card.per_class_accuracy
    if per_class:
        names = [subject.label(c) for c in per_class]
        values = list(per_class.values())  # every class named, at a slide's height
        bars = plots.bars(names, values, title=tr("card.per_class"), height=120 + 30 * len(per_class), every_label=True)
        shown.append(Figure("card_per_class", bars, subject.says(claims.class_accuracy(per_class))))
    # the recipe: one column per stage, and the epochs each stage ran
    runs = card.runs  # the stages, or the one run
    recipes = [run["recipe"] for run in runs] or [card.recipe]
    rows = tables.recipe_rows(recipes, [run["epochs"] for run in runs] or None, cut_short=tr("card.cut_short"))
    columns = (
        [tr("card.col.stage", n=n) for n in range(1, len(stages) + 1)] if len(stages) > 1 else [tr("card.col.value")]
    )
    recipe = tuple(  # a static table reads "-" as Markdown's list bullet: a stage without the setting shows "–"
        {tr("card.col.setting"): setting, **{c: "–" if v == "-" else v for c, v in zip(columns, values, strict=True)}}
        for setting, values in rows
    )
    shown += [Text(f"**{tr('card.recipe')}**"), Table(recipe, whole=True)]
    shown.append(
        Download("download.csv", "training_history.csv", "card_csv", {}, csv=lambda: tables.history_csv(card.history))
    )
    return shown


def _split_text(facts: dict, lang: str, tr) -> str:
    """A dataset split as the card records it: "CIFAR-10 (JPEG copy), 10,000 images"."""
    if facts.get("dataset"):
        return tr("card.split", dataset=dataset_text(facts["dataset"], lang), n=f"{facts.get('images', 0):,}")
    return str(facts.get("source") or "-")


def _facts(subject: Subject, card: ModelCard) -> dict[str, object]:
    """What the card records of the run: its data, epochs, time, machines, weights and teachers."""
    tr, lang = subject.tr, subject.lang
    facts: dict[str, object] = {
        tr("card.trained_on"): _split_text(card.trained_on, lang, tr),
        tr("card.tested_on"): _split_text(card.tested_on, lang, tr),
        tr("card.epochs"): card.epochs or "-",
        tr("card.wall_time"): f"{card.wall_time_s / 3600:.1f} h",
    }
    for ran, where in card.hardware_rows():  # which stages ran where, and no more than is known
        if ran is None:
            heading = tr("card.hardware")
        else:
            heading = tr("card.hardware_stage" if len(ran) == 1 else "card.hardware_stages", stages=stage_list(ran))
        facts[heading] = hardware_text(where, lang)
    dtype = card.weights_dtype
    facts[tr("card.weights_dtype")] = tr("card.weights_dtype_value", dtype=dtype) if dtype != "float32" else dtype
    for teacher, taught in card.teachers():  # a distilled model: who taught which stages
        accuracy, sha = teacher.get("test_accuracy"), teacher.get("weights_sha256")
        if len(card.stages) < 2:
            fact = tr("card.teacher")
        else:
            fact = tr("card.teacher_stage" if len(taught) == 1 else "card.teacher_stages", stages=stage_list(taught))
        one_view = zoo.one_view_accuracy_of(teacher)  # as the card's own accuracy is measured
        if one_view is not None:
            value = tr("card.teacher_value_one_view", name=teacher["name"], accuracy=f"{one_view:.2%}", sha=sha[:12])
        elif accuracy is not None and sha:
            value = tr("card.teacher_value", name=teacher["name"], accuracy=f"{accuracy:.2%}", sha=sha[:12])
        else:
            value = teacher["name"]  # a stage written before stages kept their teacher's record
        facts[fact] = value
    return facts
