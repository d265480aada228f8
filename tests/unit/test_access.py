"""What a server lets its visitors load (vitviz.server.access, and zoo.load under a policy): nothing a
visitor types may read the server's files, block it, or download without the server's leave."""

from __future__ import annotations

import json
import os
import re
import socket
import threading
import time
from pathlib import Path

import pytest
import torch
from safetensors.torch import save as save_bytes

from vitviz.models import zoo
from vitviz.models.card import ModelCard
from vitviz.models.config import ViTConfig
from vitviz.models.model import VisionTransformer
from vitviz.render.i18n import plain
from vitviz.server import access, values

CLASS_NAME = re.compile(r"\b[A-Z]\w*(Error|Exception|Warning)\b")  # what a sentence must never name


@pytest.fixture
def folders(tmp_path: Path) -> tuple[Path, Path]:
    """(the server's model folder, a private folder beside it)."""
    (tmp_path / "models").mkdir()
    (tmp_path / "private").mkdir()
    return tmp_path / "models", tmp_path / "private"


@pytest.fixture
def policy(folders) -> access.Policy:
    return access.Policy(model_dirs=(folders[0].resolve(),))


def _refusal(name: str, policy: access.Policy) -> zoo.ModelLoadError:
    with pytest.raises(zoo.ModelLoadError) as err:
        zoo.load(name, device="cpu", policy=policy)
    assert not CLASS_NAME.search(str(err.value)) and not CLASS_NAME.search(err.value.sentence("ko"))
    return err.value


def _as_missing(name: str, policy: access.Policy, missing: str) -> None:
    """``name`` is refused with exactly the sentence a missing name gets (but for the name)."""
    refused, absent = _refusal(name, policy), _refusal(missing, policy)
    assert refused.key == absent.key and refused.key.startswith("model.unknown_served")
    for lang in ("en", "ko"):
        said, said_missing = plain(refused.sentence(lang)), plain(absent.sentence(lang))  # not as Markdown
        assert said.replace(repr(values.echo(name)), "N") == said_missing.replace(repr(values.echo(missing)), "N")


# ---- the server's options ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "argv, env, address, hub",
    [
        ([], {}, "127.0.0.1", True),  # a teacher's own machine: downloads allowed
        ([], {}, "localhost", True),
        ([], {}, None, False),  # Streamlit's default listens on every address: a class's server
        ([], {}, "0.0.0.0", False),
        (["--allow-hub"], {}, "0.0.0.0", True),
        (["--no-hub"], {}, "127.0.0.1", False),
        ([], {"VITVIZ_ALLOW_HUB": "1"}, None, True),
        ([], {"VITVIZ_ALLOW_HUB": "0"}, "127.0.0.1", False),
        (["--no-hub"], {"VITVIZ_ALLOW_HUB": "1"}, None, False),  # a flag wins over the environment
    ],
)
def test_hub_downloads_by_default_only_on_a_loopback_server(argv, env, address, hub):
    assert access.server_policy(argv, env, address).allow_hub is hub


def test_no_model_folder_by_default_and_the_named_ones_resolved(folders, tmp_path):
    assert access.server_policy([], {}, None).model_dirs == ()
    link = tmp_path / "link"
    link.symlink_to(folders[0])
    policy = access.server_policy(["--models", str(link), "--models", "/proc", "--max-model-mb", "7"], {}, None)
    assert policy.model_dirs == (folders[0].resolve(),) and policy.max_model_mb == 7  # /proc never
    from_env = access.server_policy([], {"VITVIZ_MODELS": os.pathsep.join(map(str, folders))}, None)
    assert from_env.model_dirs == tuple(f.resolve() for f in folders)


# ---- paths --------------------------------------------------------------------------------------


def _planted(folder: Path, tiny_config) -> Path:
    torch.manual_seed(0)
    path = folder / "planted.safetensors"
    zoo.save(VisionTransformer(tiny_config).eval(), path)
    return path


def test_a_valid_checkpoint_inside_the_model_folder_loads(folders, policy, tiny_config):
    path = _planted(folders[0], tiny_config)
    model, spec = zoo.load(str(path), device="cpu", policy=policy)
    assert spec.config == tiny_config and not model.training


def test_a_valid_checkpoint_outside_gets_the_missing_names_sentence(folders, policy, tiny_config):
    path = _planted(folders[1], tiny_config)
    assert access.decide(str(path), policy, zoo.registry_files()).kind == "unknown"
    _as_missing(str(path), policy, str(folders[1] / "absent.safetensors"))
    _as_missing(str(path), access.Policy(), str(folders[1] / "absent.safetensors"))  # no folder at all


