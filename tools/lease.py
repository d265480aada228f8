"""One GPU lease, one command: airbench96's CNN, then the ViT it teaches, checkpointed into a
folder the device tool brings back, and resumed from that folder by the next call.

    python -m tools.lease --data .gpu/cifar10-jpeg --out "$OUT"                       # first call
    python -m tools.lease --data .gpu/cifar10-jpeg --out "$OUT" --resume .gpu/lease   # a later one
    python -m tools.lease --tiny --data <a small ImageFolder> --out <a folder>         # the same path on a CPU, in seconds

Two phases, each a run of ``vitviz.training.train`` in the work folder (``.lease/<run name>``, which git ignores):

1. ``cnn``: airbench96's net (``--preset cifar10-cnn-96``) over airbench96's published 45 epochs.
   Once finished it is rounded to float16, as ``tools.ship`` would ship it, and that file is the
   teacher: the ViT learns from exactly the weights that come back.
2. ``vit``: Lee et al.'s same-cost ViT (``--preset cifar10-vit-lee``: depth 9, 12 heads, MLP
   ratio 2, 300 passes) taught by it (DeiT's hard distillation), at the batch a GPU needs. Its
   epochs are fitted to the time the call has left when it begins (``fitted``), so the schedule
   ends in the call instead of stopping at a high rate. First a probe (``probe``) measures the
   ViT's images/s as it is, with torch.compile, with CUDA graphs (``reduce-overhead``) and
   autotuned kernels (``max-autotune``), then the fastest of those at twice the batch, and the
   run takes the fastest: a lease buys steps, so each step should cost least. A candidate this
   machine cannot run (no CUDA, no compiler) is skipped with a line in the log.
   The ViT keeps snapshots (``VIT_SNAPSHOTS``: before its first step, after epochs 1, 5 and 20,
   and at its end; float16) in its run folder's ``snapshots/``, with ``snapshots.json`` (its
   per-epoch accuracy and loss), for a page on how the ViT learned (``vitviz.training.train.write_snapshot``
   has the form).

Both build their batches on the device (``loader="device"``). The call stops itself before
``--budget`` seconds have passed (after an epoch, when another would not end in time) and packs
what the next call needs into ``--out``: ``lease.json`` (what was done, and the pack's sha256)
and ``lease.tar.part-NN``, parts of at most 15 MiB (the device returns files of up to 16 MiB,
64 MiB in all). It packs again at every checkpoint, so a call cut off early still returns its
last one. A later call given ``--resume`` unpacks them into the work folder and goes on; on the
same warm machine the work folder is still there and ``--resume`` may be left out. Every call
trains at least one epoch.
"""

from __future__ import annotations

import dataclasses
import hashlib
import io
import json
import logging
import os
import shutil
import tarfile
import time
from pathlib import Path
from typing import Any

import torch

from vitviz import commandline
from vitviz.models import zoo
from vitviz.models.card import ModelCard
from vitviz.models.model import build_model
from vitviz.training.train import PRESETS, SNAPSHOTS, Snapshots, TrainConfig, hardware_label, load_data, read_run, train

log = logging.getLogger(__name__)

# The two phases as a lent GPU runs them: each preset, and what the lease changes in it.
CNN_RECIPE = dict(
    PRESETS["cifar10-cnn-96"],
    name="cifar10-cnn-lease",
    epochs=45,  # airbench96's published count; the preset (and the shipped CNN) had 37
    eval_every=5,
    checkpoint_every=5,
)
VIT_RECIPE = dict(
    PRESETS["cifar10-vit-lee"],
    name="cifar10-vit-lee-lease",
    batch_size=1024,  # at 256 a GPU's step waits on kernel launches (docs/training.md)
    lr=2e-3,  # four times the batch, twice the rate (square-root scaling of the preset's 1e-3)
    distill="hard",  # DeiT's hard distillation from the first phase's CNN, half the loss
    distill_alpha=0.5,
    eval_every=10,
    checkpoint_every=10,
)
# --tiny: the same phases on a few hundred images with tiny widths, for a CPU in seconds
TINY = dict(
    epochs=2, batch_size=32, limit_train=128, limit_test=64, eval_every=1, checkpoint_every=1, amp="off", threads=1
)
TINY_CNN = dict(TINY, model={**CNN_RECIPE["model"], "stem_width": 24, "widths": [8, 8], "group_convs": 3})
TINY_VIT = dict(TINY, epochs=3, warmup_epochs=1, model={"embed_dim": 24, "depth": 2, "num_heads": 12, "mlp_ratio": 2.0})

