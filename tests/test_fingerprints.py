"""Nothing stale is resumed: every resumable artefact records a fingerprint of
its inputs' contents and settings (mlmm.fingerprint); a rerun whose inputs changed discards it,
says so in one line, and ends as a fresh run ends."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest
from helpers.features import die_after_first, make_images, write_array
from helpers.features import run as extract_features
from helpers.retrieval import make_world, section

from mlmm.features import extraction
from mlmm.fingerprint import changed_parts, files_digest, stale, value_digest
from mlmm.local_data import tree_identity
from mlmm.retrieval.config import resolve_variant
from mlmm.retrieval.train import Run, train_variant

# ------------------------------------------------------------------------------ the module


def test_value_digest_is_canonical_and_content_sensitive():
    a = {"x": [1, 2.5, "s"], "y": np.arange(6, dtype=np.float32).reshape(2, 3), "z": {3, 1}}
    b = {"z": {1, 3}, "y": np.arange(6, dtype=np.float32).reshape(2, 3), "x": [1, 2.5, "s"]}
    assert value_digest(a) == value_digest(b)  # key and set order do not matter
    changed = np.arange(6, dtype=np.float32).reshape(2, 3)
    changed[1, 2] = np.nextafter(changed[1, 2], 10)  # one ulp in one value
    assert value_digest({**a, "y": changed}) != value_digest(a)
    # the same bytes under another dtype or shape are other contents
    assert value_digest(a["y"]) != value_digest(a["y"].reshape(3, 2))
    assert value_digest(a["y"]) != value_digest(a["y"].view(np.int32))
    assert value_digest([1, 2]) != value_digest([[1, 2]]) != value_digest(["1", "2"])


def test_files_digest_sees_a_file_replaced_under_the_same_name(tmp_path):
    paths = [tmp_path / "a.jpg", tmp_path / "b.jpg"]
    paths[0].write_bytes(b"first")
    paths[1].write_bytes(b"second")
    before = files_digest(paths, threads=2)
    assert files_digest(paths) == before
    paths[1].write_bytes(b"SECOND")  # same size, same name, other bytes
    assert files_digest(paths) != before
    paths[1].unlink()
    assert files_digest(paths) != before


def _images(root: Path) -> Path:
    (root / "sub").mkdir(parents=True)
    for name, data in (("a.jpg", b"first"), ("sub/b.jpg", b"second")):
        (root / name).write_bytes(data)
    return root


IMAGE_CHANGES = {
    "replaced under its name (other size)": lambda r: (r / "a.jpg").write_bytes(b"firstly"),
    "edited in place (same size)": lambda r: (r / "a.jpg").write_bytes(
        bytes(reversed((r / "a.jpg").read_bytes()))
    ),
    "added": lambda r: (r / "c.jpg").write_bytes(b"third"),
    "removed": lambda r: (r / "sub/b.jpg").unlink(),
    "renamed": lambda r: (r / "a.jpg").rename(r / "z.jpg"),
}


@pytest.mark.parametrize("change", list(IMAGE_CHANGES))
def test_tree_identity_of_an_image_directory_sees_every_change(change, tmp_path):
    """`extract_features` takes a user's image directory as a param (a dry run needs no
    images), with this identity as a second param, so that a changed image reruns it."""
    root = _images(tmp_path / "images")
    before = tree_identity(root)
    (root / ".DS_Store").write_bytes(b"x")  # hidden files are no images
    assert tree_identity(root) == before
    IMAGE_CHANGES[change](root)
    assert tree_identity(root) != before


@pytest.mark.parametrize("cached", [False, True])
def test_tree_identity_survives_a_copy_that_changes_every_mtime(cached, tmp_path):
    """`cp -r` or rsync without -t: the same images, new modification times, no rerun; an
    edit that keeps size and mtime is still seen once the cache is gone (content, not stat)."""
    root = _images(tmp_path / "images")
    cache = tmp_path / "cache.json" if cached else None
    before = tree_identity(root, cache)
    for path in root.rglob("*.jpg"):
        os.utime(path, ns=(0, path.stat().st_mtime_ns + 10**9))
    assert tree_identity(root, cache) == before
    if cached:
        assert json.loads(cache.read_text())  # digests kept under size and mtime
        stamp = (root / "a.jpg").stat()
        (root / "a.jpg").write_bytes(bytes(reversed((root / "a.jpg").read_bytes())))
        os.utime(root / "a.jpg", ns=(stamp.st_atime_ns, stamp.st_mtime_ns))
        assert tree_identity(root, cache) == before  # trusted: same size, same mtime
        cache.unlink()
        assert tree_identity(root, cache) != before


def test_tree_identity_of_a_missing_directory_plans_without_images(tmp_path):
    assert tree_identity(tmp_path / "nowhere") == "absent"


def test_snakemake_reruns_a_job_whose_image_identity_param_changed(tmp_path):
    """The mechanism extract_features relies on: a changed param is a rerun trigger."""
    import subprocess
    import sys

    root = _images(tmp_path / "images")
    (tmp_path / "Snakefile").write_text(
        "from mlmm.local_data import tree_identity\n"
        "rule extract:\n"
        "    output: 'features.txt'\n"
        f"    params: images_identity=tree_identity({str(root)!r})\n"
        "    shell: 'echo {params.images_identity} > {output}'\n"
    )
    snakemake = [sys.executable, "-m", "snakemake", "-c1", "-d", str(tmp_path), "-s",
                 str(tmp_path / "Snakefile")]  # fmt: skip

    def planned() -> str:
        result = subprocess.run([*snakemake, "-n"], capture_output=True, text=True, check=True)
        return result.stdout + result.stderr

    subprocess.run(snakemake, capture_output=True, text=True, check=True)
    assert "Nothing to be done" in planned()
    (root / "a.jpg").write_bytes(b"another image")
    assert "Params have changed since last execution" in planned()


def test_stale_names_the_changed_inputs_in_one_line(capsys):
    current = {"config": "1", "train features": "2", "captions": "3"}
    assert not stale("checkpoint.pt", dict(current), current)
    assert capsys.readouterr().err == ""
    assert stale("checkpoint.pt", {**current, "train features": "0"}, current)
    assert capsys.readouterr().err == (
        "checkpoint.pt: inputs changed since it was written (train features), starting over\n"
    )
    assert stale("checkpoint.pt", None, current)  # written before fingerprints existed
    assert "no fingerprint recorded" in capsys.readouterr().err
    assert changed_parts({"old": "1"}, {"new": "1"}) == ["new", "old"]


# ------------------------------------------------------------------------------ retrieval

VARIANT = {"epochs": 1, "checkpoint_every": 5, "early_stopping": {"every": 5, "patience": 20}}


def test_retrieval_checkpoint_of_other_features_is_not_resumed(tmp_path, capsys):
    """A run crashed after training (checkpoint.pt of its last step
    left); the user fixes the training features; the rerun must train afresh, not report the
    broken features' model."""
    world = make_world(tmp_path / "world")
    record = resolve_variant(section(mono=VARIANT), "mono")
    train = world.features_root / "toy/train.npy"
    good, names = np.load(train), train.with_suffix(".txt").read_text().splitlines()
    write_array(train, np.random.default_rng(1).permutation(good), names)  # rows scrambled
    Run(record, 1, world, tmp_path / "run").train(progress=False)  # then the crash
    assert (tmp_path / "run/checkpoint.pt").is_file()
    capsys.readouterr()

    write_array(train, good, names)  # the fix
    fixed = train_variant(record, 1, world, tmp_path / "run", progress=False, threads=1)
    err = capsys.readouterr().err
    assert (
        "checkpoint.pt: inputs changed since it was written (train features), starting over" in err
    )
    assert not fixed["timings"]["resumed"]
    fresh = train_variant(record, 1, world, tmp_path / "fresh", progress=False, threads=1)
    assert (
        fixed["test"] == fresh["test"]
        and fixed["history"][0]["loss"] == (fresh["history"][0]["loss"])
    )


