"""Feature extraction: row order, resume, bad images, real weights (espresso), CLI, the device
decoder; GPU-only tests (skipped without CUDA) compare the GPU paths with the CPU's numbers.

Tests that compare with a CPU reference run on the CPU (``device="cpu"`` in ``run``), so they
pass the same with a GPU visible."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest
import torch
from helpers.features import die_after_first, make_images, run
from PIL import Image

from mlmm import io
from mlmm.errors import InputError
from mlmm.features import BACKBONES, FeatureNet, build_trunk, extraction, make_transform
from mlmm.features.decoding import FileBytes, device_batch

needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")


@pytest.fixture(scope="module")
def lite0():
    trunk, _ = build_trunk(BACKBONES["efficientnet_lite0"], "DEFAULT")
    return trunk.eval()


def reference(model, backbone: str, path: Path) -> np.ndarray:
    """The plain way: one image, PIL -> transform -> model."""
    with Image.open(path) as image:
        x = make_transform(BACKBONES[backbone])(image.convert("RGB"))
    with torch.inference_mode():
        return FeatureNet(model)(x[None])[0].numpy()


def test_rows_follow_the_split_list(tmp_path, lite0):
    order = make_images(tmp_path, 7)
    sidecar = run(tmp_path, batch_size=2, shard_size=3, workers=1)
    features = np.load(tmp_path / "out/val.npy")
    assert features.shape == (7, 1280) and features.dtype == np.float32
    for row, name in enumerate(order):
        expected = reference(lite0, "efficientnet_lite0", tmp_path / "images" / name)
        np.testing.assert_allclose(features[row], expected, rtol=1e-4, atol=1e-4)
    # The colours are distinct, so the rows are too: a permuted row would not match above.
    assert np.linalg.matrix_rank(features) == 7
    assert (tmp_path / "out/val.txt").read_text(encoding="utf-8").split() == order
    on_disk = json.loads((tmp_path / "out/val.json").read_text(encoding="utf-8"))
    assert on_disk == json.loads(json.dumps(sidecar))
    assert (on_disk["backbone"], on_disk["dim"], on_disk["n"]) == ("efficientnet_lite0", 1280, 7)
    assert on_disk["skipped"] == [] and "provenance" in on_disk and "extract" in on_disk["timings"]
    assert not (tmp_path / "out/val.work").exists()


def test_float16_output(tmp_path):
    make_images(tmp_path, 3)
    run(tmp_path, dtype="float32")
    single = np.load(tmp_path / "out/val.npy")
    run(tmp_path, dtype="float16")
    half = np.load(tmp_path / "out/val.npy")
    assert half.dtype == np.float16
    np.testing.assert_allclose(half, single, rtol=1e-2, atol=1e-3)
    assert json.loads((tmp_path / "out/val.json").read_text(encoding="utf-8"))["dtype"] == "float16"


def test_resume_after_a_kill_redoes_only_unfinished_shards(tmp_path, monkeypatch):
    make_images(tmp_path, 7)
    saved = []
    real_save = extraction._save_shard

    def save_then_die(work, k, *rest):
        if saved:
            raise KeyboardInterrupt("killed after the first shard")
        saved.append(k)
        real_save(work, k, *rest)

    monkeypatch.setattr(extraction, "_save_shard", save_then_die)
    with pytest.raises(KeyboardInterrupt):
        run(tmp_path, batch_size=2, shard_size=3)
    work = tmp_path / "out/val.work"
    assert sorted(p.name for p in work.glob("shard-*.npy")) == ["shard-00000.npy"]
    assert not (tmp_path / "out/val.npy").exists()
    first_shard = np.load(work / "shard-00000.npy")

    saved.clear()
    calls = []
    monkeypatch.setattr(extraction, "_save_shard", lambda *a: calls.append(a[1]) or real_save(*a))
    sidecar = run(tmp_path, batch_size=2, shard_size=3)
    assert calls == [1, 2]  # shard 0 was not recomputed
    assert sidecar["resumed_rows"] == 3 and sidecar["extracted_rows"] == 4
    resumed = np.load(tmp_path / "out/val.npy")
    np.testing.assert_array_equal(resumed[:3], first_shard)
    assert not work.exists()
    # the resumed shard's bytes are in the digest taken as the array was written
    assert sidecar["sha256"] == hashlib.sha256((tmp_path / "out/val.npy").read_bytes()).hexdigest()

    (tmp_path / "out/val.npy").unlink()
    fresh = run(tmp_path, batch_size=2, shard_size=3)
    assert fresh["resumed_rows"] == 0
    np.testing.assert_allclose(np.load(tmp_path / "out/val.npy"), resumed, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("decode", ["pil", "torchvision"])
def test_shard_fingerprints_come_from_the_loaders_one_read_of_each_image(
    decode, tmp_path, monkeypatch
):
    """Each finished shard's resume fingerprint is the digest of the bytes the loader workers
    read for its features, equal to what a resume computes from the files (a missing image
    included): the main process does not read every image a second time (on a GPU that read
    would be a large share of the stage)."""
    from mlmm.fingerprint import files_digest

    names = make_images(tmp_path, 5)
    (tmp_path / "images" / names[1]).unlink()
    recorded = {}
    real_save = extraction._save_shard

    def save(work, k, features, bad, images):
        recorded[k] = images
        real_save(work, k, features, bad, images)

    monkeypatch.setattr(extraction, "_save_shard", save)
    monkeypatch.setattr(extraction, "files_digest", lambda *a, **k: pytest.fail("read again"))
    run(tmp_path, batch_size=2, shard_size=2, on_bad_image="skip", decode=decode)
    paths = [tmp_path / "images" / name for name in names]
    assert recorded == {k: files_digest(paths[2 * k : 2 * k + 2]) for k in range(3)}


def test_the_loop_never_waits_on_a_shard_or_the_arrays_digest(tmp_path, monkeypatch):
    """Shards are saved, and the final array written and hashed as it is written, on the
    writer's thread: the main process, which feeds the model, reads no .npy for a digest (at
    the end either), and the sidecar names the sha256 of the array's bytes."""
    make_images(tmp_path, 7)
    real_hash, hashed = io._hash, []

    def hash_where(path, stat):
        hashed.append((threading.current_thread() is threading.main_thread(), path.name))
        return real_hash(path, stat)

    monkeypatch.setattr(io, "_hash", hash_where)
    sidecar = run(tmp_path, batch_size=2, shard_size=3)
    on_main = [name for main, name in hashed if main and ".npy" in name]
    assert on_main == [] and any("shard" in name for _, name in hashed)
    assert sidecar["sha256"] == hashlib.sha256((tmp_path / "out/val.npy").read_bytes()).hexdigest()