def test_a_symlink_out_of_the_model_folder_is_refused(folders, policy, tiny_config):
    outside = _planted(folders[1], tiny_config)
    (folders[0] / "escape.safetensors").symlink_to(outside)
    (folders[0] / "up").symlink_to(folders[1])
    for name in (folders[0] / "escape.safetensors", folders[0] / "up" / "planted.safetensors"):
        assert access.decide(str(name), policy, zoo.registry_files()).kind == "unknown"
        _as_missing(str(name), policy, str(folders[0] / "absent.safetensors"))
    # ".." is resolved too
    _as_missing(str(folders[0] / ".." / "private" / "planted.safetensors"), policy, str(folders[0] / "absent"))


def test_a_json_beside_the_weights_that_points_outside_is_not_read(folders, policy, tiny_config):
    path = _planted(folders[0], tiny_config)
    secret = folders[1] / "secret.json"
    secret.write_text(path.with_suffix(".json").read_text())
    path.with_suffix(".json").unlink()
    path.with_suffix(".json").symlink_to(secret)
    assert access.companion(path.with_suffix(".json"), policy) is None
    with pytest.raises(zoo.ModelLoadError):  # without its config the tiny ViT is not a timm one
        zoo.load(str(path), device="cpu", policy=policy)


def test_a_fifo_is_refused_without_being_opened(folders, policy):
    fifo = folders[0] / "model.safetensors"
    os.mkfifo(fifo)
    outcome: list[BaseException] = []
    worker = threading.Thread(target=lambda: outcome.append(_refusal(str(fifo), policy)), daemon=True)
    worker.start()
    worker.join(10)  # opening a FIFO with no writer blocks for good
    assert not worker.is_alive(), "zoo.load blocked on a FIFO"
    assert outcome[0].key == "model.special"
    assert "not a regular file" in str(outcome[0])
    # and outside the folder, the same answer as a missing name
    other = folders[1] / "pipe.pt"
    os.mkfifo(other)
    _as_missing(str(other), policy, str(folders[1] / "absent.pt"))


def test_a_fifo_blocks_nothing_even_without_a_policy(tmp_path):
    fifo = tmp_path / "m.pt"
    os.mkfifo(fifo)
    with pytest.raises(zoo.ModelLoadError, match="not a regular file"):
        zoo.read_weights(fifo)


@pytest.mark.parametrize("name", ["/proc/self/environ", "/proc/self/cmdline", "/dev/zero", "/sys/kernel/notes"])
def test_the_kernels_files_are_never_models(name, folders, policy):
    assert access.decide(name, policy, zoo.registry_files()).kind == "unknown"
    everything = access.Policy(model_dirs=(Path("/"), Path("/proc"), Path("/dev")))  # even a careless server's
    assert access.decide(name, everything, zoo.registry_files()).kind == "unknown"
    _as_missing(name, policy, str(folders[1] / "absent"))


def test_a_password_file_outside_gets_the_missing_names_sentence(folders, policy):
    shadow = folders[1] / "shadow"
    shadow.write_text("root:$6$salt$hash:19000:0:99999:7:::\n")
    shadow.chmod(0o600)
    _as_missing(str(shadow), policy, str(folders[1] / "gshadow"))
    _as_missing("/etc/shadow", policy, "/etc/no-such-file")


def test_a_folder_outside_and_a_folder_inside_holding_a_fifo(folders, policy):
    _as_missing(str(folders[1]), policy, str(folders[1] / "absent"))
    hf = folders[0] / "hf-model"
    hf.mkdir()
    (hf / "config.json").write_text("{}")
    os.mkfifo(hf / "model.safetensors")
    assert access.decide(str(hf), policy, zoo.registry_files()).kind == "special"


def test_a_file_over_the_size_limit_is_refused_unread(folders):
    big = folders[0] / "big.safetensors"
    with open(big, "wb") as file:
        file.truncate(3 * 2**20)  # sparse: 3 MB that cost nothing
    small = access.Policy(model_dirs=(folders[0].resolve(),), max_model_mb=2)
    assert _refusal(str(big), small).key == "model.file_too_large"