def test_retrieval_checkpoint_of_the_same_inputs_is_resumed(tmp_path, capsys):
    world = make_world(tmp_path / "world")
    record = resolve_variant(section(mono=VARIANT), "mono")
    Run(record, 1, world, tmp_path / "run").train(progress=False)
    metrics = train_variant(record, 1, world, tmp_path / "run", progress=False, threads=1)
    assert metrics["timings"]["resumed"]
    assert "starting over" not in capsys.readouterr().err
    # another seed is another run: its checkpoint is not this one's
    Run(record, 1, world, tmp_path / "other").train(progress=False)
    other = train_variant(record, 2, world, tmp_path / "other", progress=False, threads=1)
    assert not other["timings"]["resumed"]
    assert "(config" in capsys.readouterr().err


def test_retrieval_checkpoint_of_other_code_is_not_resumed(tmp_path, capsys, monkeypatch):
    """A checkpoint records the code that wrote it (mlmm.provenance.code_version); a resume by
    other code (an upgrade, an edited source file) starts over and says so in one line."""
    from mlmm.retrieval import checkpoint

    world = make_world(tmp_path / "world")
    record = resolve_variant(section(mono=VARIANT), "mono")
    Run(record, 1, world, tmp_path / "run").train(progress=False)
    capsys.readouterr()
    monkeypatch.setattr(checkpoint, "code_version", lambda: "0.0.0+other")
    metrics = train_variant(record, 1, world, tmp_path / "run", progress=False, threads=1)
    assert not metrics["timings"]["resumed"]
    (line,) = [line for line in capsys.readouterr().err.splitlines() if "starting over" in line]
    assert line.startswith("checkpoint.pt: written by other code (") and "0.0.0+other" in line