VIT_SNAPSHOTS = "0,1,5,20,end"  # about 5.4 MB each in float16: 27 MB for the five
# The probe's candidates, in order, each a change to the ViT's recipe; then the fastest of them at
# ``LARGER_BATCH`` times the batch (its rate scaled by the square root, as VIT_RECIPE's was)
PROBE_CANDIDATES = (
    {"compile": "off"},
    {"compile": "default"},  # fused kernels
    {"compile": "reduce-overhead"},  # and CUDA graphs: a small model's step waits on kernel launches
    {"compile": "max-autotune"},  # and autotuned matmuls
)
TINY_PROBE = ({"compile": "off"}, {"compile": "reduce-overhead"})  # --tiny: no compiling on a CPU in seconds
CUDA_MODES = {"reduce-overhead", "max-autotune"}  # their point is CUDA graphs and GPU kernels
LARGER_BATCH = 2
PROBE_SHARE = 0.3  # of the time left, what the probe may take: candidates after that are skipped

PART_BYTES = 15 * 2**20  # a file the device tool brings back: at most 16 MiB
PACK_BYTES = 60 * 2**20  # all of them: at most 64 MiB
TEACHER = "teacher"  # the work folder's float16 CNN, the ViT's teacher
FIT = "fit.json"  # the ViT's schedule as fitted to the first call's time, kept for the calls after it
PROBE_STEPS = 20  # steps a probe epoch takes; its second epoch, warm, gives the speed
FIT_SHARE = 0.9  # of the time left, what the fitted epochs may fill: evaluations and packs take the rest


def recipes(data: str, tiny: bool, cnn: dict[str, Any], vit: dict[str, Any]) -> tuple[TrainConfig, TrainConfig]:
    """The two phases' TrainConfigs (the ViT's teacher is set once the CNN exists)."""
    cnn_recipe = {**CNN_RECIPE, **(TINY_CNN if tiny else {}), **cnn, "data": data}
    vit_recipe = {**VIT_RECIPE, **(TINY_VIT if tiny else {}), **vit, "data": data}
    return TrainConfig(**cnn_recipe), TrainConfig(**vit_recipe)


# ---------------------------------------------------------------------------------------------
# The pack: what one call hands the next, in parts the device tool brings back
# ---------------------------------------------------------------------------------------------


