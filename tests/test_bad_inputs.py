"""The standing bad-input suite: one case per reader and kind of damage (docs/bad_inputs.md).

Every case runs the ``mlmm`` command line (or ``snakemake -n`` for configuration) on damaged
input and asserts: a non-zero exit, exactly ONE line on stderr that names the file (and line
or key) with what was expected and what was found, and no output file of the step afterwards
(inputs intact where the damage was an output over an input).
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from helpers.local_data import PAPER_LOCAL_DATA, provide_local_data
from helpers.multi30k import write_tree
from helpers.nbest import GOOD_NBEST
from helpers.one_line import BIN, REPO, Case, check
from PIL import Image

from mlmm.cli import build_parser, main
from mlmm.data.fetch import MARKER, make_manifest
from mlmm.data.prepare import expected_files
from mlmm.nbest import NBestList, write_nbest
from mlmm.schema import check_options

# ------------------------------------------------------------------------------------------
# data: validate-multi30k, fetch-multi30k


def _truncate_gzip(tree: Path) -> tuple[str, list[str]]:
    path = tree / "data/task1/raw/train.en.gz"
    path.write_bytes(path.read_bytes()[:-12])
    return "train.en.gz", ["expected a readable gzip file", "corrupt data"]


def _non_utf8(tree: Path) -> tuple[str, list[str]]:
    path = tree / "data/task1/tok/val.lc.norm.tok.de"
    path.write_bytes(path.read_bytes().replace(b"ein", b"e\xffn", 1))
    return "val.lc.norm.tok.de, line 1", ["expected UTF-8 text", "invalid byte 0xff"]


def _count_mismatch(tree: Path) -> tuple[str, list[str]]:
    path = tree / "data/task2/tok/train.lc.norm.tok.3.en"
    path.write_text(path.read_text() + "one caption too many\n")
    return "train.lc.norm.tok.3.en, line 7", ["expected 6 captions", "found 7 lines"]


def _empty_split(tree: Path) -> tuple[str, list[str]]:
    for rel in ("data/task1/image_splits/val.txt", "data/task2/image_splits/val_images.txt"):
        (tree / rel).write_text("")
    return "val.txt", ["expected at least one image name", "found an empty list"]


def _missing_file(tree: Path) -> tuple[str, list[str]]:
    (tree / "data/task1/raw/test_2016_flickr.cs.gz").unlink()
    return "test_2016_flickr.cs.gz", ["expected an existing file", "no such file"]


@pytest.mark.parametrize(
    "damage", [_truncate_gzip, _non_utf8, _count_mismatch, _empty_split, _missing_file]
)
def test_validate_multi30k(damage: Callable, tmp_path: Path, capsys) -> None:
    tree = write_tree(tmp_path / "m30k")
    where, says = damage(tree)
    check(Case(["validate-multi30k", str(tree)], [where, *says]), capsys)


def test_fetch_multi30k_bad_sha256(tmp_path: Path, capsys) -> None:
    tree = write_tree(tmp_path / "m30k")
    manifest = tmp_path / "m.sha256"
    text = make_manifest(tree, expected_files())
    manifest.write_text(re.sub(r"^[0-9a-f]{64}", "0" * 64, text, count=1))
    out = tmp_path / "copy"
    argv = ["fetch-multi30k", "--manifest", str(manifest), "--mirror", str(tree), "--out", str(out)]
    check(Case(argv, [f"expected sha256 {'0' * 64}", "found sha256"], [out / MARKER]), capsys)


def test_fetch_multi30k_keeps_a_verified_copy_of_another_manifest(tmp_path: Path, capsys) -> None:
    tree = write_tree(tmp_path / "m30k")
    manifest = tmp_path / "m.sha256"
    manifest.write_text(make_manifest(tree, expected_files()))
    out = tmp_path / "copy"
    argv = ["fetch-multi30k", "--manifest", str(manifest), "--mirror", str(tree), "--out", str(out)]
    assert main(argv) == 0
    assert main(argv) == 0 and "nothing fetched" in capsys.readouterr().out
    other = tmp_path / "other.sha256"
    other.write_text(make_manifest(tree, expected_files()[:3]))
    argv[2] = str(other)
    kept = {out / MARKER: (out / MARKER).read_bytes()}
    says = [str(out), "a verified copy of another manifest", "--force"]
    check(Case(argv, says, [], kept), capsys)


def test_multi30k_manifest_over_a_file_it_hashes(tmp_path: Path, capsys) -> None:
    tree = write_tree(tmp_path / "m30k")
    listed = tree / "data/task1/image_splits/train.txt"
    argv = ["multi30k-manifest", str(tree), "--out", str(listed)]
    says = ["train.txt: expected an output path other than the input", "found the input itself"]
    check(Case(argv, says, [], {listed: listed.read_bytes()}), capsys)


def test_fetch_multi30k_keeps_an_edited_file(tmp_path: Path, capsys) -> None:
    tree = write_tree(tmp_path / "m30k")
    manifest = tmp_path / "m.sha256"
    manifest.write_text(make_manifest(tree, expected_files()))
    out = tmp_path / "copy"
    edited = out / "data/task1/tok/train.lc.norm.tok.en"
    edited.parent.mkdir(parents=True)
    edited.write_text("my own captions\n")
    argv = ["fetch-multi30k", "--manifest", str(manifest), "--mirror", str(tree), "--out", str(out)]
    says = ["train.lc.norm.tok.en: expected no file or the one with sha256", "--force"]
    check(Case(argv, says, [out / MARKER], {edited: b"my own captions\n"}), capsys)
    assert main([*argv, "--force"]) == 0 and (out / MARKER).is_file()


# ------------------------------------------------------------------------------------------
# features


def _images(tmp_path: Path, names: list[str]) -> Path:
    root = tmp_path / "images"
    root.mkdir()
    for name in names:
        Image.new("RGB", (40, 30), (200, 10, 10)).save(root / name)
    return root


def _features(tmp_path: Path, split: Path, out: Path, *extra: str) -> list[str]:
    return [
        "features", "--backbone", "efficientnet_lite0", "--weights", "none", "--device", "cpu",
        "--images", str(tmp_path / "images"), "--split", str(split), "--out", str(out),
        "--no-progress", *extra,
    ]  # fmt: skip


def test_features_empty_split_list(tmp_path: Path, capsys) -> None:
    _images(tmp_path, ["a.jpg"])
    split = tmp_path / "empty.txt"
    split.write_text("")
    out = tmp_path / "f/empty.npy"
    check(Case(_features(tmp_path, split, out), ["empty.txt", "an empty list"], [out]), capsys)


@pytest.mark.parametrize("damage", ["missing", "unreadable"])
def test_features_missing_or_unreadable_image(damage: str, tmp_path: Path, capsys) -> None:
    images = _images(tmp_path, ["a.jpg", "b.jpg"])
    if damage == "missing":
        (images / "b.jpg").unlink()
    else:
        (images / "b.jpg").write_bytes(b"not a jpeg")
    split = tmp_path / "list.txt"
    split.write_text("a.jpg\nb.jpg\n")
    out = tmp_path / "f/list.npy"
    says = [str(images), "expected a readable image for every name", "b.jpg"]
    check(Case(_features(tmp_path, split, out), says, [out, out.with_suffix(".json")]), capsys)


@pytest.mark.parametrize("out_name", ["list.txt", "list.npy"])  # the .txt copy would be LIST
def test_features_output_over_its_split_list(out_name: str, tmp_path: Path, capsys) -> None:
    _images(tmp_path, ["a.jpg"])
    split = tmp_path / "list.txt"
    split.write_text("a.jpg\n")
    out = tmp_path / out_name
    case = Case(
        _features(tmp_path, split, out),
        ["expected an output path other than the input", "list.txt"],
        [tmp_path / "list.npy", tmp_path / "list.json"],
        {split: b"a.jpg\n"},
    )
    check(case, capsys)


def test_skipped_image_is_a_nan_row_that_evaluation_refuses(tmp_path: Path, capsys) -> None:
    """on_bad_image: skip writes a NaN row and lists it; no metric is computed from it (the
    trainer refuses NaN rows as well, mlmm.retrieval)."""
    images = _images(tmp_path, ["a.jpg", "b.jpg"])
    (images / "b.jpg").unlink()
    split = tmp_path / "list.txt"
    split.write_text("a.jpg\nb.jpg\n")
    out = tmp_path / "f/list.npy"
    assert main(_features(tmp_path, split, out, "--on-bad-image", "skip")) == 0
    capsys.readouterr()
    features = np.load(out)
    assert np.isnan(features[1]).all() and np.isfinite(features[0]).all()
    metrics = tmp_path / "metrics.json"
    argv = ["eval-retrieval", "--images", str(out), "--captions", str(out), "--per-image", "1",
            "--out", str(metrics)]  # fmt: skip
    check(Case(argv, [str(out), "NaN or inf in 1 of 2 rows (first: row 1)"], [metrics]), capsys)


# ------------------------------------------------------------------------------------------
# evaluation


def test_eval_retrieval_all_nan_images(tmp_path: Path, capsys) -> None:
    images, captions = tmp_path / "allnan.npy", tmp_path / "c.npy"
    np.save(images, np.full((4, 3), np.nan, dtype=np.float32))
    np.save(captions, np.ones((20, 3), dtype=np.float32))
    out = tmp_path / "o.json"
    argv = ["eval-retrieval", "--images", str(images), "--captions", str(captions),
            "--per-image", "5", "--out", str(out)]  # fmt: skip
    check(Case(argv, ["allnan.npy", "finite values", "NaN or inf in 4 of 4 rows"], [out]), capsys)


def test_eval_retrieval_output_over_input(tmp_path: Path, capsys) -> None:
    images = tmp_path / "i.npy"
    np.save(images, np.eye(3, dtype=np.float32))
    content = images.read_bytes()
    argv = ["eval-retrieval", "--images", str(images), "--captions", str(images),
            "--per-image", "1", "--out", str(images)]  # fmt: skip
    check(Case(argv, ["i.npy", "an output path other than the input"], [], {images: content}),
          capsys)


def test_output_where_a_directory_cannot_be_made(tmp_path: Path, capsys) -> None:
    images = tmp_path / "i.npy"
    np.save(images, np.eye(3, dtype=np.float32))
    (tmp_path / "notes").write_text("a file, not a directory\n")
    out = tmp_path / "notes" / "o.json"  # the parent is a file (not an input: guard_outputs)
    argv = ["eval-retrieval", "--images", str(images), "--captions", str(images),
            "--per-image", "1", "--out", str(out)]  # fmt: skip
    check(Case(argv, ["notes", "expected an accessible path"], [out]), capsys)


def test_gzip_reader_reports_an_unreadable_file_as_such(tmp_path: Path, capsys) -> None:
    tree = write_tree(tmp_path / "m30k")
    path = tree / "data/task1/raw/val.fr.gz"
    path.unlink()
    path.mkdir()  # exists, but cannot be read as a file
    check(Case(["validate-multi30k", str(tree)], ["val.fr.gz", "expected an existing file"]),
          capsys)


# ------------------------------------------------------------------------------------------
# n-best lists: rerank, mira, mt-score

NBEST_DAMAGE = {
    "fields": (1, "0 ||| ein hund ||| NMT= -2.0 WordPenalty= -3", "expected 4 fields"),
    "number": (1, "0 ||| ein hund ||| NMT= x WordPenalty= -3 ||| -2.0", "expected a number"),
    "score": (1, "0 ||| ein hund ||| NMT= -2 WordPenalty= -3 ||| nan",
              "expected id >= 0 and a finite score"),
    "ids out of order": (3, "0 ||| ein mann ||| NMT= -0.7 WordPenalty= -2 ||| -0.7",
                         "expected sentence id 1 or 2"),
    "gap": (3, "3 ||| ein mann ||| NMT= -0.7 WordPenalty= -2 ||| -0.7",
            "expected sentence id 1 or 2"),
    "first id": (0, "1 ||| ein hund ||| NMT= -1.0 WordPenalty= -2 ||| -1.0",
                 "expected sentence id 0 first"),
}  # fmt: skip


def _nbest(tmp_path: Path, lines: list[str]) -> Path:
    path = tmp_path / "dev.nbest"
    path.write_text("".join(line + "\n" for line in lines))
    return path


@pytest.mark.parametrize("damage", list(NBEST_DAMAGE))
@pytest.mark.parametrize("command", ["rerank", "mira"])
def test_malformed_nbest_line(command: str, damage: str, tmp_path: Path, capsys) -> None:
    index, line, says = NBEST_DAMAGE[damage]
    lines = list(GOOD_NBEST)
    lines[index] = line
    nbest = _nbest(tmp_path, lines)
    ref = tmp_path / "ref"
    ref.write_text("ein hund\nzwei katzen\nein mann\n")
    out = tmp_path / "out"
    argv = [command, "--nbest", str(nbest), "--out", str(out)]
    if command == "mira":
        argv += ["--ref", str(ref), "--iters", "2"]
    check(Case(argv, [f"dev.nbest, line {index + 1}: {says}"], [out]), capsys)


@pytest.mark.parametrize("ref_lines", [2, 4])
def test_mira_reference_of_another_length(ref_lines: int, tmp_path: Path, capsys) -> None:
    nbest = _nbest(tmp_path, GOOD_NBEST)
    ref = tmp_path / "ref"
    ref.write_text("".join(f"line {i}\n" for i in range(ref_lines)))
    out, history = tmp_path / "w", tmp_path / "h.csv"
    argv = ["mira", "--nbest", str(nbest), "--ref", str(ref), "--iters", "2",
            "--out", str(out), "--history", str(history)]  # fmt: skip
    says = [f"{ref}: expected 3 lines, one per sentence", f"found {ref_lines}"]
    check(Case(argv, says, [out, history]), capsys)


@pytest.mark.parametrize("source_lines", [2, 4])
def test_nbest_features_source_of_another_length(source_lines: int, tmp_path: Path, capsys):
    nbest = _nbest(tmp_path, GOOD_NBEST)
    source = tmp_path / "src.en"
    source.write_text("".join(f"a dog {i}\n" for i in range(source_lines)))
    out = tmp_path / "with.nbest"
    argv = ["nbest-features", "--nbest", str(nbest), "--source", str(source), "--out", str(out)]
    says = [f"{source}: expected 3 lines, one per sentence", f"found {source_lines}"]
    check(Case(argv, says, [out]), capsys)


@pytest.mark.parametrize("hyp_lines", [2, 4])
def test_mt_score_hypotheses_of_another_length(hyp_lines: int, tmp_path: Path, capsys) -> None:
    hyp, ref = tmp_path / "hyp", tmp_path / "ref"
    hyp.write_text("".join(f"ein hund {i}\n" for i in range(hyp_lines)))
    ref.write_text("ein hund\nzwei katzen\nein mann\n")
    out = tmp_path / "s.json"
    argv = ["mt-score", "--hyp", str(hyp), "--ref", str(ref), "--meteor-jar", "none",
            "--system", "NMT", "--out", str(out)]  # fmt: skip
    check(Case(argv, [str(hyp), "expected 3 lines", f"found {hyp_lines}"], [out]), capsys)


def test_rerank_and_mira_output_over_input(tmp_path: Path, capsys) -> None:
    nbest = _nbest(tmp_path, GOOD_NBEST)
    ref = tmp_path / "ref"
    ref.write_text("ein hund\nzwei katzen\nein mann\n")
    kept = {nbest: nbest.read_bytes(), ref: ref.read_bytes()}
    says = ["expected an output path other than the input"]
    check(Case(["rerank", "--nbest", str(nbest), "--out", str(nbest)], says, [], kept), capsys)
    argv = ["mira", "--nbest", str(nbest), "--ref", str(ref), "--out", str(ref)]
    check(Case(argv, says, [], kept), capsys)


def test_rerank_orders_by_sentence_id_end_to_end(tmp_path: Path) -> None:
    """A well-formed list gives its 1-best in id order (the reference order)."""
    nbest = NBestList(
        [("NMT", 1)], [0, 1], [["a b", "a"], ["c"]],
        [np.array([[-1.0], [-2.0]]), np.array([[-1.0]])], [np.zeros(2), np.zeros(1)],
    )  # fmt: skip
    write_nbest(tmp_path / "l.nbest", nbest)
    assert main(["rerank", "--nbest", str(tmp_path / "l.nbest"), "--out", str(tmp_path / "1")]) == 0
    assert (tmp_path / "1").read_text() == "a b\nc\n"


# ------------------------------------------------------------------------------------------
# generators: demo-world, demo-coco


@pytest.mark.parametrize("command", ["demo-world", "demo-coco"])
def test_generator_refuses_a_directory_it_did_not_make(command: str, tmp_path: Path, capsys):
    out = tmp_path / "mine"
    out.mkdir()
    (out / "notes.txt").write_text("my notes\n")
    says = [str(out), "expected an empty directory or", "without", "--force"]
    check(Case([command, str(out)], says, [], {out / "notes.txt": b"my notes\n"}), capsys)
    assert sorted(p.name for p in out.iterdir()) == ["notes.txt"]


# ------------------------------------------------------------------------------------------
# configuration, through `snakemake -n` (checked before any job starts)

CONFIG_DAMAGE = {
    "misspelt key": ("retrieval:\n  defaults:\n    epochz: 3\n",
                     ["key 'retrieval.defaults.epochz'", "found unknown key 'epochz'"]),
    "type": ("retrieval:\n  defaults:\n    epochs: ten\n",
             ["key 'retrieval.defaults.epochs'", "expected type ['integer']", "found 'ten'"]),
    "epochs": ("retrieval:\n  defaults:\n    epochs: -3\n",
               ["key 'retrieval.defaults.epochs'", "expected a number >= 1", "found -3"]),
    "seeds": ("retrieval:\n  variants:\n    monolingual:\n      seeds: 0\n",
              ["key 'retrieval.variants.monolingual.seeds'", ">= 1", "found 0"]),
    "batch size": ("retrieval:\n  defaults:\n    batch_size: 0\n", ["batch_size'", ">= 2"]),
    "checkpoint": ("retrieval:\n  defaults:\n    checkpoint_every: 0\n",
                   ["checkpoint_every'", ">= 1", "found 0"]),
    "hidden": ("retrieval:\n  defaults:\n    hidden: 0\n", ["hidden'", ">= 1", "found 0"]),
    "rate": ("retrieval:\n  defaults:\n    optimizer: {lr: 0}\n", ["optimizer.lr'", "> 0"]),
    "probability": ("retrieval:\n  defaults:\n    dropout: 1.5\n", ["dropout'", "< 1"]),
    "variant path": ("retrieval:\n  variants:\n    ../../escape: {}\n",
                     ["key 'retrieval.variants'", "found '../../escape'"]),
    "unknown variant": ("retrieval:\n  run: [monolingual, nosuch]\n",
                        ["key 'retrieval.run[1]'", "found 'nosuch'"]),
}  # fmt: skip


@pytest.mark.parametrize("damage", list(CONFIG_DAMAGE))
def test_config_error_is_one_line_naming_the_file_and_key(damage: str, tmp_path: Path) -> None:
    text, says = CONFIG_DAMAGE[damage]
    override = tmp_path / "override.yaml"
    override.write_text(text)
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}"}
    result = subprocess.run(
        [str(BIN / "snakemake"), "-n", "-s", str(REPO / "Snakefile"), "-d", str(tmp_path / "w"),
         "--configfile", str(override)],
        capture_output=True, text=True, env=env, check=False,
    )  # fmt: skip
    assert result.returncode != 0
    errors = [line for line in result.stderr.splitlines() if line.startswith("config error:")]
    assert len(errors) == 1, result.stderr[-3000:]
    assert "Traceback" not in result.stderr and "properties:" not in result.stderr
    assert f"config error: {override}, key" in errors[0]  # blamed on the override file
    for fragment in says:
        assert fragment in errors[0], errors[0]
    assert not (tmp_path / "w/results").exists()


def test_a_config_value_given_with_dash_dash_config_is_blamed_on_the_command_line(
    tmp_path: Path,
) -> None:
    """demo_world.images is set in config.yaml too: the error names --config, which set it."""
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}"}
    result = subprocess.run(
        [str(BIN / "snakemake"), "-n", "-s", str(REPO / "Snakefile"), "-d", str(tmp_path),
         "--config", "demo_world={images: -5}"],
        capture_output=True, text=True, env=env, check=False,
    )  # fmt: skip
    errors = [line for line in result.stderr.splitlines() if line.startswith("config error:")]
    assert result.returncode != 0 and len(errors) == 1, result.stderr[-3000:]
    assert errors[0].startswith("config error: --config (command line), key 'demo_world.images'")


def test_config_error_in_config_yaml_is_blamed_on_it(tmp_path: Path) -> None:
    from mlmm.config import validate_config
    from mlmm.errors import InputError

    base, override = tmp_path / "config.yaml", tmp_path / "o.yaml"
    base.write_text("retrieval:\n  defaults:\n    epochs: 0\n")
    override.write_text("retrieval:\n  threads: 2\n")
    config = {"retrieval": {"defaults": {"epochs": 0}, "threads": 2}}
    with pytest.raises(InputError, match=rf"^{re.escape(str(base))}, key 'retrieval.defaults"):
        validate_config(config, REPO / "workflow/schemas/config.schema.yaml", [base, override])


# ------------------------------------------------------------------------------------------
# every `mlmm` command the workflow schedules is accepted by the CLI's own parser


def _scheduled_commands(config: list[str], workdir: Path) -> list[list[str]]:
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}"}
    for name in PAPER_LOCAL_DATA.values():
        provide_local_data(workdir, name)
    result = subprocess.run(
        [str(BIN / "snakemake"), "-n", "-p", "-s", str(REPO / "Snakefile"), "-d", str(workdir),
         *config],
        capture_output=True, text=True, env=env, check=True,
    )  # fmt: skip
    commands = []
    for line in (result.stdout + result.stderr).splitlines():
        if not line.startswith("Shell command: "):
            continue
        words = shlex.split(line.removeprefix("Shell command: "))
        while words:
            cut = next((i for i, w in enumerate(words) if w in ("&&", ";", "|", ">", "2>&1")),
                       len(words))  # fmt: skip
            if words[0] == "mlmm":
                commands.append(words[1:cut])
            words = words[cut + 1 :]
    return commands


@pytest.mark.parametrize("config", [[], ["--configfile", str(REPO / "config/paper.yaml")]])
def test_every_scheduled_mlmm_command_parses(config: list[str], tmp_path: Path) -> None:
    commands = _scheduled_commands(config, tmp_path)
    assert len(commands) > 20
    parser = build_parser()
    for argv in commands:
        args = parser.parse_args(argv)  # SystemExit (argparse's "invalid choice") fails it
        check_options(args)  # the schema's ranges, as `mlmm` checks them before running
    if config:
        backbones = {a[a.index("--backbone") + 1] for a in commands if "--backbone" in a}
        assert {"alexnet_fc6", "resnet50", "vgg19", "resnet152"} <= backbones


def test_every_missing_local_data_set_of_the_paper_config_is_named_at_once(tmp_path):
    """`snakemake -n` names the key and the path, not a job hours into the run; every
    missing set in one message (it took five runs, one set each), and an empty
    directory is no copy."""
    (tmp_path / "semeval-sts").mkdir()
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}"}
    result = subprocess.run(
        [str(BIN / "snakemake"), "-n", "-s", str(REPO / "Snakefile"), "-d", str(tmp_path),
         "--configfile", str(REPO / "config/paper.yaml")],
        capture_output=True, text=True, env=env,
    )  # fmt: skip
    assert result.returncode != 0 and "Traceback" not in result.stderr
    message = result.stderr[result.stderr.index("config error") :].splitlines()
    assert message[0].startswith(f"config error: {len(PAPER_LOCAL_DATA)} local data set(s)")
    for key, name in PAPER_LOCAL_DATA.items():
        (line,) = [line for line in message[1:] if f"key '{key}'" in line]
        assert f"'{Path(name).parent if name.endswith('.jar') else name}'" in line, line
        found = "an empty directory" if name == "semeval-sts" else "nothing there"
        assert f"found {found}" in line, line


@pytest.mark.parametrize("config", [[], ["--configfile", "config/paper.yaml"]])
def test_every_path_in_every_shell_command_survives_spaces(config: list[str], tmp_path: Path):
    """With `results: "my results"` an unquoted log redirect wrote to ./my, and a
    checkout path with a space broke the table jobs. Every path placeholder is quoted (`:q`, or
    shlex.quote inside option strings): no command word is a piece of a split path."""
    from helpers.workflow import copy_workflow

    checkout = copy_workflow(tmp_path / "my checkout")
    workdir = tmp_path / "my run"
    workdir.mkdir()
    for name in PAPER_LOCAL_DATA.values():
        provide_local_data(workdir, name)
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}"}
    config = [str(REPO / c) if c.endswith(".yaml") else c for c in config]
    result = subprocess.run(
        [str(BIN / "snakemake"), "-n", "-p", "-s", str(checkout / "Snakefile"), "-d",
         str(workdir), *config, "--config", "results=my results"],
        capture_output=True, text=True, env=env, check=True,
    )  # fmt: skip
    words = [
        word
        for line in (result.stdout + result.stderr).splitlines()
        if line.startswith("Shell command: ")
        for word in shlex.split(line.removeprefix("Shell command: "))
    ]
    assert len(words) > 200 and any(w.startswith("my results/") for w in words)
    split = [w for w in words if w in ("my", "run", "checkout") or w.endswith(("/my", "=my"))
             or w.startswith(("results/", "checkout/", "run/"))]  # fmt: skip
    assert not split, split[:10]


def test_a_key_named_twice_in_a_config_file_is_refused_naming_file_and_line(tmp_path: Path):
    """PyYAML would keep the last value without a word."""
    override = tmp_path / "mine.yaml"
    override.write_text("retrieval:\n  threads: 2\n  threads: 4\n")
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}"}
    result = subprocess.run(
        [str(BIN / "snakemake"), "-n", "-s", str(REPO / "Snakefile"), "-d", str(tmp_path / "w"),
         "--configfile", str(override)],
        capture_output=True, text=True, env=env, check=False,
    )  # fmt: skip
    errors = [line for line in result.stderr.splitlines() if line.startswith("config error:")]
    assert result.returncode != 0 and len(errors) == 1, result.stderr[-3000:]
    assert errors[0] == (
        f"config error: {override}, line 3: expected each key once per mapping, "
        "found 'threads' twice"
    )


def test_a_byte_order_mark_is_dropped_where_text_is_read(tmp_path: Path):
    """A BOM from a Windows editor is no part of the first word (a vocabulary entry, a BLEU
    token): documented normalisation in mlmm.io.read_lines."""
    from mlmm.io import read_lines

    path = tmp_path / "hyp.de"
    path.write_bytes("\ufeffa house\nein Haus\n".encode())
    assert read_lines(path) == ["a house", "ein Haus"]