def test_an_error_of_the_writers_thread_names_its_file_and_keeps_finished_shards(
    tmp_path, monkeypatch
):
    make_images(tmp_path, 7)
    real_write, written = extraction.write_npy, []

    def full_disk(path, array):
        if written:
            raise InputError(path, "free space on its disk to write it", "the disk full")
        written.append(path)
        real_write(path, array)

    monkeypatch.setattr(extraction, "write_npy", full_disk)
    with pytest.raises(InputError, match="shard-00001.npy.*the disk full"):
        run(tmp_path, batch_size=2, shard_size=3)
    work = tmp_path / "out/val.work"
    assert sorted(p.name for p in work.glob("shard-*.npy")) == ["shard-00000.npy"]
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["val.work"]
    monkeypatch.undo()
    assert run(tmp_path, batch_size=2, shard_size=3)["resumed_rows"] == 3


def test_work_dir_of_other_settings_is_discarded(tmp_path, monkeypatch):
    make_images(tmp_path, 4)
    monkeypatch.setattr(extraction, "_save_shard", die_after_first(extraction._save_shard))
    with pytest.raises(KeyboardInterrupt):
        run(tmp_path, batch_size=2, shard_size=2)
    monkeypatch.undo()
    sidecar = run(tmp_path, batch_size=2, shard_size=2, dtype="float16")
    assert sidecar["resumed_rows"] == 0


def _break_images(tmp_path: Path, order: list[str]) -> tuple[list[str], str]:
    """Delete 11 images, overwrite one with text, truncate one JPEG in its data."""
    missing = order[:11]
    for name in missing:
        (tmp_path / "images" / name).unlink()
    (tmp_path / "images" / order[11]).write_text("not an image", encoding="utf-8")
    truncated = tmp_path / "images" / order[12]
    Image.effect_noise((256, 256), 60).convert("RGB").save(truncated, quality=95)
    truncated.write_bytes(truncated.read_bytes()[:2000])
    return missing + [order[11]], order[12]