def test_the_apps_own_files_load_by_registry_name_only(policy, folders, tmp_path):
    """Typed as a path (absolute, relative to the app's folder, through /proc/self/cwd, or through
    a symlink in a model folder), a shipped model's file gets the missing name's sentence: the
    answer never tells where the app is installed."""
    missing = str(folders[0] / "no-such.safetensors")
    shipped = [spec.path for spec in zoo.REGISTRY.values() if spec.path is not None]
    assert shipped
    for path in shipped:
        link = folders[0] / f"link-{path.name}"
        link.symlink_to(path)
        relative = os.path.relpath(path, Path.cwd())
        for typed in (str(path), relative, f"/proc/self/cwd/{relative}", str(link), link.name):
            assert access.decide(typed, policy, zoo.registry_files()).kind == "unknown", typed
            assert access.decide(typed, access.Policy(), zoo.registry_files()).kind == "unknown", typed
            _as_missing(typed, policy, missing)
    for name, spec in zoo.REGISTRY.items():
        if spec.path is not None:
            assert access.decide(name, policy, zoo.registry_files()) == ("registry", name)


def test_a_relative_name_is_looked_for_in_the_model_folders_alone(folders, policy, monkeypatch):
    """``mine.safetensors`` means the model folder's file, not one in the server's working folder."""
    model = VisionTransformer(ViTConfig(image_size=32, patch_size=8, num_classes=3, embed_dim=32, depth=1, num_heads=2))
    zoo.save(model, folders[1] / "mine.safetensors")  # the private folder
    monkeypatch.chdir(folders[1])
    assert access.decide("mine.safetensors", policy, zoo.registry_files()).kind == "unknown"
    zoo.save(model, folders[0] / "mine.safetensors")
    found = access.decide("mine.safetensors", policy, zoo.registry_files())
    assert found == ("file", (folders[0] / "mine.safetensors").resolve())
    (folders[0] / "notes").mkdir()  # a folder without a config.json is no model: not offered
    zoo.save(model, folders[0] / "notes" / "mine.safetensors")
    monkeypatch.chdir(folders[0] / "notes")  # the working folder is no folder of names, even inside
    assert access.decide("mine.safetensors", policy, zoo.registry_files()) == found
    (folders[0] / "hf-model").mkdir()
    (folders[0] / "hf-model" / "config.json").write_text("{}")
    assert access.offered(policy) == ["hf-model", "mine.safetensors"]
    refused = _refusal("other.safetensors", policy)
    assert "mine.safetensors" in refused.sentence("en") and str(folders[0]) not in refused.sentence("en")


def test_a_text_file_is_not_a_checkpoint_and_not_code(folders, policy):
    for text in ("These are my notes for Monday.\n", "cos(x)\n", "just text"):
        path = folders[0] / "notes.pt"
        path.write_text(text)
        err = _refusal(str(path), policy)
        assert err.key == "model.not_checkpoint", text
        assert "could run code" not in str(err)
    (folders[0] / "empty.pt").write_bytes(b"")
    assert _refusal(str(folders[0] / "empty.pt"), policy).key == "model.empty"


# ---- hub names ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name", ["timm:resnet50", "hf:doesnot/exist", "timm:vit_base_patch16_224.augreg2_in21k_ft_in1k"]
)
def test_hub_names_are_refused_where_the_server_does_not_download(name, monkeypatch):
    monkeypatch.setattr(access, "hub_reachable", lambda *a, **k: pytest.fail("no download may be tried"))
    assert _refusal(name, access.Policy(allow_hub=False)).key == "model.hub_off"


@pytest.mark.parametrize("name", ["hf:/etc", "hf:../../etc/x", "timm:local-dir:/etc", "timm:hf-hub:a/b", "hf:a"])
def test_hub_names_that_are_paths_in_disguise_are_unknown(name):
    assert access.decide(name, access.Policy(allow_hub=True), zoo.registry_files()).kind == "unknown"


def _hanging_lookup(*args, **kwargs):
    time.sleep(30)  # a resolver with no network that never answers
    raise socket.gaierror("no answer")


@pytest.fixture
def black_hole():
    """A local address that accepts connections and never answers (as a firewall or a proxy
    with no way out may)."""
    server = socket.create_server(("127.0.0.1", 0))
    yield server.getsockname()[:2]
    server.close()


