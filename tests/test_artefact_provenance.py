"""Finished artefacts are checked against what they were made from when read.

``mlmm.fingerprint.ARTEFACT_KINDS`` lists every kind of artefact that records what it was made
from; each kind here is written by its real command and damaged as a careless or unlucky user
would (another split's copy over it, rows reordered inside it, read with another input, its
maker rerun since), and every reader of it must refuse in one line.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from helpers.features import make_images
from helpers.one_line import message_lines, one_line_error

from mlmm.cli import main
from mlmm.errors import InputError
from mlmm.features import extract
from mlmm.fingerprint import ARTEFACT_KINDS
from mlmm.pivot.data import read_features
from mlmm.records import write_record
from mlmm.retrieval.data import load_features

BACKBONE = "efficientnet_lite0"


def _run(*args) -> None:
    assert main([str(a) for a in args]) == 0


# ------------------------------------------------------------------------------------------
# image feature arrays (mlmm features), read by retrieval, pivot and nbest-features


@pytest.fixture(scope="module")
def features(tmp_path_factory) -> tuple[Path, dict[str, list[str]]]:
    """val and test arrays of three distinct images each, by the real extraction."""
    root = tmp_path_factory.mktemp("features")
    names = {}
    for split, seed in (("val", 0), ("test_2016_flickr", 1)):
        work = root / split
        names[split] = make_images(work, 3, seed)
        (work / f"{split}.txt").write_text((work / "list.txt").read_text())
        extract(work / "images", work / f"{split}.txt", root / "feat" / BACKBONE / f"{split}.npy",
                BACKBONE, workers=0, progress=False, device="cpu")  # fmt: skip
    return root, names


def _copy(tmp_path: Path, features) -> tuple[Path, dict[str, list[str]]]:
    """The arrays copied as a user copies them, ``cp feat/*.npy feat/*.txt feat/*.json new/``:
    the visible files only, each with its sidecar (and nothing that a copy leaves behind)."""
    root, names = features
    (tmp_path / "feat" / BACKBONE).mkdir(parents=True)
    for pattern in ("*.npy", "*.txt", "*.json"):
        for path in (root / "feat" / BACKBONE).glob(pattern):
            shutil.copy(path, tmp_path / "feat" / BACKBONE / path.name)
    return tmp_path / "feat", names


TEST = "test_2016_flickr"


def _over_test(*suffixes: str) -> Callable[[Path], None]:
    """val's files of ``suffixes`` copied over test's."""

    def damage(bb: Path) -> None:
        for suffix in suffixes:
            shutil.copyfile(bb / f"val{suffix}", bb / f"{TEST}{suffix}")

    return damage


def _rows_shuffled(bb: Path) -> None:
    path = bb / f"{TEST}.npy"
    np.save(path, np.load(path)[[2, 0, 1]])


def _left_behind(*suffixes: str) -> Callable[[Path], None]:
    """test's files of ``suffixes`` missing: a copy of the others alone."""

    def damage(bb: Path) -> None:
        for suffix in suffixes:
            (bb / f"{TEST}{suffix}").unlink()

    return damage


def _record_dropped(bb: Path) -> None:
    """The sidecar as written before it carried the array's record."""
    sidecar = json.loads((bb / f"{TEST}.json").read_text())
    del sidecar["sha256"], sidecar["made_from"]
    (bb / f"{TEST}.json").write_text(json.dumps(sidecar))


OTHER_BYTES = rf"{TEST}\.npy: expected the bytes it was written with \({TEST}\.json\), found other"
OTHER_SPLIT = (rf"{TEST}\.npy: expected an artefact made from the split it is read with, found "
               rf"one made from another split \({TEST}\.json\)")  # fmt: skip
NO_SIDECAR = (rf"{TEST}\.npy: expected the sidecar {TEST}\.json that `mlmm features` writes "
              r"beside it, with the array's digest: copy it with the array, or rerun the "
              rf"features rule, found no {TEST}\.json beside it")  # fmt: skip
NO_RECORD = (rf"{TEST}\.npy: expected the sidecar {TEST}\.json .* found {TEST}\.json without "
             r"'sha256' or 'made_from' \(no record\)")  # fmt: skip

# damage -> (what it does to test's files, the refusal: one pattern, or one per reader)
FEATURE_DAMAGE: dict[str, tuple[Callable[[Path], None], str | dict[str, str]]] = {
    "val.npy copied over test.npy": (_over_test(".npy"), OTHER_BYTES),
    "rows shuffled inside the array": (_rows_shuffled, OTHER_BYTES),
    "val's .npy, .txt and .json copied over test's": (_over_test(".npy", ".txt", ".json"), {
        "retrieval (load_features)": rf"{TEST}\.txt, line 1: expected '.*' \(row 1 of the "
                                     rf"{TEST} image list",
        "pivot (read_features)": OTHER_SPLIT,
        "nbest-features --images": OTHER_SPLIT,
    }),
    "val's .npy and .json copied over test's, test's list copy kept": (
        _over_test(".npy", ".json"), {
            "retrieval (load_features)": rf"{TEST}\.npy: expected an artefact made from the "
                                         r"image list it is read with, found one made from "
                                         rf"another image list \({TEST}\.json\)",
            "pivot (read_features)": OTHER_SPLIT,
            "nbest-features --images": OTHER_SPLIT,
        }
    ),
    "the .npy and .txt copied without the sidecar": (_left_behind(".json"), NO_SIDECAR),
    "the .npy copied alone": (_left_behind(".json", ".txt"), {
        "retrieval (load_features)": rf"{TEST}\.txt: expected the image list copy written beside "
                                     rf"{TEST}\.npy, found no such file",
        "pivot (read_features)": NO_SIDECAR,
        "nbest-features --images": NO_SIDECAR,
    }),
    "a sidecar without the array's record": (_record_dropped, NO_RECORD),
}  # fmt: skip


def _library(read: Callable[[], object]) -> str | None:
    """The refusal of a library reader, None when it reads."""
    try:
        read()
    except InputError as exc:
        return str(exc)
    return None


def _retrieval(feat: Path, split: str, names, tmp_path: Path, capsys) -> str | None:
    return _library(lambda: load_features(feat, BACKBONE, split, names[split]))


def _pivot(feat: Path, split: str, names, tmp_path: Path, capsys) -> str | None:
    return _library(lambda: read_features(feat, BACKBONE, split, len(names[split])))


def _nbest_features(feat: Path, split: str, names, tmp_path: Path, capsys) -> str | None:
    """``nbest-features --images`` with the sentences of ``split`` (named as Multi30K names
    them, so the array's split is checked); its refusal line, None when it ran."""
    nbest, source = tmp_path / "dev.nbest", tmp_path / f"{split}.lc.norm.tok.en"
    nbest.write_text("".join(f"{i} ||| ein hund ||| NMT= -1.0 ||| -1.0\n" for i in range(3)))
    source.write_text("a dog\ntwo cats\na man\n")
    out = tmp_path / "out.nbest"
    out.unlink(missing_ok=True)
    argv = ["nbest-features", "--nbest", str(nbest), "--source", str(source), "--images",
            f"img={feat / BACKBONE / f'{split}.npy'}", "--out", str(out)]  # fmt: skip
    capsys.readouterr()
    if main(argv) == 0:
        assert out.is_file()
        return None
    lines = message_lines(capsys.readouterr().err)
    assert len(lines) == 1 and not out.exists(), lines
    return lines[0]


# Every reader of an image feature array in the pipeline (test_every_feature_array_reader_
# checks_the_record finds them in the source; a new one is added here).
FEATURE_READERS: dict[str, Callable[..., str | None]] = {
    "retrieval (load_features)": _retrieval,
    "pivot (read_features)": _pivot,
    "nbest-features --images": _nbest_features,
}


@pytest.mark.parametrize("reader", list(FEATURE_READERS))
def test_features_copied_with_their_sidecars_are_read_by_every_reader(
    reader, features, tmp_path, capsys
):
    """The sidecar carries the record: the visible files of a split copied elsewhere read."""
    feat, names = _copy(tmp_path, features)
    assert not [p.name for p in (feat / BACKBONE).iterdir() if p.name.startswith(".")]
    for split in names:
        assert FEATURE_READERS[reader](feat, split, names, tmp_path, capsys) is None


@pytest.mark.parametrize("reader", list(FEATURE_READERS))
@pytest.mark.parametrize("damage", list(FEATURE_DAMAGE))
def test_a_damaged_feature_array_is_refused_by_every_reader(
    damage, reader, features, tmp_path, capsys
):
    feat, names = _copy(tmp_path, features)
    assert FEATURE_READERS[reader](feat, TEST, names, tmp_path, capsys) is None  # intact: read
    change, refusal = FEATURE_DAMAGE[damage]
    change(feat / BACKBONE)
    line = FEATURE_READERS[reader](feat, TEST, names, tmp_path, capsys)
    expected = refusal if isinstance(refusal, str) else refusal[reader]
    assert line is not None, f"{reader} read the array after: {damage}"
    assert re.search(expected, line), line
    assert str(feat / BACKBONE) in line  # the file named with its directory


def test_nbest_features_refuses_the_array_of_another_split(features, tmp_path, capsys):
    """The test split's array given for the val sentences (both three images here)."""
    feat, names = _copy(tmp_path, features)
    nbest, source = tmp_path / "dev.nbest", tmp_path / "val.lc.norm.tok.en"
    nbest.write_text("".join(f"{i} ||| ein hund ||| NMT= -1.0 ||| -1.0\n" for i in range(3)))
    source.write_text("a dog\ntwo cats\na man\n")
    base = ["nbest-features", "--nbest", str(nbest), "--source", str(source),
            "--out", str(tmp_path / "out.nbest")]  # fmt: skip
    assert main([*base, "--images", f"img={feat / BACKBONE / 'val.npy'}"]) == 0
    (tmp_path / "out.nbest").unlink()
    line = one_line_error([*base, "--images", f"img={feat / BACKBONE / f'{TEST}.npy'}"], capsys)
    assert f"{TEST}.npy: expected an artefact made from the split it is read" in line
    assert "found one made from another split" in line


# Reads of an image feature array that need no record (function -> why); every other
# function of src/mlmm that reads an array it calls a feature array must check the record.
FEATURE_READS_WITHOUT_RECORD = {
    "mlmm.features.published.read_published": "a release's published array: an input from "
                                              "outside, whose import writes the record",
}  # fmt: skip


def _reads_an_array(call) -> bool:
    """``read_npy(...)``, ``io.read_npy(...)``, ``np.load(...)``."""
    import ast

    func = call.func
    if isinstance(func, ast.Name):
        return func.id == "read_npy"
    if isinstance(func, ast.Attribute):
        owner = func.value.id if isinstance(func.value, ast.Name) else None
        return func.attr == "read_npy" or (owner in ("np", "numpy") and func.attr == "load")
    return False


def _feature_reads(src: Path) -> dict[str, bool]:
    """Function (module.name) -> whether it calls check_feature_record, for every function
    of ``src`` that reads an array (``_reads_an_array``) it describes or names as features."""
    import ast

    found = {}
    for path in sorted(src.rglob("*.py")):
        module = ".".join(path.relative_to(src).with_suffix("").parts)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            calls = [c for c in ast.walk(node) if isinstance(c, ast.Call)]
            if any(_reads_an_array(c) and "feature" in ast.unparse(c).lower() for c in calls):
                found[f"{module}.{node.name}"] = any(
                    getattr(c.func, "id", getattr(c.func, "attr", None)) == "check_feature_record"
                    for c in calls
                )
    return found


def test_every_feature_array_reader_checks_the_record():
    src = Path(__file__).resolve().parents[1] / "src"
    reads = _feature_reads(src)
    unchecked = {name for name, checked in reads.items() if not checked}
    assert unchecked == set(FEATURE_READS_WITHOUT_RECORD), unchecked
    # the readers tested above are among them
    tested = {"mlmm.retrieval.data.load_features", "mlmm.pivot.data._mapped_features",
              "mlmm.cli.nmt.run_features"}  # fmt: skip
    assert tested <= {name for name, checked in reads.items() if checked}


# ------------------------------------------------------------------------------------------
# TED: CorrNet codes (ted-train) read by ted-tune; the tuning (ted-tune) read by ted-classify


@pytest.fixture(scope="module")
def ted(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("ted")
    _run("demo-ted", root / "cldc", "--train-docs", 30, "--test-docs", 12, "--languages", "de")
    _run("ted-fetch", "--source", "path", "--path", root / "cldc", "--out-dir", root / "corpus",
         "--languages", "de")  # fmt: skip
    records = root / "records"
    for bow, count in (("bow", 2), ("bow3", 3)):
        record = write_record(records / f"{bow}.json", {"languages": ["de"], "min_count": count})
        _run("ted-bow", "--config", record, "--index", root / "corpus/index.json",
             "--out-dir", root / bow)  # fmt: skip
    train = write_record(records / "train.json", {"hidden": 8, "epochs": 1})
    for run, lam in (("run", 1), ("run10", 10)):
        _run("ted-train", "--config", train, "--bow", root / "bow", "--out-dir", root / run,
             "--lambda", lam)  # fmt: skip
    _run("ted-tune", "--config", write_record(records / "defaults.json", {}), "--bow", root / "bow",
         "--runs", root / "run", "--out", root / "tuning/lambda.json")  # fmt: skip
    return root


def _ted_copy(tmp_path: Path, ted: Path) -> Path:
    shutil.copytree(ted, tmp_path / "ted", symlinks=True)
    return tmp_path / "ted"


def _tune(root: Path, bow: str = "bow", out: str = "other.json") -> list[str]:
    return ["ted-tune", "--config", str(root / "records/defaults.json"), "--bow",
            str(root / bow), "--runs", str(root / "run"), "--out", str(root / out)]  # fmt: skip


def _classify(root: Path) -> list[str]:
    return ["ted-classify", "--config", str(root / "records/defaults.json"), "--bow",
            str(root / "bow"), "--tuning", str(root / "tuning/lambda.json"), "--source", "de",
            "--out", str(root / "cldc.json")]  # fmt: skip


def test_codes_of_another_bag_of_words_are_refused(ted, tmp_path, capsys):
    root = _ted_copy(tmp_path, ted)
    line = one_line_error(_tune(root, bow="bow3"), capsys)
    assert ("codes.npz, key 'made_from.inputs': expected an artefact made from the bag of words "
            "it is read with, found one made from another bag of words") in line  # fmt: skip
    assert not (root / "other.json").exists()


def test_codes_of_another_lambda_are_refused(ted, tmp_path, capsys):
    """The lambda=10 codes, their record inside, copied into the lambda=1 run."""
    root = _ted_copy(tmp_path, ted)
    shutil.copyfile(root / "run10/codes.npz", root / "run/codes.npz")
    for argv, asked in ((_tune(root), "the run of metrics.json beside it"),
                        (_classify(root), "the lambda lambda.json chose")):  # fmt: skip
        line = one_line_error(argv, capsys)
        assert (f"run/codes.npz, key 'made_from.run.lambda': expected lambda 1.0 ({asked}), "
                "found lambda 10.0: another run's artefact") in line, line  # fmt: skip


def test_codes_without_their_record_are_refused(ted, tmp_path, capsys):
    """Codes as an earlier version wrote them: the arrays alone."""
    root = _ted_copy(tmp_path, ted)
    codes = {k: v for k, v in np.load(root / "run/codes.npz").items() if k != "made_from"}
    np.savez(root / "run/codes.npz", **codes)
    line = one_line_error(_tune(root), capsys)
    assert ("run/codes.npz: expected its record (key 'made_from': what it was made from, which "
            "run it is), found none: made by an earlier version or outside mlmm; rerun "
            "ted-train for this lambda") in line  # fmt: skip


def _neighbours(root: Path) -> list[str]:
    record = write_record(root / "records/neighbours.json", {"table4_words": ["market"]})
    return ["ted-neighbours", "--config", str(record), "--bow", str(root / "bow"), "--tuning",
            str(root / "tuning/lambda.json"), "--paper-tables", "--out-dir",
            str(root / "tables")]  # fmt: skip


def test_the_ted_model_of_another_lambda_is_refused(ted, tmp_path, capsys):
    """ted-neighbours reads the tuned run's model.pt: the lambda=10 model, its record inside,
    copied into the lambda=1 run is refused; the run as trained is read."""
    root = _ted_copy(tmp_path, ted)
    _run(*_neighbours(root))
    shutil.rmtree(root / "tables")
    shutil.copyfile(root / "run10/model.pt", root / "run/model.pt")
    line = one_line_error(_neighbours(root), capsys)
    assert ("run/model.pt, key 'made_from.run.lambda': expected lambda 1.0 (the lambda "
            "lambda.json chose), found lambda 10.0: another run's artefact") in line, line
    assert not (root / "tables").exists()


def test_a_ted_model_without_its_record_is_refused(ted, tmp_path, capsys):
    """A model as an earlier version wrote it: the state without its record."""
    import torch

    root = _ted_copy(tmp_path, ted)
    state = torch.load(root / "run/model.pt", weights_only=True)
    del state["made_from"]
    torch.save(state, root / "run/model.pt")
    line = one_line_error(_neighbours(root), capsys)
    assert ("run/model.pt: expected its record (key 'made_from': what it was made from, which "
            "run it is), found none: made by an earlier version or outside mlmm; rerun "
            "ted-train for this lambda") in line, line


def test_codes_replaced_after_training_are_refused(ted, tmp_path, capsys):
    root = _ted_copy(tmp_path, ted)
    codes = dict(np.load(root / "run/codes.npz"))  # the record inside comes along
    first = next(k for k in codes if k != "made_from")
    codes[first] = codes[first][::-1].copy()  # talks reordered
    np.savez(root / "run/codes.npz", **codes)
    line = one_line_error(_classify(root), capsys)
    assert ("codes.npz, key 'made_from.content': expected the content it was written with, "
            "found other content") in line and not (root / "cldc.json").exists()  # fmt: skip


def test_codes_copied_with_their_run_are_read(ted, tmp_path):
    """The record travels inside the codes: a run copied without its hidden files reads."""
    root = _ted_copy(tmp_path, ted)
    for hidden in (root / "run").glob(".*"):
        hidden.unlink()
    _run(*_tune(root))


def test_a_run_retrained_after_tuning_is_refused(ted, tmp_path, capsys):
    root = _ted_copy(tmp_path, ted)
    shutil.rmtree(root / "run")
    record = write_record(root / "records/seed2.json", {"hidden": 8, "epochs": 1, "seed": 2})
    _run("ted-train", "--config", record, "--bow", root / "bow", "--out-dir", root / "run",
         "--lambda", 1)  # fmt: skip
    capsys.readouterr()
    line = one_line_error(_classify(root), capsys)
    assert "codes.npz: expected the codes lambda.json chose" in line
    assert "found other codes: the run was retrained since tuning" in line


def test_a_tuning_without_the_digest_of_its_codes_is_refused(ted, tmp_path, capsys):
    root = _ted_copy(tmp_path, ted)
    tuning = json.loads((root / "tuning/lambda.json").read_text())
    del tuning["chosen"]["de"]["codes_sha256"]  # as an earlier version wrote it
    (root / "tuning/lambda.json").write_text(json.dumps(tuning))
    line = one_line_error(_classify(root), capsys)
    assert ("lambda.json, key 'codes_sha256': expected the sha256 of the chosen run's codes, "
            "found none: a tuning of an earlier version; rerun ted-tune") in line


def test_tuning_run_paths_resolve_against_the_tuning_file(ted, tmp_path, monkeypatch):
    """The same command from another directory reads the same run (lambda.json is relative)."""
    root = _ted_copy(tmp_path, ted)
    choice = json.loads((root / "tuning/lambda.json").read_text())["chosen"]["de"]
    assert choice["run"] == "../run" and len(choice["codes_sha256"]) == 64
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / "run").mkdir(parents=True)  # a decoy run where a cwd-relative path would look
    monkeypatch.chdir(elsewhere)
    _run("ted-classify", "--config", root / "records/defaults.json", "--bow", root / "bow",
         "--tuning", root / "tuning/lambda.json", "--source", "de",
         "--out", root / "cldc.json")  # fmt: skip


# ------------------------------------------------------------------------------------------
# NMT: the model (train-nmt) read by nbest; n-best lists (nbest) read by nbest-features, mira


@pytest.fixture(scope="module")
def nmt(tmp_path_factory) -> Path:
    """Two train-nmt runs as the workflow lays them out (model.pt beside its metrics.json)."""
    from helpers.nmt import beam_record, nmt_data, nmt_record

    root = tmp_path_factory.mktemp("nmt")
    data = nmt_data(root)
    (data / "test.lc.norm.tok.en").write_text("two dogs\na cat\na man runs\n")
    for seed in (1, 2):
        record, run = nmt_record(root / f"record{seed}.json", seed=seed), root / f"m{seed}"
        _run("train-nmt", "--config", record, "--data", data, "--out", run / "model.pt",
             "--history", run / "history.csv", "--metrics", run / "metrics.json",
             "--device", "cpu")  # fmt: skip
    _run("nbest", "--config", beam_record(root / "beam.json", 2), "--model", root / "m1/model.pt",
         "--source", data / "val.lc.norm.tok.en", "--device", "cpu", "--out",
         root / "val.base.nbest")  # fmt: skip
    return root


def _nbest(root: Path, model: Path) -> list[str]:
    return ["nbest", "--config", str(root / "beam.json"), "--model", str(model), "--source",
            str(root / "data/val.lc.norm.tok.en"), "--out", str(root / "again.nbest")]  # fmt: skip


def _resave(path: Path, change: Callable[[dict], None]) -> None:
    """``path``'s checkpoint loaded, changed by hand and saved again."""
    import torch

    saved = torch.load(path, weights_only=False)
    change(saved)
    torch.save(saved, path)


def test_the_nmt_model_of_another_run_is_refused(nmt, tmp_path, capsys):
    """Run 2's model, its record inside, copied over run 1's (beside run 1's metrics.json)."""
    root = _ted_copy(tmp_path, nmt)
    shutil.copyfile(root / "m2/model.pt", root / "m1/model.pt")
    line = one_line_error(_nbest(root, root / "m1/model.pt"), capsys)
    assert ("m1/model.pt, key 'made_from.run.seed': expected seed 1 (asked for, the run of "
            "metrics.json beside it), found seed 2: another run's artefact") in line
    assert not (root / "again.nbest").exists()


def test_an_nmt_model_copied_alone_carries_its_record(nmt, tmp_path, capsys):
    root = _ted_copy(tmp_path, nmt)
    (root / "alone").mkdir()
    shutil.copyfile(root / "m1/model.pt", root / "alone/model.pt")  # no hidden files, no metrics
    _run(*_nbest(root, root / "alone/model.pt"))
    _resave(root / "alone/model.pt", lambda saved: saved.pop("made_from"))
    line = one_line_error(_nbest(root, root / "alone/model.pt"), capsys)
    assert ("alone/model.pt: expected its record (key 'made_from': what it was made from, which "
            "run it is), found none: made by an earlier version or outside mlmm; rerun "
            "train-nmt") in line  # fmt: skip


def test_an_edited_nmt_model_is_refused(nmt, tmp_path, capsys):
    root = _ted_copy(tmp_path, nmt)

    def flip(saved: dict) -> None:
        name = next(iter(saved["state"]))
        saved["state"][name] = -saved["state"][name]

    _resave(root / "m1/model.pt", flip)
    line = one_line_error(_nbest(root, root / "m1/model.pt"), capsys)
    assert "m1/model.pt, key 'made_from.content': expected the content it was written" in line


def test_an_nbest_list_of_another_source_is_refused(nmt, tmp_path, capsys):
    """The val n-best list given to nbest-features with the test source (both 3 sentences)."""
    root = _ted_copy(tmp_path, nmt)
    out = root / "val.nbest"
    argv = ["nbest-features", "--nbest", str(root / "val.base.nbest"), "--out", str(out),
            "--source"]  # fmt: skip
    line = one_line_error([*argv, str(root / "data/test.lc.norm.tok.en")], capsys)
    assert "val.base.nbest: expected an artefact made from the source it is read with" in line
    assert not out.exists()
    _run(*argv, root / "data/val.lc.norm.tok.en")


def test_an_edited_nbest_list_is_refused_by_mira(nmt, tmp_path, capsys):
    root = _ted_copy(tmp_path, nmt)
    path = root / "val.base.nbest"
    path.write_text(path.read_text().replace("|||", " |||", 1))
    line = one_line_error(["mira", "--nbest", str(path), "--ref",
                           str(root / "data/val.lc.norm.tok.de"), "--out", str(root / "w")],
                          capsys)  # fmt: skip
    assert "val.base.nbest: expected the bytes it was written with" in line


def test_an_nbest_list_without_its_record_is_read_as_another_decoders(nmt, tmp_path):
    """mira, rerank and nbest-features take Moses lists of other decoders: a list without a
    record (copied without its hidden file, or from Moses) is read as is."""
    root = _ted_copy(tmp_path, nmt)
    (root / "moses").mkdir()
    nbest = shutil.copy(root / "val.base.nbest", root / "moses/val.nbest")
    _run("nbest-features", "--nbest", nbest, "--source", root / "data/test.lc.norm.tok.en",
         "--out", root / "moses/features.nbest")  # fmt: skip
    _run("mira", "--nbest", nbest, "--ref", root / "data/val.lc.norm.tok.de", "--iters", 2,
         "--out", root / "moses/weights")  # fmt: skip
    weights = shutil.copy(root / "moses/weights", root / "weights.moses")
    _run("rerank", "--nbest", nbest, "--weights", weights, "--out", root / "moses/1best")


# ------------------------------------------------------------------------------------------
# retrieval: model.pt (train-retrieval) read by load_trained (nbest-features --feature)


@pytest.fixture(scope="module")
def retrieval_runs(tmp_path_factory) -> Path:
    """Two variants' runs, each directory as train-retrieval leaves it."""
    from helpers.retrieval import make_world, section

    from mlmm.retrieval.config import resolve_variant
    from mlmm.retrieval.train import train_variant

    root = tmp_path_factory.mktemp("retrieval")
    world = make_world(root / "world")
    variant = {"train_data": [{"portion": "comparable", "languages": ["en"]}], "sts": False}
    config = section(en=variant, en_margin=variant | {"margin": 0.1})
    for name in ("en", "en_margin"):
        train_variant(resolve_variant(config, name), 1, world, root / name, progress=False,
                      threads=1)  # fmt: skip
    return root


def test_the_model_of_another_variant_is_refused(retrieval_runs, tmp_path):
    """en_margin's model.pt, its record inside, copied into en's run directory."""
    from mlmm.retrieval.api import load_trained

    run = shutil.copytree(retrieval_runs / "en", tmp_path / "en")
    load_trained(run)
    shutil.copyfile(retrieval_runs / "en_margin/model.pt", run / "model.pt")
    with pytest.raises(InputError) as caught:
        load_trained(run)
    assert str(caught.value) == (
        f"{run / 'model.pt'}, key 'made_from.run.variant': expected variant 'en' (the run of "
        "metrics.json beside it), found variant 'en_margin': another run's artefact"
    )
    with pytest.raises(InputError, match="expected seed 2 .asked for., found seed 1"):
        load_trained(retrieval_runs / "en_margin", run={"variant": "en_margin", "seed": 2})


def test_a_retrieval_model_copied_alone_is_read_and_refused_without_its_record(
    retrieval_runs, tmp_path
):
    from mlmm.retrieval.api import load_trained

    (tmp_path / "alone").mkdir()
    model = shutil.copy(retrieval_runs / "en/model.pt", tmp_path / "alone/model.pt")
    load_trained(model)  # the record travels inside it
    _resave(Path(model), lambda saved: saved.pop("made_from"))
    with pytest.raises(InputError, match=r"model.pt: expected its record \(key 'made_from'.*"
                                         r"found none: .*rerun train-retrieval"):
        load_trained(model)


def test_an_edited_retrieval_model_is_refused(retrieval_runs, tmp_path):
    from mlmm.retrieval.api import load_trained

    run = shutil.copytree(retrieval_runs / "en", tmp_path / "run")
    load_trained(run)
    # another seed's model under the name, as far as its own fields go
    _resave(run / "model.pt", lambda saved: saved.update(seed=2))
    with pytest.raises(InputError, match="model.pt, key 'made_from.content': expected the "
                                         "content it was written with"):
        load_trained(run)


# ------------------------------------------------------------------------------------------
# TED bag-of-words directory (ted-bow) read by every later TED stage (Bow.load)


def test_a_bag_of_words_file_of_another_build_is_refused(ted, tmp_path, capsys):
    """A vocabulary of the min-count-3 build copied into the min-count-2 one."""
    from mlmm.ted.bow import Bow

    root = _ted_copy(tmp_path, ted)
    Bow.load(root / "bow")
    shutil.copyfile(root / "bow3/vocab.de.txt", root / "bow/vocab.de.txt")
    out = root / "nb.json"
    line = one_line_error(["ted-nb", "--bow", str(root / "bow"), "--out", str(out)], capsys)
    assert "meta.json: expected an artefact made from the files of the directory it is " in line
    assert not out.exists()


def test_the_index_of_another_bag_of_words_build_is_refused(ted, tmp_path):
    """The min-count-3 build's meta.json with its record copied into the min-count-2 one."""
    from mlmm.fingerprint import made_from_path
    from mlmm.ted.bow import Bow

    root = _ted_copy(tmp_path, ted)
    for path in (root / "bow3/meta.json", made_from_path(root / "bow3/meta.json")):
        shutil.copyfile(path, root / "bow" / path.name)
    with pytest.raises(InputError, match="meta.json: expected an artefact made from the files"):
        Bow.load(root / "bow")


def test_a_bag_of_words_copied_without_its_record_is_refused(ted, tmp_path, capsys):
    """``cp bow/* new/``: the hidden record left behind."""
    root = _ted_copy(tmp_path, ted)
    (root / "new").mkdir()
    for path in (root / "bow").glob("[!.]*"):  # as the shell's * expands
        shutil.copy(path, root / "new" / path.name)
    line = one_line_error(["ted-nb", "--bow", str(root / "new"), "--out", str(root / "nb.json")],
                          capsys)  # fmt: skip
    assert ("new/meta.json: expected its record .meta.json.made-from.json beside it (what it was "
            "made from), found none: made before records, or copied without it; rerun ted-bow"
            ) in line  # fmt: skip


# ------------------------------------------------------------------------------------------
# pivot run directories (pivot-train) read by pivot-table, pivot-mt and pivot-examples


@pytest.fixture(scope="module")
def pivot_runs(tmp_path_factory) -> Path:
    from helpers.pivot import SETTINGS, make_world

    from mlmm.pivot.experiment import train_stage

    root = tmp_path_factory.mktemp("pivot")
    coco, feats, _ = make_world(root / "world")
    for seed in (1, 2):
        settings = SETTINGS | {"seed": seed}
        train_stage(coco, feats, "alexnet_fc6", None, None, "random", 0.0, settings,
                    root / f"random{seed}", progress=False)  # fmt: skip
    return root


def _table(runs: list[Path], out: Path) -> list[str]:
    return ["pivot-table", "--runs", *map(str, runs), "--out", str(out)]


def test_a_pivot_run_with_a_file_of_another_run_is_refused(pivot_runs, tmp_path, capsys):
    from mlmm.results.pivot_examples import ranking_scores

    root = _ted_copy(tmp_path, pivot_runs)
    run = root / "random1"
    ranking_scores(run / "test_ranking.npz")
    shutil.copyfile(root / "random2/test_ranking.npz", run / "test_ranking.npz")
    with pytest.raises(InputError, match="metrics.json: expected an artefact made from the "
                                         "files of the directory it is read with"):
        ranking_scores(run / "test_ranking.npz")
    out = root / "table5"
    line = one_line_error(_table([run], out), capsys)
    assert "random1/metrics.json: expected an artefact made from the files of the " in line
    assert not out.with_suffix(".csv").exists()


def test_the_metrics_of_another_pivot_run_are_refused(pivot_runs, tmp_path, capsys):
    """random2's metrics.json with its record copied into random1."""
    from mlmm.fingerprint import made_from_path

    root = _ted_copy(tmp_path, pivot_runs)
    for path in (root / "random2/metrics.json", made_from_path(root / "random2/metrics.json")):
        shutil.copyfile(path, root / "random1" / path.name)
    line = one_line_error(_table([root / "random1"], root / "table5"), capsys)
    assert "random1/metrics.json: expected an artefact made from the files of the " in line


def test_a_pivot_run_copied_without_its_record_is_refused(pivot_runs, tmp_path, capsys):
    root = _ted_copy(tmp_path, pivot_runs)
    (root / "new").mkdir()
    for path in (root / "random1").glob("[!.]*"):  # as the shell's * expands
        shutil.copy(path, root / "new" / path.name)
    line = one_line_error(_table([root / "new"], root / "table5"), capsys)
    assert ("new/metrics.json: expected its record .metrics.json.made-from.json beside it (what "
            "it was made from), found none: made before records, or copied without it; rerun "
            "pivot-train or pivot-mt for this run") in line  # fmt: skip


def test_an_edited_pivot_metrics_json_is_refused(pivot_runs, tmp_path, capsys):
    root = _ted_copy(tmp_path, pivot_runs)
    metrics = root / "random1/metrics.json"
    run = json.loads(metrics.read_text())
    run["test"]["i2t"]["R@5"] = 99.0  # a number typed over the measured one
    metrics.write_text(json.dumps(run))
    line = one_line_error(_table([root / "random1"], root / "table5"), capsys)
    assert "metrics.json: expected the bytes it was written with" in line


# ------------------------------------------------------------------------------------------
# Multi30K vocabularies (multi30k-vocab) read by Vocabulary.load


@pytest.fixture(scope="module")
def vocabularies(tmp_path_factory) -> Path:
    """The vocabularies of two thresholds, by the real writer."""
    from helpers.multi30k import write_tree

    from mlmm.data.prepare import write_vocabularies

    root = tmp_path_factory.mktemp("vocab")
    tree = write_tree(root / "m30k")
    for count in (6, 2):
        write_vocabularies(tree, root / f"vocab{count}", min_count=count)
    return root


def test_an_edited_vocabulary_is_refused(vocabularies, tmp_path):
    from mlmm.data.vocab import Vocabulary

    root = _ted_copy(tmp_path, vocabularies)
    path = root / "vocab6/translation.fr.tsv"
    Vocabulary.load(path, min_count=6)
    path.write_text(path.read_text() + "nouveau\t99\n")
    with pytest.raises(InputError, match="translation.fr.tsv: expected the bytes it was written"):
        Vocabulary.load(path)


def test_the_vocabulary_of_another_threshold_is_refused(vocabularies, tmp_path):
    """The min-count-2 vocabulary, its record along, copied over the min-count-6 one."""
    from mlmm.data.vocab import Vocabulary
    from mlmm.fingerprint import made_from_path

    root = _ted_copy(tmp_path, vocabularies)
    for name in ("translation.fr.tsv", ".translation.fr.tsv.made-from.json"):
        shutil.copyfile(root / "vocab2" / name, root / "vocab6" / name)
    assert made_from_path(root / "vocab6/translation.fr.tsv").is_file()
    with pytest.raises(InputError, match="translation.fr.tsv: expected an artefact made from "
                                         "the min count it is read with"):
        Vocabulary.load(root / "vocab6/translation.fr.tsv", min_count=6)


def test_a_vocabulary_copied_without_its_record_is_refused(vocabularies, tmp_path):
    from mlmm.data.vocab import Vocabulary

    path = shutil.copy(vocabularies / "vocab6/translation.fr.tsv", tmp_path / "fr.tsv")
    with pytest.raises(InputError, match=r"fr.tsv: expected its record .* found none: .*rerun "
                                         r"multi30k-vocab"):
        Vocabulary.load(path)


# ------------------------------------------------------------------------------------------
# MIRA weights (mira) read by rerank


def test_edited_mira_weights_are_refused_by_rerank(nmt, tmp_path, capsys):
    from mlmm.fingerprint import made_from_path

    root = _ted_copy(tmp_path, nmt)
    nbest, weights = root / "val.base.nbest", root / "weights"
    _run("mira", "--nbest", nbest, "--ref", root / "data/val.lc.norm.tok.de", "--iters", 2,
         "--out", weights)  # fmt: skip
    record = json.loads(made_from_path(weights).read_text())
    assert set(record["inputs"]) == set(ARTEFACT_KINDS["MIRA weights (mira)"])
    _run("rerank", "--nbest", nbest, "--weights", weights, "--out", root / "1best")
    first, *rest = weights.read_text().splitlines()
    name, values = first.split("=", 1)
    flipped = " ".join(str(-float(v)) for v in values.split())  # a sign flipped by hand
    weights.write_text("\n".join([f"{name}= {flipped}", *rest]) + "\n")
    out = root / "again"
    line = one_line_error(["rerank", "--nbest", str(nbest), "--weights", str(weights), "--out",
                           str(out)], capsys)  # fmt: skip
    assert "weights: expected the bytes it was written with" in line and not out.exists()


# ------------------------------------------------------------------------------------------
# every kind is covered


COVERED = {
    "image feature array (mlmm features)": test_a_damaged_feature_array_is_refused_by_every_reader,
    "TED CorrNet codes (ted-train)": (
        test_codes_of_another_bag_of_words_are_refused, test_codes_of_another_lambda_are_refused,
        test_codes_without_their_record_are_refused,
    ),
    "TED CorrNet model (ted-train)": (
        test_the_ted_model_of_another_lambda_is_refused,
        test_a_ted_model_without_its_record_is_refused,
    ),
    "TED tuning (ted-tune)": (
        test_a_run_retrained_after_tuning_is_refused,
        test_a_tuning_without_the_digest_of_its_codes_is_refused,
    ),
    "retrieval model (train-retrieval)": (
        test_the_model_of_another_variant_is_refused, test_an_edited_retrieval_model_is_refused,
        test_a_retrieval_model_copied_alone_is_read_and_refused_without_its_record,
    ),
    "NMT model (train-nmt)": (
        test_the_nmt_model_of_another_run_is_refused, test_an_edited_nmt_model_is_refused,
        test_an_nmt_model_copied_alone_carries_its_record,
    ),
    "n-best list (nbest, nbest-features)": (
        test_an_nbest_list_of_another_source_is_refused,
        test_an_nbest_list_without_its_record_is_read_as_another_decoders,
    ),
    "TED bag-of-words directory (ted-bow)": (
        test_a_bag_of_words_file_of_another_build_is_refused,
        test_the_index_of_another_bag_of_words_build_is_refused,
        test_a_bag_of_words_copied_without_its_record_is_refused,
    ),
    "pivot run directory (pivot-train, pivot-mt)": (
        test_a_pivot_run_with_a_file_of_another_run_is_refused,
        test_the_metrics_of_another_pivot_run_are_refused,
        test_a_pivot_run_copied_without_its_record_is_refused,
    ),
    "Multi30K vocabulary (multi30k-vocab)": (
        test_an_edited_vocabulary_is_refused, test_the_vocabulary_of_another_threshold_is_refused,
        test_a_vocabulary_copied_without_its_record_is_refused,
    ),
    "MIRA weights (mira)": (
        test_edited_mira_weights_are_refused_by_rerank,
        test_an_nbest_list_without_its_record_is_read_as_another_decoders,
    ),
}


def test_every_artefact_kind_that_records_its_inputs_is_tested_here():
    assert set(COVERED) == set(ARTEFACT_KINDS)


def test_writers_leave_their_records(features, ted, nmt, retrieval_runs, pivot_runs, vocabularies):
    import torch

    from mlmm.fingerprint import made_from_path

    root, _ = features
    for split in ("val", TEST):
        array = root / "feat" / BACKBONE / f"{split}.npy"
        sidecar = json.loads(array.with_suffix(".json").read_text())
        assert set(sidecar["made_from"]) == set(
            ARTEFACT_KINDS["image feature array (mlmm features)"]
        )
        assert sidecar["sha256"] == hashlib.sha256(array.read_bytes()).hexdigest()
        assert not made_from_path(array).exists()  # the record is in the sidecar alone
    # records inside the artefact, and nothing beside it
    codes = json.loads(str(np.load(ted / "run/codes.npz")["made_from"]))
    inside = {
        ted / "run/codes.npz": ("TED CorrNet codes (ted-train)", codes, {"lambda": 1.0}),
        ted / "run/model.pt": ("TED CorrNet model (ted-train)",
                               torch.load(ted / "run/model.pt", weights_only=True)["made_from"],
                               {"lambda": 1.0}),
        nmt / "m1/model.pt": ("NMT model (train-nmt)",
                              torch.load(nmt / "m1/model.pt", weights_only=True)["made_from"],
                              {"languages": ["en", "de"], "seed": 1}),
        retrieval_runs / "en/model.pt": (
            "retrieval model (train-retrieval)",
            torch.load(retrieval_runs / "en/model.pt", weights_only=False)["made_from"],
            {"variant": "en", "seed": 1},
        ),
    }  # fmt: skip
    for path, (kind, record, run) in inside.items():
        assert set(record["inputs"]) == set(ARTEFACT_KINDS[kind]), path
        assert record["run"].items() >= run.items() and len(record["content"]) == 64, path
        assert not made_from_path(path).exists(), path
    for path, kind in ((nmt / "val.base.nbest", "n-best list (nbest, nbest-features)"),
                       (ted / "bow/meta.json", "TED bag-of-words directory (ted-bow)"),
                       (pivot_runs / "random1/metrics.json",
                        "pivot run directory (pivot-train, pivot-mt)"),
                       (vocabularies / "vocab6/all.union.tsv",
                        "Multi30K vocabulary (multi30k-vocab)")):  # fmt: skip
        record = json.loads(made_from_path(path).read_text())
        assert set(record["inputs"]) == set(ARTEFACT_KINDS[kind]), path