def test_missing_and_unreadable_images_are_an_error_listing_ten_and_the_count(tmp_path):
    order = make_images(tmp_path, 15)
    bad, _ = _break_images(tmp_path, order)
    with pytest.raises(InputError) as caught:
        run(tmp_path)
    message = str(caught.value)
    assert "12 missing or unreadable" in message and "and 2 more" in message
    for name in bad[:10]:
        assert name in message
    for name in bad[10:]:
        assert name not in message
    assert not (tmp_path / "out/val.npy").exists()


def test_truncated_image_is_an_error_when_decoded(tmp_path):
    order = make_images(tmp_path, 3)
    truncated = tmp_path / "images" / order[1]
    Image.effect_noise((256, 256), 60).convert("RGB").save(truncated, quality=95)
    truncated.write_bytes(truncated.read_bytes()[:2000])
    with pytest.raises(InputError, match=f"1 missing or unreadable: {order[1]}"):
        run(tmp_path)


def test_skip_marks_rows_nan_and_reports_them(tmp_path, lite0):
    order = make_images(tmp_path, 15)
    bad, truncated = _break_images(tmp_path, order)
    sidecar = run(tmp_path, on_bad_image="skip", batch_size=4, shard_size=5)
    features = np.load(tmp_path / "out/val.npy")
    bad_rows = sorted(order.index(name) for name in [*bad, truncated])
    assert [s["row"] for s in sidecar["skipped"]] == bad_rows
    assert [s["name"] for s in sidecar["skipped"]] == [order[r] for r in bad_rows]
    assert np.isnan(features[bad_rows]).all()
    good = [r for r in range(15) if r not in bad_rows]
    assert np.isfinite(features[good]).all()
    np.testing.assert_allclose(
        features[good[0]],
        reference(lite0, "efficientnet_lite0", tmp_path / "images" / order[good[0]]),
        rtol=1e-4,
        atol=1e-4,
    )
    report = (tmp_path / "out/val.skipped.tsv").read_text(encoding="utf-8").splitlines()
    assert report[0] == "row\tname\treason"
    assert [line.split("\t")[:2] for line in report[1:]] == [[str(r), order[r]] for r in bad_rows]


def test_efficientnet_lite0_weights_see_an_espresso(tmp_path, lite0):
    skimage_data = pytest.importorskip("skimage.data")
    (tmp_path / "images").mkdir()
    Image.fromarray(skimage_data.coffee()).save(tmp_path / "images/coffee.png")
    (tmp_path / "list.txt").write_text("coffee.png\n", encoding="utf-8")
    run(tmp_path)
    features = torch.from_numpy(np.load(tmp_path / "out/val.npy"))
    with torch.inference_mode():
        probabilities = lite0._fc(features).softmax(dim=-1)[0]
    assert int(probabilities.argmax()) == 967  # espresso
    assert float(probabilities[967]) > 0.8


def test_ten_crop_features_are_the_mean_over_crops():
    class Linear(torch.nn.Module):
        def forward(self, x):
            return x.mean(dim=(2, 3))

    crops = torch.rand(2, 10, 3, 8, 8)
    got = FeatureNet(Linear())(crops)
    np.testing.assert_allclose(got, crops.mean(dim=(1, 3, 4)), rtol=1e-6)
    x = make_transform(BACKBONES["resnet152"])(Image.new("RGB", (300, 260), (10, 20, 30)))
    assert x.shape == (10, 3, 224, 224)


@pytest.mark.parametrize(
    ("backbone", "dim"),
    [("resnet50", 2048), ("vgg19", 4096), ("vgg19_bn", 4096), ("resnet152", 2048)],
)
def test_torchvision_backbone_shapes(tmp_path, backbone, dim):
    make_images(tmp_path, 1)
    sidecar = run(tmp_path, backbone=backbone, weights=None)
    features = np.load(tmp_path / "out/val.npy")
    assert features.shape == (1, dim) == (sidecar["n"], sidecar["dim"])
    assert (features >= 0).all()  # both are taken after a ReLU
    assert sidecar["weights"] == "random init"