@pytest.mark.parametrize("name", ["timm:deit_tiny_patch16_224", "hf:google/vit-base-patch16-224", "hf:doesnot/exist"])
@pytest.mark.parametrize("network", ["silent", "refused", "hanging name lookup"])
def test_offline_a_hub_name_fails_in_under_5_s_with_a_sentence(name, network, monkeypatch, black_hole):
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)  # as a server started without it
    # the download itself is never tried: without the probe it would wait out the libraries' timeouts
    monkeypatch.setattr(access, "one_download", lambda *a, **k: pytest.fail("no download may be tried"))
    if network == "silent":
        monkeypatch.setattr(access, "HUB_HOST", black_hole)
    elif network == "refused":
        closed = socket.create_server(("127.0.0.1", 0))
        monkeypatch.setattr(access, "HUB_HOST", closed.getsockname()[:2])
        closed.close()
    else:
        monkeypatch.setattr(access, "HUB_HOST", ("hub.invalid", 443))
        monkeypatch.setattr(socket, "getaddrinfo", _hanging_lookup)
    started = time.perf_counter()
    err = _refusal(name, access.Policy(allow_hub=True))
    assert time.perf_counter() - started < 5
    assert err.key == "model.offline" and "no network" in str(err) and zoo.SHIPPED_CNN in str(err)


def test_a_hub_model_larger_than_the_server_allows_is_refused_before_downloading(monkeypatch):
    monkeypatch.setattr(access, "hub_reachable", lambda *a, **k: pytest.fail("no download may be tried"))
    err = _refusal("timm:vit_large_patch16_224", access.Policy(allow_hub=True, max_model_mb=400))
    assert err.key == "model.hub_too_large" and "1161 MB" in str(err)


def test_one_download_at_a_time_and_a_time_limit():
    release = threading.Event()
    first = threading.Thread(target=lambda: access.one_download(release.wait, limit_s=30), daemon=True)
    first.start()
    time.sleep(0.2)
    with pytest.raises(access.Busy):
        access.one_download(lambda: 1, limit_s=5, wait_s=0.2)
    release.set()
    first.join(5)
    assert access.one_download(lambda: 2, limit_s=5) == 2
    started = time.perf_counter()
    with pytest.raises(access.TooSlow):
        access.one_download(lambda: time.sleep(1.5), limit_s=0.3)
    assert time.perf_counter() - started < 1
    with pytest.raises(access.Busy):  # the slow one still holds the slot
        access.one_download(lambda: 3, limit_s=5, wait_s=0.1)
    time.sleep(1.5)
    assert access.one_download(lambda: 4, limit_s=5) == 4


# ---- uploads ------------------------------------------------------------------------------------


def _upload(tiny_config) -> tuple[VisionTransformer, dict[str, bytes]]:
    torch.manual_seed(3)
    model = VisionTransformer(tiny_config).eval()
    weights = save_bytes({k: v.contiguous() for k, v in model.state_dict().items()})
    meta = ModelCard(extra={"note": "mine"}).to_dict() | {"config": tiny_config.to_dict()}
    return model, {"mine.safetensors": weights, "mine.json": json.dumps(meta).encode()}


def test_an_uploaded_safetensors_loads_from_memory(tiny_config, monkeypatch):
    model, files = _upload(tiny_config)
    monkeypatch.setattr(zoo, "load_file", lambda *a, **k: pytest.fail("an upload is never read from disk"))
    name, (loaded, spec) = zoo.load_upload(files, access.Policy(), device="cpu")
    assert name.startswith(zoo.UPLOAD) and name.endswith(":mine.safetensors") and spec.name == name
    assert spec.config == tiny_config and spec.card.extra == {"note": "mine"}
    for key, value in model.state_dict().items():
        assert torch.equal(value, loaded.state_dict()[key])


def test_bad_uploads_get_a_sentence(tiny_config):
    _, files = _upload(tiny_config)
    cases = {
        "model.upload_files": {"notes.txt": b"hello"},
        "model.upload_too_large": {"mine.safetensors": files["mine.safetensors"]},
        "model.bad_safetensors": {"mine.safetensors": b"\x00" * 64},
        "model.bad_json": {**files, "mine.json": b"{not json"},
    }
    for key, upload in cases.items():
        with pytest.raises(zoo.ModelLoadError) as err:
            zoo.load_upload(upload, access.Policy(max_upload_mb=0 if key == "model.upload_too_large" else 50))
        assert err.value.key == key and not CLASS_NAME.search(str(err.value))
    with pytest.raises(zoo.ModelLoadError) as err:
        zoo.load_upload({"a.safetensors": files["mine.safetensors"], "b.safetensors": b""}, access.Policy())
    assert err.value.key == "model.upload_files"