def test_the_code_version_follows_the_package_source():
    from mlmm.provenance import code_version

    version = code_version()
    assert version == code_version() and version.startswith(__import__("mlmm").__version__ + "+")


def test_retrieval_checkpoint_of_other_captions_is_not_resumed(tmp_path, capsys):
    world = make_world(tmp_path / "world")
    record = resolve_variant(section(mono=VARIANT), "mono")
    Run(record, 1, world, tmp_path / "run").train(progress=False)
    for captions in (world.data_root / "data").glob("task*/tok/train.*"):  # rows reversed
        lines = captions.read_text(encoding="utf-8").splitlines()
        captions.write_text("\n".join(reversed(lines)) + "\n", encoding="utf-8")
    metrics = train_variant(record, 1, world, tmp_path / "run", progress=False, threads=1)
    assert not metrics["timings"]["resumed"]
    assert "inputs changed since it was written (captions" in capsys.readouterr().err


# ------------------------------------------------------------------------------ features


def test_feature_shards_of_replaced_images_are_extracted_again(tmp_path, monkeypatch, capsys):
    """Extraction killed after its first shard; an image of that shard is
    replaced under the same name; the rerun must not keep the old image's row."""
    order = make_images(tmp_path, 6)
    monkeypatch.setattr(extraction, "_save_shard", die_after_first(extraction._save_shard))
    with pytest.raises(KeyboardInterrupt):
        extract_features(tmp_path, batch_size=2, shard_size=3, weights=None)
    monkeypatch.undo()
    assert (tmp_path / "out/val.work/shard-00000.npy").is_file()
    first, last = tmp_path / "images" / order[0], tmp_path / "images" / order[-1]
    first.write_bytes(last.read_bytes())  # same name, other picture
    capsys.readouterr()

    sidecar = extract_features(tmp_path, batch_size=2, shard_size=3, weights=None)
    assert "val.work: inputs changed since it was written (images of shard 0)" in (
        capsys.readouterr().err
    )
    assert sidecar["resumed_rows"] == 0 and sidecar["extracted_rows"] == 6
    features = np.load(tmp_path / "out/val.npy")
    np.testing.assert_array_equal(features[0], features[-1])  # the new picture's row


def test_feature_shards_of_unchanged_images_are_resumed(tmp_path, monkeypatch, capsys):
    make_images(tmp_path, 6)
    monkeypatch.setattr(extraction, "_save_shard", die_after_first(extraction._save_shard))
    with pytest.raises(KeyboardInterrupt):
        extract_features(tmp_path, batch_size=2, shard_size=3, weights=None)
    monkeypatch.undo()
    sidecar = extract_features(tmp_path, batch_size=2, shard_size=3, weights=None)
    assert sidecar["resumed_rows"] == 3
    assert "starting over" not in capsys.readouterr().err
    sidecar = json.loads((tmp_path / "out/val.json").read_text(encoding="utf-8"))
    assert sidecar["n"] == 6


# ------------------------------------------------------------------------------ NMT, pivot
# These trainers keep no resumable state (a killed run starts over: tests/test_resume.py), so
# nothing of an earlier run may leak into a rerun on changed inputs either.