def test_vgg19_bn_is_the_authors_vgg19_with_batch_norm_cut_at_fc7():
    """Calixto & Liu's code extracts vgg19_bn features; the paper names VGG19: both end at fc7's
    ReLU, and only vgg19_bn normalises its convolutions."""
    plain, _ = build_trunk(BACKBONES["vgg19"], None)
    with_bn, _ = build_trunk(BACKBONES["vgg19_bn"], None)
    for trunk in (plain, with_bn):
        kinds = [type(m).__name__ for m in trunk.classifier]
        assert kinds == ["Linear", "ReLU", "Dropout", "Linear", "ReLU"]
        assert trunk.classifier[3].out_features == 4096
    assert not any(isinstance(m, torch.nn.BatchNorm2d) for m in plain.modules())
    assert sum(isinstance(m, torch.nn.BatchNorm2d) for m in with_bn.modules()) == 16


def test_unknown_weights_name_is_an_input_error():
    with pytest.raises(InputError, match="weights"):
        build_trunk(BACKBONES["resnet50"], "NO_SUCH_WEIGHTS")


def test_cli_help_and_bad_input_exit_status(tmp_path):
    helped = subprocess.run(
        [sys.executable, "-m", "mlmm", "features", "--help"], capture_output=True, text=True
    )
    assert helped.returncode == 0
    for option in ("--backbone", "--images", "--split", "--out", "--device", "--batch-size",
                   "--dtype", "--workers", "--on-bad-image"):  # fmt: skip
        assert option in helped.stdout
    order = make_images(tmp_path, 2)
    (tmp_path / "images" / order[0]).unlink()
    failed = subprocess.run(
        [sys.executable, "-m", "mlmm", "features", "--backbone", "efficientnet_lite0",
         "--images", str(tmp_path / "images"), "--split", str(tmp_path / "list.txt"),
         "--out", str(tmp_path / "out/val.npy"), "--no-progress"],
        capture_output=True, text=True,
    )  # fmt: skip
    assert failed.returncode == 2
    assert f"1 missing or unreadable: {order[0]} (no such file)" in failed.stderr


def photo_like_jpegs(root: Path, count: int) -> list[str]:
    """Noisy JPEGs of different sizes and aspect ratios (resizing then matters)."""
    rng = np.random.default_rng(1)
    (root / "images").mkdir(parents=True, exist_ok=True)
    names = [f"p{i:02d}.jpg" for i in range(count)]
    for i, name in enumerate(names):
        size = (120 + 17 * i, 90 + 11 * (i % 3))
        smooth = Image.fromarray(rng.integers(0, 256, (6, 8, 3), dtype=np.uint8)).resize(size)
        smooth.save(root / "images" / name, quality=92)
    (root / "list.txt").write_text("\n".join(names) + "\n", encoding="utf-8")
    return names


def plain_loop(model, backbone: str, paths: list[Path], batch: int = 32) -> np.ndarray:
    """The plain batch-32 loop: PIL -> transform -> model, float32, one process."""
    transform, net, out = make_transform(BACKBONES[backbone]), FeatureNet(model), []
    with torch.inference_mode():
        for first in range(0, len(paths), batch):
            tensors = []
            for path in paths[first : first + batch]:
                with Image.open(path) as image:
                    tensors.append(transform(image.convert("RGB")))
            out.append(net(torch.stack(tensors)).numpy())
    return np.concatenate(out)


def test_float32_features_equal_the_plain_loop_with_a_worker_pool(tmp_path, lite0):
    names = photo_like_jpegs(tmp_path, 9)
    sidecar = run(tmp_path, batch_size=4, workers=2, shard_size=5)
    assert sidecar["provenance"]["config"]["workers_started"] == 2
    assert sidecar["precision"] == "float32" and sidecar["decode"] == "pil"
    expected = plain_loop(lite0, "efficientnet_lite0", [tmp_path / "images" / m for m in names])
    np.testing.assert_allclose(np.load(tmp_path / "out/val.npy"), expected, rtol=1e-5, atol=1e-5)


def test_no_pool_for_one_batch_and_no_more_workers_than_batches():
    assert extraction.pool_size(8, 64, 256) == 0
    assert extraction.pool_size(8, 257, 256) == 2
    assert extraction.pool_size(8, 29_000, 256) == 8
    assert extraction.pool_size(0, 29_000, 256) == 0