def pack(work: Path, out: Path, summary: dict[str, Any], cnn_run: Path | None = None) -> None:
    """Write ``work``'s state into ``out`` as ``lease.tar.part-NN`` and ``lease.json``.

    The pack holds the teacher (float16, about 20 MB for airbench96's net), the ViT's checkpoint
    (about 33 MB with AdamW's moments) or finished weights, both runs' cards and histories, the
    ViT's snapshots as far as they fit (packed last: a pack of the finished ViT holds all five), and
    the CNN's checkpoint only while the CNN is unfinished and it fits (airbench96's, with
    lookahead, takes about 120 MB: a call cut off in the CNN's phase starts it again elsewhere).
    Once the teacher exists, ``cnn_run``'s checkpoint and float32 weights stay out.
    """
    files = sorted(p for p in work.rglob("*") if p.is_file())
    chosen = [p for p in files if not any(part.startswith(".") for part in p.relative_to(work).parts)]  # half-written
    # a finished run ships its weights: its checkpoint (three times their size) stays out
    chosen = [p for p in chosen if p.name != "checkpoint.pt" or not finished_run(p.parent)]
    if cnn_run is not None and (work / TEACHER).exists():
        chosen = [p for p in chosen if p.parent != cnn_run or p.suffix not in (".pt", ".safetensors")]
    # snapshots last: past the limit they are left out (for this pack), never the teacher or a checkpoint
    chosen.sort(key=lambda p: SNAPSHOTS in p.relative_to(work).parts)
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        total = 0
        for path in chosen:
            total += path.stat().st_size
            if total > PACK_BYTES:
                log.warning("left %s out of the pack: past %d bytes", path, PACK_BYTES)
                total -= path.stat().st_size
                continue
            tar.add(path, arcname=path.relative_to(work).as_posix())
    blob = buffer.getvalue()
    out.mkdir(parents=True, exist_ok=True)
    parts = [blob[i : i + PART_BYTES] for i in range(0, len(blob), PART_BYTES)]
    names_out = [f"lease.tar.part-{i:02d}" for i in range(len(parts))]
    for name, part in zip(names_out, parts, strict=True):
        _write_atomic(out / name, part)
    for stale in out.glob("lease.tar.part-*"):
        if stale.name not in names_out:
            stale.unlink()
    record = {**summary, "parts": names_out, "bytes": len(blob), "sha256": hashlib.sha256(blob).hexdigest()}
    _write_atomic(out / "lease.json", json.dumps(record, indent=1).encode())


def unpack(source: Path, work: Path) -> dict[str, Any]:
    """Rebuild a pack from ``source`` (a folder of ``lease.json`` and its parts) into ``work``.

    Raises:
        ValueError: a part is missing or the parts do not make the pack ``lease.json`` names.
    """
    record = json.loads((source / "lease.json").read_text())
    missing = [name for name in record["parts"] if not (source / name).is_file()]
    if missing:
        raise ValueError(f"{source} lacks {', '.join(missing)}: copy every part the last call returned.")
    blob = b"".join((source / name).read_bytes() for name in record["parts"])
    if hashlib.sha256(blob).hexdigest() != record["sha256"]:
        raise ValueError(f"The parts in {source} do not make the pack lease.json describes (sha256 differs).")
    work.mkdir(parents=True, exist_ok=True)
    with tarfile.open(fileobj=io.BytesIO(blob)) as tar:
        members = tar.getmembers()
        outside = [m.name for m in members if not m.isreg() or Path(m.name).is_absolute() or ".." in Path(m.name).parts]
        if outside:
            raise ValueError(f"The pack in {source} holds more than plain files inside it: {outside[:3]}.")
        tar.extractall(work, members)  # plain files inside work, nothing else (checked above)
    return record


def finished_run(run: Path) -> bool:
    """Whether ``run`` holds its final weights (``<run name>.safetensors``), written once its
    schedule ended."""
    return (run / f"{run.name}.safetensors").is_file()