def _same_files(a: Path, b: Path, names: list[str]) -> None:
    import torch

    for name in names:
        x = torch.load(a / name, weights_only=False)
        y = torch.load(b / name, weights_only=False)
        state_x, state_y = x.get("state", x), y.get("state", y)
        assert state_x.keys() == state_y.keys(), name
        for key in state_x:
            if isinstance(state_x[key], torch.Tensor):
                assert torch.equal(state_x[key], state_y[key]), f"{name}: {key}"


def test_nmt_rerun_on_changed_data_equals_a_fresh_run(tmp_path):
    from helpers.nmt import nmt_record, toy_parallel_corpus

    from mlmm.cli import main

    def corpus(root: Path, seed: int) -> Path:
        root.mkdir()
        for split, n, offset in (("train", 40, 0), ("val", 6, 1)):
            src, tgt = toy_parallel_corpus(n, seed + offset)
            (root / f"{split}.lc.norm.tok.en").write_text("".join(" ".join(s) + "\n" for s in src))
            (root / f"{split}.lc.norm.tok.de").write_text("".join(" ".join(t) + "\n" for t in tgt))
        return root

    record = nmt_record(tmp_path / "record.json", {"embedding": 8, "hidden": 8, "attention": 8},
                        batch_size=8, max_epochs=2, patience=2)

    def train(data: Path, out: Path) -> None:
        argv = ["train-nmt", "--config", record, "--data", data, "--device", "cpu",
                "--out", out / "model.pt", "--history", out / "history.csv",
                "--metrics", out / "metrics.json"]  # fmt: skip
        assert main([str(a) for a in argv]) == 0

    old, new = corpus(tmp_path / "old", 0), corpus(tmp_path / "new", 10)
    train(old, tmp_path / "run")
    train(new, tmp_path / "run")  # the same outputs, other data
    train(new, tmp_path / "fresh")
    _same_files(tmp_path / "run", tmp_path / "fresh", ["model.pt"])


def test_pivot_rerun_on_changed_features_equals_a_fresh_run(tmp_path):
    from helpers.pivot import make_world

    from mlmm.cli import main
    from mlmm.records import write_record

    coco, feats, ted = make_world(tmp_path / "world")

    def train(out: Path) -> None:
        record = write_record(tmp_path / "train.json", {"hidden": 8, "epochs": 2, "min_count": 1})
        argv = ["pivot-train", "--coco-root", coco, "--features", feats, "--config", record,
                "--model", "bridge", "--language", "de",
                "--ted-root", ted, "--lambda", 1, "--device", "cpu", "--out", out]  # fmt: skip
        assert main([str(a) for a in argv]) == 0

    def scores(out: Path) -> dict:
        return json.loads((out / "metrics.json").read_text(encoding="utf-8"))["test"]

    train(tmp_path / "run")
    before = scores(tmp_path / "run")
    for array in sorted(Path(feats).rglob("*.npy")):  # the features change
        names = array.with_suffix(".txt").read_text().split()
        write_array(array, np.load(array)[::-1].copy(), names)
    train(tmp_path / "run")
    train(tmp_path / "fresh")
    assert scores(tmp_path / "run") == scores(tmp_path / "fresh") != before


# ------------------------------------------------------------------------------ downloads


def test_a_partial_download_of_another_url_is_not_continued(tmp_path, capsys):
    """``<target>.part`` records its URL: a rerun for another URL downloads from byte 0
    instead of appending the new file's tail to the old file's head."""
    import http.server
    import threading

    from helpers.fetch import HalfThenRange

    from mlmm.data.fetch import download
    from mlmm.errors import InputError

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), HalfThenRange)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{httpd.server_address[1]}"
    target = tmp_path / "vectors.vec"
    HalfThenRange.seen = []
    try:
        with pytest.raises(InputError):  # broken after half, no retry: the part is kept
            download(f"{base}/old.vec", target, retries=0, progress=False)
        assert (tmp_path / "vectors.vec.part").is_file()
        capsys.readouterr()
        download(f"{base}/new.vec", target, retries=1, progress=False)
    finally:
        httpd.shutdown()
        httpd.server_close()
    assert "vectors.vec.part: inputs changed since it was written (url), starting over" in (
        capsys.readouterr().err
    )
    assert HalfThenRange.seen[1] is None  # the new URL from byte 0, then its own rest
    assert target.read_bytes() == HalfThenRange.BODY
    assert sorted(p.name for p in tmp_path.iterdir()) == ["vectors.vec"]