def test_torchvision_decoder_on_cpu_is_close_to_pil(tmp_path, lite0):
    names = photo_like_jpegs(tmp_path, 4)
    Image.open(tmp_path / "images" / names[3]).save(tmp_path / "images/p03.png")
    names[3] = "p03.png"  # not a JPEG: decoded by the worker
    (tmp_path / "list.txt").write_text("\n".join(names) + "\n", encoding="utf-8")
    run(tmp_path, batch_size=2)
    pil = np.load(tmp_path / "out/val.npy")
    (tmp_path / "out/val.npy").unlink()
    sidecar = run(tmp_path, batch_size=2, decode="torchvision")
    device = np.load(tmp_path / "out/val.npy")
    assert sidecar["decode"] == "torchvision"
    # JPEG decoders and resampling differ a little (libjpeg-turbo IDCT, torch's antialiasing)
    cosine = (pil * device).sum(1) / np.linalg.norm(pil, axis=1) / np.linalg.norm(device, axis=1)
    assert cosine.min() > 0.99, cosine  # row 3, the PNG, included
    assert np.abs(device - pil).max() > 1e-5  # it did take the other path


def test_torchvision_decoder_skips_a_truncated_jpeg_as_pil_does(tmp_path):
    order = make_images(tmp_path, 3)
    truncated = tmp_path / "images" / order[1]
    Image.effect_noise((256, 256), 60).convert("RGB").save(truncated, quality=95)
    truncated.write_bytes(truncated.read_bytes()[:2000])
    assert FileBytes([truncated], [0])[0][2]  # not a complete JPEG, and PIL cannot read it
    sidecar = run(tmp_path, decode="torchvision", on_bad_image="skip")
    assert [s["name"] for s in sidecar["skipped"]] == [order[1]]
    features = np.load(tmp_path / "out/val.npy")
    assert np.isnan(features[1]).all() and np.isfinite(features[[0, 2]]).all()


@needs_cuda
def test_gpu_float32_features_match_the_cpu(tmp_path):
    photo_like_jpegs(tmp_path, 6)
    run(tmp_path, batch_size=3)
    cpu = np.load(tmp_path / "out/val.npy")
    (tmp_path / "out/val.npy").unlink()
    run(tmp_path, batch_size=3, device="cuda")
    # TF32 keeps 10 mantissa bits: relative differences ~1e-3
    np.testing.assert_allclose(np.load(tmp_path / "out/val.npy"), cpu, rtol=1e-2, atol=1e-2)


@needs_cuda
def test_gpu_float16_features_are_close_to_float32(tmp_path):
    photo_like_jpegs(tmp_path, 6)
    run(tmp_path, batch_size=3, device="cuda")
    single = np.load(tmp_path / "out/val.npy")
    (tmp_path / "out/val.npy").unlink()
    sidecar = run(tmp_path, batch_size=3, device="cuda", precision="float16")
    assert sidecar["precision"] == "float16"
    np.testing.assert_allclose(np.load(tmp_path / "out/val.npy"), single, rtol=5e-2, atol=5e-2)


@needs_cuda
def test_gpu_jpeg_decoding_is_close_to_pil_on_the_cpu(tmp_path):
    names = photo_like_jpegs(tmp_path, 6)
    (tmp_path / "images" / names[2]).write_bytes(b"not an image")
    run(tmp_path, batch_size=3, on_bad_image="skip")
    cpu = np.load(tmp_path / "out/val.npy")
    (tmp_path / "out/val.npy").unlink()
    sidecar = run(tmp_path, batch_size=3, device="cuda", decode="torchvision", on_bad_image="skip")
    gpu = np.load(tmp_path / "out/val.npy")
    assert [s["row"] for s in sidecar["skipped"]] == [2] and np.isnan(gpu[2]).all()
    good = [0, 1, 3, 4, 5]
    cosine = (cpu[good] * gpu[good]).sum(1) / np.linalg.norm(cpu[good], axis=1) / np.linalg.norm(
        gpu[good], axis=1
    )
    assert cosine.min() > 0.99, cosine


@pytest.mark.parametrize("backbone", ["resnet152", "efficientnet_lite0"])
def test_device_preprocessing_matches_the_pil_transform(backbone):
    """Ten crops and bicubic resizing too; the only difference is the resampling filter."""
    spec = BACKBONES[backbone]
    image = Image.fromarray(np.random.default_rng(2).integers(0, 256, (6, 9, 3), np.uint8))
    image = image.resize((300, 200))
    pil = make_transform(spec)(image)
    batch, errors = device_batch(
        [torch.from_numpy(np.array(image)).permute(2, 0, 1).contiguous()], [""], spec,
        torch.device("cpu"),
    )
    assert errors == [""] and batch.shape == (1, *pil.shape)
    assert (batch[0] - pil).abs().mean() < 0.02
