"""Names the steps write in the reader's language: a model's title, a dataset's, a machine's.
The app's ``vitviz.app.text`` writes them in the session's language with these functions."""

from __future__ import annotations

import re
from pathlib import Path

from vitviz.models import zoo
from vitviz.models.card import MACHINES_JOIN
from vitviz.render.i18n import t
from vitviz.server import access, values

DATASET_KEYS = {"CIFAR-10 (JPEG copy)": "data.cifar10_jpeg", "CIFAR-10 (image folder)": "data.cifar10_folder"}


def model_title(name: str, lang: str) -> str:
    """A registry model's title in ``lang``; an upload's file name; a hub name as it was typed; a
    file of the server's model folders by its name (never its folder), cut to 80 characters."""
    if name in zoo.REGISTRY:
        return zoo.REGISTRY[name].title_in(lang)
    if name.startswith(zoo.UPLOAD):
        return values.echo(name.split(":", 2)[-1])
    return values.echo(name if name.startswith(access.HUB_PREFIXES) else Path(name).name)


def dataset_text(label: str, lang: str) -> str:
    """A dataset's name as ``vitviz.models.data.dataset_label`` and model cards write it, in ``lang``."""
    key = DATASET_KEYS.get(label)
    return t(key, lang) if key else label


def hardware_text(label: str, lang: str) -> str:
    """A card's hardware ("CPU (Intel(R) Xeon(R) Processor, 2 threads)", as ``train.hardware_label``
    writes it, or the machines a run moved between, joined by ``MACHINES_JOIN``) in ``lang``; other
    labels as written."""
    texts = []
    for machine in label.split(MACHINES_JOIN):
        found = re.fullmatch(r"CPU \((.+), (\d+) threads?\)", machine)
        if found and found[2] == "1":
            texts.append(t("card.hardware_cpu_one", lang, name=found[1]))
        else:
            texts.append(t("card.hardware_cpu", lang, name=found[1], threads=found[2]) if found else machine)
    return MACHINES_JOIN.join(texts)
