"""Damaged arrays, archives and files, a full disk and a killed writer as one-line errors, each
a row of docs/bad_inputs.md: eval-retrieval's dtypes, empty arrays, --chunk 0 and pickled
arrays; feature widths that disagree (refused before training, so no checkpoint.pt is left); a
zip with a corrupt member; a full disk; the temporary directory of a killed demo-world;
Snakemake's own messages for a broken --configfile (pinned: Snakemake reads it before the
Snakefile runs)."""

from __future__ import annotations

import errno
import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest
from helpers.features import write_array
from helpers.one_line import BIN, REPO, Case, check

from mlmm.cli import main
from mlmm.errors import InputError


def _eval(images: Path, captions: Path, out: Path, per_image: int, *extra: str) -> list[str]:
    return ["eval-retrieval", "--images", str(images), "--captions", str(captions),
            "--per-image", str(per_image), "--out", str(out), *extra]  # fmt: skip


def _pair(tmp_path: Path, image_dtype=np.float32, caption_dtype=np.float32):
    rng = np.random.default_rng(0)
    images, captions = tmp_path / "i.npy", tmp_path / "c.npy"
    np.save(images, rng.normal(size=(4, 3)).astype(image_dtype))
    np.save(captions, rng.normal(size=(8, 3)).astype(caption_dtype))
    return images, captions


# ------------------------------------------------------------------------------ eval-retrieval


def test_eval_retrieval_float64_beside_float32_is_compared_in_float64(tmp_path, capsys):
    """A documented normalisation, not a refusal: both arrays in the wider type."""
    images, captions = _pair(tmp_path, np.float32, np.float64)
    assert main(_eval(images, captions, tmp_path / "mixed.json", 2)) == 0
    np.save(images, np.load(images).astype(np.float64))
    assert main(_eval(images, captions, tmp_path / "wide.json", 2)) == 0
    mixed, wide = (json.loads((tmp_path / n).read_text()) for n in ("mixed.json", "wide.json"))
    assert mixed["i2t"] == wide["i2t"] and mixed["t2i"] == wide["t2i"]


def test_eval_retrieval_empty_arrays(tmp_path, capsys):
    images, captions = tmp_path / "i.npy", tmp_path / "c.npy"
    np.save(images, np.zeros((0, 3), np.float32))
    np.save(captions, np.zeros((0, 3), np.float32))
    out = tmp_path / "o.json"
    says = ["i.npy", "expected a 2-d array with at least one row", "found shape (0, 3)"]
    check(Case(_eval(images, captions, out, 2), says, [out]), capsys)


def test_eval_retrieval_chunk_zero(tmp_path, capsys):
    images, captions = _pair(tmp_path)
    out = tmp_path / "o.json"
    says = ["--chunk", "--chunk: expected a number >= 1, found 0", "found 0"]
    check(Case(_eval(images, captions, out, 2, "--chunk", "0"), says, [out]), capsys)


def test_eval_retrieval_pickled_array(tmp_path, capsys):
    images, captions = _pair(tmp_path)
    np.save(images, np.array([{"row": k} for k in range(4)], dtype=object), allow_pickle=True)
    out = tmp_path / "o.json"
    says = ["i.npy", "found a pickled array of Python objects (not loaded: allow_pickle=False)"]
    check(Case(_eval(images, captions, out, 2), says, [out]), capsys)


# ------------------------------------------------------------------------------ train-retrieval


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    from helpers.retrieval import make_world

    return make_world(tmp_path_factory.mktemp("toy"))


def _train(world, tmp_path: Path, features: Path) -> tuple[list[str], Path]:
    import yaml
    from helpers.retrieval import section, trainer_argv

    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump({"retrieval": section(four={"epochs": 1})}))
    paths = type(world)(world.data_root, features)
    return trainer_argv(config, tmp_path / "run", paths)[3:], tmp_path / "run"


@pytest.mark.parametrize("split", ["val", "test_2016_flickr"])
def test_train_retrieval_features_of_another_width(split, world, tmp_path, capsys):
    """The test split is read after training: its width is checked before, so a wrong one
    leaves no checkpoint.pt (nor any other output) behind."""
    features = tmp_path / "features"
    shutil.copytree(world.features_root, features)
    array = features / "toy" / f"{split}.npy"
    names = array.with_suffix(".txt").read_text().splitlines()
    write_array(array, np.load(array)[:, :20], names)  # written so by its maker
    argv, out = _train(world, tmp_path, features)
    says = [f"{split}.npy", "expected 24 columns, as the training features", "found 20 columns"]
    check(Case(argv, says, [out / "checkpoint.pt", out / "metrics.json", out / "model.pt"]),
          capsys)  # fmt: skip


def test_train_retrieval_test_array_of_another_split_is_refused_before_training(
    world, tmp_path, capsys
):
    """The val array copied over the test array with its sidecar and list copy (a copy that
    keeps the record): refused before the first step, not after the training."""
    features = tmp_path / "features"
    shutil.copytree(world.features_root, features)
    for suffix in (".npy", ".json"):
        shutil.copyfile(features / f"toy/val{suffix}", features / f"toy/test_2016_flickr{suffix}")
    argv, out = _train(world, tmp_path, features)
    says = ["test_2016_flickr.npy", "made from another image list"]
    check(Case(argv, says, [out / "checkpoint.pt", out / "metrics.json"]), capsys)