def _write_atomic(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def make_teacher(run: Path, teacher: Path) -> None:
    """The finished CNN rounded to float16 (as ``tools.ship`` stores it) beside its card."""
    weights, config, card = read_run(run)
    model = build_model(config)
    model.load_state_dict(weights)
    staging = teacher.parent.with_name(f".{teacher.parent.name}.tmp")
    shutil.rmtree(staging, ignore_errors=True)
    zoo.save(model, staging / teacher.name, card, dtype=torch.float16)
    staging.rename(teacher.parent)  # weights and card together, or not at all


def fit_schedule(cfg: TrainConfig, seconds_left: float, epoch_seconds: float) -> dict[str, Any]:
    """The most epochs (at most ``cfg.epochs``) whose schedule ends in ``FIT_SHARE`` of the time
    left, and a warmup shortened in proportion: a schedule that ends, rather than a longer one
    cut off while its learning rate is still high."""
    epochs = max(1, min(cfg.epochs, int(FIT_SHARE * seconds_left / epoch_seconds)))
    warmup = max(1, round(cfg.warmup_epochs * epochs / cfg.epochs)) if cfg.warmup_epochs else 0
    return {"epochs": epochs, "warmup_epochs": min(warmup, epochs), "planned_epochs": cfg.epochs}


def probe_speed(cfg: TrainConfig, work: Path) -> float:
    """The images/s of ``cfg``'s training step: two epochs of ``PROBE_STEPS`` steps, the second
    (warm: compiled, its CUDA graphs recorded) measured."""
    probe_dir = work / ".probe"  # a dot: never packed
    shutil.rmtree(probe_dir, ignore_errors=True)
    probe_images = PROBE_STEPS * cfg.batch_size
    probe = dataclasses.replace(
        cfg, name="probe", epochs=2, warmup_epochs=1, eval_every=2, checkpoint_every=2,
        limit_train=min(cfg.limit_train, probe_images) if cfg.limit_train else probe_images,
        limit_test=cfg.batch_size,
    )  # fmt: skip
    try:
        return train(probe, out=probe_dir).history[-1]["images_per_s"]
    finally:
        shutil.rmtree(probe_dir, ignore_errors=True)
        if cfg.compile != "off":
            torch._dynamo.reset()  # the next candidate compiles afresh, and this one's graphs are freed


def larger_batch(changes: dict[str, Any], cfg: TrainConfig) -> dict[str, Any]:
    """``changes`` at ``LARGER_BATCH`` times ``cfg``'s batch, the rate scaled by its square root."""
    return {**changes, "batch_size": cfg.batch_size * LARGER_BATCH, "lr": cfg.lr * LARGER_BATCH**0.5}


def probe(
    cfg: TrainConfig, work: Path, deadline: float, candidates: tuple[dict[str, Any], ...] = PROBE_CANDIDATES
) -> tuple[dict[str, Any], float, list[dict[str, Any]]]:
    """Measure each candidate change to ``cfg`` (then the fastest at a larger batch) and return the
    fastest: (its changes, its images/s, a row per candidate with its images/s or why it was skipped).

    A candidate this machine cannot run is skipped with a line in the log, never a crash: a CUDA
    mode without CUDA, a compiler that fails, a batch that does not fit. So is one that would take
    the probe past ``PROBE_SHARE`` of the time left (were it to take as long as the longest so far).

    Raises:
        RuntimeError: no candidate ran.
    """
    started = time.monotonic()
    allowed = PROBE_SHARE * max(deadline - started, 0.0)
    rows: list[dict[str, Any]] = []
    longest = [0.0]  # the longest candidate's seconds so far

    def measure(changes: dict[str, Any]) -> None:
        row: dict[str, Any] = dict(changes)
        rows.append(row)
        if changes.get("compile") in CUDA_MODES and not torch.cuda.is_available():
            row["skipped"] = "needs CUDA"
        elif rows[:-1] and time.monotonic() - started + longest[0] > allowed:  # it may take as long as the longest
            row["skipped"] = f"the probe had taken {time.monotonic() - started:.0f} s of its {allowed:.0f} s"
        else:
            began = time.monotonic()
            try:
                row["images_per_s"] = probe_speed(dataclasses.replace(cfg, **changes), work)
            except Exception as err:  # noqa: BLE001 - whatever a candidate raises, the others still run
                first_line = (str(err).strip().splitlines() or [""])[0]
                row["skipped"] = f"{type(err).__name__}: {first_line[:200]}"
                if torch.cuda.is_available():
                    torch.cuda.empty_cache()
            longest[0] = max(longest[0], time.monotonic() - began)
        if "skipped" in row:
            log.info("probe: skipped %s (%s)", json.dumps(changes), row["skipped"])
        else:
            log.info("probe: %s trains %.1f images/s", json.dumps(changes), row["images_per_s"])

    for changes in candidates:
        measure(changes)
    ran = [row for row in rows if "images_per_s" in row]
    if ran:  # the fastest so far, at a larger batch
        fastest = max(ran, key=lambda row: row["images_per_s"])
        measure(larger_batch({k: v for k, v in fastest.items() if k != "images_per_s"}, cfg))
        ran = [row for row in rows if "images_per_s" in row]
    if not ran:
        raise RuntimeError(f"No candidate of the probe ran on this machine: {json.dumps(rows)}")
    best = max(ran, key=lambda row: row["images_per_s"])
    return {k: v for k, v in best.items() if k != "images_per_s"}, best["images_per_s"], rows


def fitted(
    cfg: TrainConfig, work: Path, deadline: float, candidates: tuple[dict[str, Any], ...] = PROBE_CANDIDATES
) -> TrainConfig:
    """``cfg`` with the fastest of ``candidates`` (``probe``) and its schedule fitted to the time
    until ``deadline`` at that speed.

    The first call that reaches the ViT fits it and writes ``fit.json`` into the work folder (so
    it travels in the pack); every later call reads it back, and the run resumes with the recipe it
    began with. A run begun without a fit (an older pack) is left as it began.
    """
    record = work / FIT
    if not record.exists():
        if (work / cfg.name / "checkpoint.pt").exists():
            return cfg
        changes, images_per_s, rows = probe(cfg, work, deadline, candidates)
        chosen = dataclasses.replace(cfg, **changes)
        train_images = len(load_data(cfg)[0])
        seconds_left = deadline - time.monotonic()
        fit = fit_schedule(chosen, seconds_left, train_images / images_per_s)
        fit.update(
            images_per_s=images_per_s, seconds_left=round(seconds_left, 1),
            compile=chosen.compile, batch_size=chosen.batch_size, lr=chosen.lr, probe=rows,
        )  # fmt: skip
        _write_atomic(record, json.dumps(fit, indent=1).encode())
        log.info("fitted the ViT's schedule to the time left: %s", json.dumps(fit))
    fit = json.loads(record.read_text())
    kept = {
        key: fit[key] for key in ("compile", "batch_size", "lr") if key in fit
    }  # a fit.json from before the probe has none
    return dataclasses.replace(cfg, epochs=fit["epochs"], warmup_epochs=fit["warmup_epochs"], **kept)


def _summary(phase: str, card: Any, started: float) -> dict[str, Any]:
    return {
        "phase": phase,
        "epochs": card.epochs if card else 0,
        "planned_epochs": card.planned_epochs if card else None,
        "test_accuracy": card.test_accuracy if card else None,
        "finished": bool(card and not card.interim),
        "seconds": round(time.monotonic() - started, 1),
        "device": hardware_label(),
    }


# ---------------------------------------------------------------------------------------------
# The lease
# ---------------------------------------------------------------------------------------------


def lease(
    data: str, out: Path, work: Path = Path(".lease"), budget: float = 540.0, resume: Path | None = None,
    tiny: bool = False, cnn: dict[str, Any] | None = None, vit: dict[str, Any] | None = None, fit: bool = True,
    snapshots: str = VIT_SNAPSHOTS,
) -> dict[str, Any]:  # fmt: skip
    """Train the CNN, then the ViT it teaches, until ``budget`` seconds from now; returns what
    ``lease.json`` records.

    Args:
        data: the CIFAR-10 ImageFolder.
        out: where the pack goes (the device tool's $OUT).
        work: the runs' folder; it outlives a call on the same machine.
        budget: seconds from now after which no epoch begins that would end later.
        resume: a folder holding an earlier call's ``lease.json`` and parts.
        tiny: the same phases on a few hundred images with tiny widths.
        cnn, vit: TrainConfig fields to change in either phase (e.g. {"epochs": 37}).
        fit: probe the ViT's fastest step and fit its epochs to the time this call has left once it
            reaches the ViT (unless ``vit`` names its epochs); later calls keep that recipe.
        snapshots: the ViT's epochs to keep, as ``vitviz.training.train.Snapshots.parse`` reads them.
    """
    started = time.monotonic()
    deadline = started + budget
    if resume is not None:
        record = unpack(resume, work)
        log.info("unpacked %s (%s phase, %s epochs) into %s", resume, record["phase"], record["epochs"], work)
    cnn_cfg, vit_cfg = recipes(data, tiny, cnn or {}, vit or {})
    cnn_run, vit_run = work / cnn_cfg.name, work / vit_cfg.name  # run folders named as tools.ship reads them
    teacher = work / TEACHER / f"{cnn_cfg.name}.safetensors"

    # phase 1: the CNN, until it is finished and rounded into the teacher
    if not teacher.exists():
        card = train(cnn_cfg, out=cnn_run, deadline=deadline)
        if card.interim:
            summary = _summary("cnn", card, started)
            pack(work, out, summary, cnn_run)
            return summary
        make_teacher(cnn_run, teacher)
        log.info("the CNN measured %.2f%%; it teaches the ViT from %s", 100 * card.test_accuracy, teacher)

    # phase 2: the ViT, taught by the teacher, packed at every checkpoint
    vit_cfg = dataclasses.replace(vit_cfg, teacher=str(teacher))
    if fit and "epochs" not in (vit or {}):
        vit_cfg = fitted(vit_cfg, work, deadline, TINY_PROBE if tiny else PROBE_CANDIDATES)

    def packed(run: Path) -> None:
        _, _, interim = read_run(run, checkpoint=True)
        pack(work, out, _summary("vit", interim, started), cnn_run)

    if finished_run(vit_run):  # nothing left to train: pack what is there again
        card = ModelCard.read(vit_run / f"{vit_run.name}.json")
    else:
        card = train(
            vit_cfg, out=vit_run, deadline=deadline, on_checkpoint=packed, snapshots=Snapshots.parse(snapshots)
        )
    summary = _summary("vit", card, started)
    pack(work, out, summary, cnn_run)
    return summary


def main(argv: list[str] | None = None) -> None:
    parser = commandline.parser("tools.lease", __doc__)
    parser.add_argument("--data", help="the CIFAR-10 ImageFolder (e.g. .gpu/cifar10-jpeg)")
    parser.add_argument("--out", type=Path, help="where the pack goes: the device tool's $OUT")
    parser.add_argument("--unpack", type=Path, help="only unpack this folder's pack into --work (to ship from it)")
    parser.add_argument("--resume", type=Path, default=None, help="a folder of an earlier call's lease.json and parts")
    parser.add_argument("--work", type=Path, default=Path(".lease"), help="the runs' folder (default: .lease)")
    parser.add_argument(
        "--budget", type=float, default=540.0, help="seconds after which no epoch begins that would end later"
    )
    parser.add_argument(
        "--tiny", action="store_true", help="a few hundred images, tiny widths: the same path in seconds"
    )
    parser.add_argument(
        "--cnn", default="{}", help="TrainConfig fields to change in the CNN's phase, as JSON: '{\"epochs\": 37}'"
    )
    parser.add_argument("--vit", default="{}", help="the same for the ViT's phase")
    parser.add_argument(
        "--no-fit", dest="fit", action="store_false",
        help="keep the preset's 300 ViT epochs (and its step) instead of probing and fitting them to the first call's time",
    )  # fmt: skip
    parser.add_argument(
        "--snapshots", default=VIT_SNAPSHOTS, help="the ViT's epochs to keep in float16 (default %(default)s)"
    )
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    if args.unpack is not None:
        print(json.dumps(unpack(args.unpack, args.work)))
        return
    if args.data is None or args.out is None:
        parser.error("--data and --out are needed to train (or --unpack a pack)")
    summary = lease(
        args.data, args.out, args.work, args.budget, args.resume, args.tiny, json.loads(args.cnn), json.loads(args.vit),
        args.fit, args.snapshots,
    )  # fmt: skip
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
