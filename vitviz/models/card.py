"""The model card: what a trained model says about itself, read and written in one place.

A card is the json beside a model's weights (``vitviz/assets/models/cifar10-vit.json``): the config the
weights fit, the training recipe of every stage, the per-epoch history, where the data came from,
and what the test split gave. ``vitviz.training.train`` writes one at the end of a run, ``tools.ship``
adds the measured accuracy, ``vitviz.models.zoo`` reads it to build a model, and the app's card page
shows it. Like ``Trace``, it is a typed object rather than a dictionary every reader walks
with ``.get().get()``.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vitviz.server import values

MACHINES_JOIN = " + "  # a stage that moved between machines (a lent GPU, then this CPU) names them in order


@dataclass
class ModelCard:
    """One model's card.

    Attributes:
        name: the model's name (a registry name once shipped).
        config: the model config as json (``config_from_dict`` builds it).
        recipe: the last stage's training recipe (``TrainConfig`` as json).
        epochs: epochs trained, counted from the first stage.
        planned_epochs: epochs the last stage was to reach (more than ``epochs`` for a checkpoint).
        wall_time_s: seconds of training, all stages.
        history: one row per epoch ("epoch", "train_loss", "test_accuracy", ...), all stages.
        stages: one entry per stage ("name", "epochs", "recipe", "hardware", and "teacher" for a
            distilled stage, as ``teacher`` below); empty for a single run.
        test_accuracy: top-1 on ``tested_on``.
        evaluated: what shipping measured ("misclassified", "weights_sha256", "per_class_accuracy",
            and "weights_dtype" where the file stores float16 rather than float32; for a model that
            averages the image and its mirror, "one_view_accuracy", its top-1 on one view).
        trained_on, tested_on: the splits as ``vitviz.models.data.describe`` writes them.
        hardware: where the last stage trained ("CPU (..., 2 threads)", a GPU's name, or the
            machines it moved between joined by ``MACHINES_JOIN``).
        teacher: the last stage's distillation teacher ("name", "weights_sha256",
            "test_accuracy"), if any.
        interim: set when the card is a checkpoint's ("checkpoint after epoch 4 of 30").
        schedule_end: where an interim checkpoint's schedule ended when its end did not beat the
            checkpoint, so the checkpoint stayed: {"epoch": 255, "test_accuracy": 0.8479}.
        extra: every other field, kept as written (precision, processes, torch version, ...).
    """

    name: str | None = None
    config: dict[str, Any] = field(default_factory=dict)
    recipe: dict[str, Any] = field(default_factory=dict)
    epochs: int = 0
    planned_epochs: int | None = None
    wall_time_s: float = 0.0
    history: list[dict[str, Any]] = field(default_factory=list)
    stages: list[dict[str, Any]] = field(default_factory=list)
    test_accuracy: float | None = None
    evaluated: dict[str, Any] = field(default_factory=dict)
    trained_on: dict[str, Any] = field(default_factory=dict)
    tested_on: dict[str, Any] = field(default_factory=dict)
    hardware: str | None = None
    teacher: dict[str, Any] | None = None
    interim: str | None = None
    schedule_end: dict[str, Any] | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        """Refuse a field of the wrong kind (a card may be a visitor's json): the card page reads
        every one of them as a number, a list or a table."""
        kinds = {
            "name": (str, type(None)),
            "hardware": (str, type(None)),
            "interim": (str, type(None)),
            "history": list,
            "stages": list,
            "teacher": (dict, type(None)),
            "schedule_end": (dict, type(None)),
            **{name: dict for name in ("config", "recipe", "evaluated", "trained_on", "tested_on", "extra")},
        }
        for name, kind in kinds.items():
            if not isinstance(getattr(self, name), kind):
                raise ValueError(f"The card's {name} is {getattr(self, name)!r}, not what a card holds there.")
        if not all(isinstance(row, dict) for row in (*self.history, *self.stages)):
            raise ValueError("The card's history and stages must be lists of tables.")
        numbers = {"epochs": (self.epochs, 0, 10**7), "wall_time_s": (self.wall_time_s, 0, 1e10)}
        numbers["test_accuracy"] = (self.test_accuracy, 0, 1) if self.test_accuracy is not None else (0, 0, 1)
        if self.planned_epochs is not None:
            numbers["planned_epochs"] = (self.planned_epochs, 0, 10**7)
        if "one_view_accuracy" in self.evaluated:
            numbers["one_view_accuracy"] = (self.evaluated["one_view_accuracy"], 0, 1)
        for name, (value, low, high) in numbers.items():
            if not values.finite(value, low, high):
                raise ValueError(f"The card's {name} must be a number from {low} to {high}, not {value!r}.")
        for row in self.history:  # the card page draws every number of every epoch
            for key, value in row.items():
                if isinstance(value, float) and not values.finite(value, -1e12, 1e12):
                    raise ValueError(f"The card's history holds {key} = {value!r}, not a number.")

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ModelCard:
        """A card from its json; fields it does not name go to ``extra``."""
        known = {f.name for f in dataclasses.fields(cls)} - {"extra"}
        return cls(
            **{k: v for k, v in data.items() if k in known},
            extra={k: v for k, v in data.items() if k not in known},
        )

    @classmethod
    def read(cls, path: Path) -> ModelCard:
        return cls.from_dict(json.loads(Path(path).read_text()))

    def to_dict(self) -> dict[str, Any]:
        """The json form: every field that says something (empty and None ones left out), then ``extra``."""
        data = {
            f.name: getattr(self, f.name)
            for f in dataclasses.fields(self)
            if f.name != "extra" and getattr(self, f.name) not in (None, {}, [])
        }
        return {**data, **self.extra}

    def write(self, path: Path) -> None:
        Path(path).write_text(json.dumps(self.to_dict(), indent=1))

    def replace(self, **changes: Any) -> ModelCard:
        return dataclasses.replace(self, **changes)

    @property
    def runs(self) -> list[dict[str, Any]]:
        """The stages, or the one run of a card without any: each with "name", "epochs" and "recipe"
        (and "teacher" where the card records one)."""
        if self.stages:
            return list(self.stages)
        if not self.epochs:
            return []
        taught = {"teacher": self.teacher} if self.teacher else {}
        where = {"hardware": self.hardware} if self.hardware else {}
        return [{"name": self.name, "epochs": self.epochs, "recipe": self.recipe, **where, **taught}]

    def hardware_by_stage(self) -> list[tuple[str, list[int]]]:
        """Each machine the stages trained on, in order of first use, with its stages (counted
        from 1): a stage's own record, the card's ``hardware`` for a last stage without one; an
        earlier stage written before stages kept theirs is left out."""
        runs = self.runs
        found: dict[str, list[int]] = {}
        for number, run in enumerate(runs, start=1):
            where = run.get("hardware") or (self.hardware if number == len(runs) else None)
            if where:
                found.setdefault(where, []).append(number)
        return list(found.items())

    def hardware_rows(self) -> list[tuple[list[int] | None, str]]:
        """The card's hardware as the model card lists it: one row per machine with its stages
        where stages trained on different machines or some stage has no record of its machine
        (so no more is claimed than is known); otherwise one row for the whole model (stages
        None), "-" when the card names no machine."""
        machines = self.hardware_by_stage()
        known = sum(len(ran) for _, ran in machines)
        if len(machines) > 1 or 0 < known < len(self.runs):
            return [(ran, where) for where, ran in machines]
        return [(None, self.hardware or "-")]

    def teachers(self) -> list[tuple[dict[str, Any], list[int]]]:
        """Each distinct teacher, in the order they taught, with the stages (counted from 1) it taught.

        A stage's teacher is its own record; a last stage without one was taught by ``teacher``;
        an earlier stage written before stages kept theirs is known by the name in its recipe.
        """
        runs = self.runs
        found: dict[tuple[Any, Any], tuple[dict[str, Any], list[int]]] = {}
        for number, run in enumerate(runs, start=1):
            named = run["recipe"].get("teacher")
            last = number == len(runs)
            teacher = run.get("teacher") or (self.teacher if last else None) or ({"name": named} if named else None)
            if teacher:
                key = (teacher.get("name"), teacher.get("weights_sha256"))
                found.setdefault(key, (teacher, []))[1].append(number)
        return list(found.values())

    def stage_starts(self) -> list[int]:
        """Each stage's first epoch, counted from 1 ([1, 41, 61] for stages of 40, 20 and ...)."""
        lengths = [stage["epochs"] for stage in self.stages]
        return [1 + sum(lengths[:i]) for i in range(len(lengths))]

    @property
    def per_class_accuracy(self) -> dict[str, float]:
        return dict(self.evaluated.get("per_class_accuracy") or {})

    @property
    def weights_dtype(self) -> str:
        """How the weights file stores them: "float32", or "float16" for a model too big for the
        repository in float32 (measured as stored: shipping rounds before it evaluates)."""
        return self.evaluated.get("weights_dtype", "float32")

    @property
    def views(self) -> str:
        """What ``test_accuracy`` was measured on: "image and mirror" for a model that averages its
        answers for the image and its mirror image (config ``test_flip``), else "image" (one view),
        in ``vitviz.analyses.evaluate.inference``'s words."""
        return "image and mirror" if self.config.get("test_flip") else "image"

    @property
    def one_view_accuracy(self) -> float | None:
        """Top-1 on the test split looking once at each image: the protocol every model shares, so
        the one to compare models by (None where a two-view model's card does not record it)."""
        if self.views == "image":
            return self.test_accuracy
        return self.evaluated.get("one_view_accuracy")