def test_train_retrieval_pickled_features(world, tmp_path, capsys):
    features = tmp_path / "features"
    shutil.copytree(world.features_root, features)
    np.save(features / "toy/train.npy", np.array([None] * 300, dtype=object), allow_pickle=True)
    argv, out = _train(world, tmp_path, features)
    says = ["train.npy", "a pickled array of Python objects (not loaded: allow_pickle=False)"]
    check(Case(argv, says, [out / "checkpoint.pt"]), capsys)


# ------------------------------------------------------------------------------ archives


def _corrupt_member_zip(path: Path, member: str, data: bytes) -> None:
    """A zip whose central directory is intact but whose (deflated) member data is damaged:
    zlib, not zipfile, notices it (a bare zlib.error was a traceback)."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr(member, data)
    raw = bytearray(path.read_bytes())
    start = 30 + len(member.encode())  # the local header, then the compressed data
    for i in range(start + 5, start + 13):
        raw[i] ^= 0xFF
    path.write_bytes(bytes(raw))


def test_ted_fetch_zip_with_a_corrupt_member(tmp_path, capsys):
    archive = tmp_path / "ted-cldc.zip"
    _corrupt_member_zip(archive, "ted-cldc/en-fr/train/x.ted", b"talk words " * 4000)
    out = tmp_path / "out"
    argv = ["ted-fetch", "--source", "url", "--url", archive.as_uri(), "--out-dir", str(out),
            "--languages", "fr"]  # fmt: skip
    says = ["ted-cldc.zip", "expected a complete .zip or .tar(.gz) archive", "found"]
    check(Case(argv, says, [out / "index.json", out / "unpacked", out / "unpacked.part"]), capsys)


def test_karpathy_zip_with_a_corrupt_member(tmp_path):
    from mlmm.data.coco import _load_json

    archive = tmp_path / "caption_datasets.zip"
    _corrupt_member_zip(archive, "dataset_coco.json", b'{"images": []}' + b" " * 50000)
    with pytest.raises(InputError, match=r"caption_datasets.zip: expected a JSON document"):
        _load_json(archive)


# ------------------------------------------------------------------------------ disk full


def test_disk_full_names_the_file_being_written(tmp_path, capsys, monkeypatch):
    """ENOSPC comes from the write itself, with no file name: the one line names the target,
    and neither it nor the temporary file is left."""
    images, captions = _pair(tmp_path)
    out = tmp_path / "o.json"
    real_write_text = Path.write_text

    def full_disk(self, *args, **kwargs):
        if self.name.startswith(".o.json."):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real_write_text(self, *args, **kwargs)

    monkeypatch.setattr(Path, "write_text", full_disk)
    says = [str(out), "expected free space on its disk to write it", "the disk full (ENOSPC)"]
    check(Case(_eval(images, captions, out, 2), says, [out]), capsys)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.npy", "i.npy"]


# ------------------------------------------------------------------------------ demo-world


def test_demo_world_killed_leaves_no_temporary_directory_for_good(tmp_path, capsys):
    """A SIGKILLed demo-world cannot clean up; the next run (of anything writing beside the
    same output) removes what a dead process of this host left, and nothing of a live one."""
    script = ("import os, signal, mlmm.demo.world as w\n"
              "def die(root, seed, images):\n"
              "    (root / 'half.bin').write_bytes(b'x' * 100000)\n"
              "    os.kill(os.getpid(), signal.SIGKILL)\n"
              "w._write_world = die\n"
              f"w.generate_world({str(tmp_path / 'w')!r}, seed=1, images=30)\n")  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    killed = subprocess.run([sys.executable, "-c", script], env=env, check=False)
    assert killed.returncode == -9
    left = [p for p in tmp_path.iterdir() if p.name.startswith(".w.")]
    assert len(left) == 1 and (left[0] / "half.bin").is_file()  # what the kill leaves

    from mlmm.io import temp_dir_beside

    live = temp_dir_beside(tmp_path / "w")  # this process's: alive, so kept
    assert main(["demo-world", str(tmp_path / "w"), "--images", "30"]) == 0
    assert [p for p in tmp_path.iterdir() if p.name.startswith(".w.")] == [live]
    assert (tmp_path / "w/MANIFEST.sha256").is_file()


# ------------------------------------------------------------------------------ --configfile

# Snakemake reads every --configfile while parsing its command line, before the Snakefile (and
# so mlmm.config's one-line checks) runs: what it prints is Snakemake's. Pinned here so that
# docs/bad_inputs.md stays true (and an upgrade that names the file is noticed).
CONFIGFILE_DAMAGE = {
    "missing": (None, "FileNotFoundError: [Errno 2] No such file or directory: '{path}'"),
    "non-UTF-8": (b"retrieval: \xff\n", "UnicodeDecodeError: 'utf-8' codec can't decode byte 0xff"),
    "malformed YAML": (b"retrieval:\n  defaults: [1, 2\n",
                       "Config file is not valid JSON or YAML."),
}  # fmt: skip


@pytest.mark.parametrize("damage", list(CONFIGFILE_DAMAGE))
def test_snakemake_configfile_errors_are_snakemakes(damage, tmp_path):
    content, says = CONFIGFILE_DAMAGE[damage]
    path = tmp_path / "my.yaml"
    if content is not None:
        path.write_bytes(content)
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}"}
    result = subprocess.run(
        [str(BIN / "snakemake"), "-n", "-s", str(REPO / "Snakefile"), "-d", str(tmp_path / "w"),
         "--configfile", str(path)],
        capture_output=True, text=True, env=env, check=False,
    )  # fmt: skip
    assert result.returncode != 0
    printed = result.stdout + result.stderr  # Snakemake 9 prints its errors on stdout
    assert says.format(path=path) in printed, printed[-2000:]
    assert not (tmp_path / "w/results").exists()
