"""Bad values given to a subcommand by hand: the workflow's schema checks them.

Each numeric option is declared against a key of ``workflow/schemas/config.schema.yaml``
(``mlmm.schema.checked_option``), and a config record a command reads itself is validated with
the schema's sub-schema, so a value Snakemake would refuse is refused on the command line too:
one line naming the option (or file and key), what was expected and what was found, exit 2,
nothing written. The rows are in docs/bad_inputs.md.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest
from helpers.one_line import one_line_error

from mlmm.cli import build_parser
from mlmm.schema import CHECKS, checked_option, plainly_within, schema, subschema, value_error

OPTION_CASES = {
    "mira --iters 0": (
        ["mira", "--nbest", "n", "--ref", "r", "--out", "OUT/w", "--iters", "0"],
        "--iters: expected a number >= 1, found 0",
    ),
    "mira --c nan": (
        ["mira", "--nbest", "n", "--ref", "r", "--out", "OUT/w", "--c", "nan"],
        "--c: expected a finite number, found nan",
    ),
    "mira --c -1": (
        ["mira", "--nbest", "n", "--ref", "r", "--out", "OUT/w", "--c", "-1"],
        "--c: expected a number > 0, found -1.0",
    ),
    "nbest --threads 0": (
        ["nbest", "--config", "b.json", "--model", "m.pt", "--source", "s", "--out", "OUT/n",
         "--threads", "0"],
        "--threads: expected a number >= 1, found 0",
    ),
    "train-nmt --threads 0": (
        ["train-nmt", "--config", "r.json", "--data", "d", "--out", "OUT/m.pt", "--history",
         "OUT/h.csv", "--metrics", "OUT/m.json", "--threads", "0"],
        "--threads: expected a number >= 1, found 0",
    ),
    "ted-train --lambda -1": (
        ["ted-train", "--config", "r.json", "--bow", "b", "--out-dir", "OUT/run",
         "--lambda", "-1"],
        "--lambda: expected a number >= 0, found -1.0",
    ),
    "ted-tune --jobs 0": (
        ["ted-tune", "--config", "r.json", "--bow", "b", "--runs", "r", "--out", "OUT/t.json",
         "--jobs", "0"],
        "--jobs: expected a number >= 1, found 0",
    ),
}  # fmt: skip


@pytest.mark.parametrize("case", list(OPTION_CASES), ids=list(OPTION_CASES))
def test_an_impossible_option_value_is_one_line_naming_the_option(case, tmp_path, capsys,
                                                                  monkeypatch):
    argv, says = OPTION_CASES[case]
    monkeypatch.chdir(tmp_path)
    (tmp_path / "OUT").mkdir()
    line = one_line_error(argv, capsys)
    assert says in line, line
    assert not any((tmp_path / "OUT").iterdir())


def _retrieval_argv(tmp_path: Path, source: list[str]) -> list[str]:
    return ["train-retrieval", *source, "--variant", "a", "--seed", "1",
            "--out", str(tmp_path / "OUT" / "a"), "--data-root", str(tmp_path / "d"),
            "--features-root", str(tmp_path / "f"), "--threads", "1"]  # fmt: skip


@pytest.mark.parametrize(
    "variant, says",
    [
        ("epochs: 0", "key 'retrieval.variants.a.epochs': expected a number >= 1, found 0"),
        ("batch_size: 1", "key 'retrieval.variants.a.batch_size': expected a number >= 2, found 1"),
        ("margin: -1", "key 'retrieval.variants.a.margin': expected a number >= 0, found -1"),
        ("margin: .nan", "key 'retrieval.variants.a.margin': expected a finite number, found nan"),
    ],
    ids=["epochs 0", "batch 1", "margin -1", "margin nan"],
)
def test_train_retrieval_config_is_validated_by_the_schema(variant, says, tmp_path, capsys):
    config = tmp_path / "mine.yaml"
    config.write_text(f"retrieval:\n  variants:\n    a:\n      {variant}\n", encoding="utf-8")
    line = one_line_error(_retrieval_argv(tmp_path, ["--config", str(config)]), capsys)
    assert f"mine.yaml, {says}" in line, line
    assert not (tmp_path / "OUT").exists()


def test_train_retrieval_record_file_is_validated_by_the_schema(tmp_path, capsys):
    """The JSON record the workflow passes as --config is checked like a config file."""
    record = tmp_path / "record.json"
    record.write_text(json.dumps({"retrieval": {"variants": {"a": {"epochs": 0}}}}))
    line = one_line_error(_retrieval_argv(tmp_path, ["--config", str(record)]), capsys)
    assert "record.json, key 'retrieval.variants.a.epochs': expected a number >= 1" in line
    assert not (tmp_path / "OUT").exists()


def test_every_checked_default_satisfies_the_schema():
    """A default the schema refuses would make every plain run fail; and each pointer exists."""
    parser = build_parser()
    subparsers = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    checked = 0
    for name, sub in subparsers.choices.items():
        for dest, (option, pointer) in (sub.get_default(CHECKS) or {}).items():
            default = sub.get_default(dest)
            checked += 1
            if default is not None:
                assert value_error(default, subschema(pointer)) is None, (name, option, default)
    assert checked >= 40


def _edges(node: dict) -> list:
    """Values at and around every bound of a range node, of every numeric kind."""
    bounds = [node[k] for k in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum")
              if k in node]  # fmt: skip
    near = [b + d for b in bounds for d in (-1, -0.5, -1e-9, 0, 1e-9, 0.5, 1)]
    values = [0, 1, -1, 10**12, -(10**12), 0.5, 1e300, True, False, "1", None, *near]
    return values + [int(v) for v in near] + [float(v) for v in near]


def test_the_fast_range_check_never_passes_what_jsonschema_refuses():
    """mlmm.schema.plainly_within decides plain ranges without jsonschema (kept off start-up):
    for every checked option of every subcommand, at the edges of its range, a value it passes
    is one jsonschema passes; and it decides most of the options' defaults."""
    import jsonschema

    parser = build_parser()
    subparsers = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    options = decided = 0
    for name, sub in subparsers.choices.items():
        for dest, (option, pointer) in (sub.get_default(CHECKS) or {}).items():
            node = subschema(pointer)
            rule = {k: v for k, v in node.items() if k not in ("default", "description")}
            validator = jsonschema.validators.validator_for(schema())(
                {**rule, "$defs": schema()["$defs"]})
            for value in _edges(node):
                if plainly_within(value, node):
                    assert validator.is_valid(value), (name, option, value)
            options += 1
            decided += plainly_within(sub.get_default(dest), node)
    assert options >= 50 and decided >= options // 2, (options, decided)


def test_mira_starts_without_jsonschema(tmp_path):
    """`mlmm mira` (options within plain ranges) never imports jsonschema: its import is a
    large share of the start-up of a command that otherwise needs numpy only."""
    import subprocess
    import sys

    code = ("import sys\nfrom mlmm.cli import main\n"
            "main(['mira', '--nbest', 'x.nbest', '--ref', 'x.ref'])\n")
    probe = ("import runpy, sys\ntry:\n    runpy.run_path('run.py')\nexcept SystemExit:\n"
             "    pass\nprint('jsonschema' in sys.modules)\n")
    (tmp_path / "run.py").write_text(code, encoding="utf-8")
    done = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, capture_output=True,
                          text=True, check=True)  # fmt: skip
    assert done.stdout.strip().splitlines()[-1] == "False", done.stdout + done.stderr


def test_a_checked_option_takes_the_range_of_its_config_key():
    """The CLI range is the schema's, not a copy: nmt.mira.c is exclusiveMinimum 0."""
    node = subschema("nmt.mira.c")
    assert node["exclusiveMinimum"] == 0
    assert value_error(0.0, node) == ("a number > 0", "0.0")
    assert value_error(0.5, node) is None
    assert value_error(float("nan"), node) == ("a finite number", "nan")
    assert subschema("ted.lambdas[]") == {"type": "number", "minimum": 0}


def test_a_checked_option_takes_its_default_from_its_config_key():
    """No default is written beside the option: it is the schema's, as its type reads it; a
    required option has none."""
    parser = argparse.ArgumentParser()
    checked_option(parser, "--c", "nmt.mira.c", type=float)
    checked_option(parser, "--iters", "nmt.mira.iters", type=int, required=True)
    args = parser.parse_args(["--iters", "3"])
    assert args.c == subschema("nmt.mira.c")["default"] and type(args.c) is float
    assert parser.get_default("iters") is None


def test_a_checked_option_refuses_a_second_copy_of_its_config_keys_default():
    """A default given beside the schema's (equal or not) fails when the parser is built; a
    tool whose default deliberately differs says so with own_default, which must differ."""
    config_default = subschema("nmt.mira.iters")["default"]
    for given in (config_default, config_default + 1):
        with pytest.raises(TypeError, match="--iters: default=.* the schema's default"):
            checked_option(argparse.ArgumentParser(), "--iters", "nmt.mira.iters", type=int,
                           default=given)
    with pytest.raises(TypeError, match="own_default=.* is the schema's default"):
        checked_option(argparse.ArgumentParser(), "--iters", "nmt.mira.iters", type=int,
                       own_default=config_default)
    with pytest.raises(TypeError, match="no schema default"):
        checked_option(argparse.ArgumentParser(), "--jobs", "$defs.cli_options.jobs", type=int,
                       own_default=2)
    parser = argparse.ArgumentParser()
    checked_option(parser, "--iters", "nmt.mira.iters", type=int, own_default=config_default + 1)
    assert parser.parse_args([]).iters == config_default + 1


# ------------------------------------------------------------------------------------------
# outputs over inputs: mlmm.io.guard_outputs before anything is read or written

from helpers.one_line import Case, check  # noqa: E402

from mlmm.config import validate_config  # noqa: E402
from mlmm.io import SHIPPED_PAPER_TABLES  # noqa: E402
from mlmm.schema import SCHEMA_PATH  # noqa: E402


def _files(root: Path, *names: str) -> dict[Path, bytes]:
    """Stand-in inputs (the guard refuses before reading them) and their bytes, to stay."""
    out = {}
    for name in names:
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(f"input {name}\n".encode())
        out[path] = path.read_bytes()
    return out


def test_nbest_output_over_its_source(tmp_path, capsys):
    inputs = _files(tmp_path, "m.pt", "src.en")
    argv = ["nbest", "--config", str(tmp_path / "b.json"), "--model", str(tmp_path / "m.pt"),
            "--source", str(tmp_path / "src.en"),
            "--out", str(tmp_path / "src.en")]  # fmt: skip
    check(Case(argv, ["src.en", "expected an output path other than the input"],
               intact=inputs), capsys)  # fmt: skip


def test_nbest_stats_over_the_model_through_a_symlink(tmp_path, capsys):
    inputs = _files(tmp_path, "m.pt", "src.en")
    (tmp_path / "link.json").symlink_to(tmp_path / "m.pt")
    argv = ["nbest", "--config", str(tmp_path / "b.json"), "--model", str(tmp_path / "m.pt"),
            "--source", str(tmp_path / "src.en"),
            "--out", str(tmp_path / "o.nbest"), "--stats", str(tmp_path / "link.json")]  # fmt: skip
    check(Case(argv, ["link.json", "found the input itself"], [tmp_path / "o.nbest"], inputs),
          capsys)  # fmt: skip


def test_nbest_features_output_over_its_image_array(tmp_path, capsys):
    inputs = _files(tmp_path, "dev.nbest", "src.en", "img.npy", "model.pt")
    argv = ["nbest-features", "--nbest", str(tmp_path / "dev.nbest"),
            "--source", str(tmp_path / "src.en"), "--images", f"v={tmp_path / 'img.npy'}",
            "--feature", f"v=image:{tmp_path / 'model.pt'}", "--out", str(tmp_path / "img.npy")]
    check(Case(argv, ["img.npy", "found the input itself"], intact=inputs), capsys)


def test_train_nmt_outputs_inside_its_data_directory(tmp_path, capsys):
    inputs = _files(tmp_path, "data/train.lc.norm.tok.en")
    data = tmp_path / "data"
    argv = ["train-nmt", "--config", str(tmp_path / "r.json"), "--data", str(data),
            "--out", str(data / "m.pt"),
            "--history", str(tmp_path / "h.csv"), "--metrics", str(tmp_path / "m.json")]
    says = ["m.pt", f"expected an output path outside the input {data}"]
    check(Case(argv, says, [data / "m.pt", tmp_path / "h.csv"], inputs), capsys)


def test_train_nmt_two_outputs_on_one_path(tmp_path, capsys):
    argv = ["train-nmt", "--config", str(tmp_path / "r.json"), "--data", str(tmp_path / "data"),
            "--out", str(tmp_path / "m.pt"),
            "--history", str(tmp_path / "h.csv"), "--metrics", str(tmp_path / "h.csv")]
    check(Case(argv, ["h.csv", "expected distinct output paths"], [tmp_path / "h.csv"]), capsys)


def test_train_nmt_metrics_over_its_record(tmp_path, capsys):
    inputs = _files(tmp_path, "r.json")
    argv = ["train-nmt", "--config", str(tmp_path / "r.json"), "--data", str(tmp_path / "data"),
            "--out", str(tmp_path / "m.pt"),
            "--history", str(tmp_path / "h.csv"), "--metrics", str(tmp_path / "r.json")]
    check(Case(argv, ["r.json", "found the input itself"], [tmp_path / "m.pt"], inputs), capsys)


def test_ted_classify_output_over_its_tuning(tmp_path, capsys):
    inputs = _files(tmp_path, "bow/meta.json", "tuning.json", "r.json")
    argv = ["ted-classify", "--config", str(tmp_path / "r.json"), "--bow", str(tmp_path / "bow"),
            "--tuning",
            str(tmp_path / "tuning.json"), "--source", "fr", "--out", str(tmp_path / "bow")]
    says = ["bow", "expected an output path other than the input"]
    check(Case(argv, says, intact=inputs), capsys)


def test_features_output_onto_an_image_it_reads(tmp_path, capsys):
    inputs = _files(tmp_path, "images/a.jpg", "list.txt")
    argv = ["features", "--backbone", "efficientnet_lite0", "--images", str(tmp_path / "images"),
            "--split",
            str(tmp_path / "list.txt"), "--out", str(tmp_path / "images/a.npy")]
    says = ["a.npy", f"expected an output path outside the input {tmp_path / 'images'}"]
    check(Case(argv, says, [tmp_path / "images/a.npy"], inputs), capsys)


def _empty_record(tmp_path: Path) -> Path:
    """A retrieval record with no variants, as the workflow writes one (JSON)."""
    record = tmp_path / "retrieval_tables.json"
    record.write_text('{"retrieval": {}}\n', encoding="utf-8")
    return record


def test_retrieval_tables_into_the_paper_tables(tmp_path, capsys):
    paper = tmp_path / "paper_tables"
    inputs = _files(tmp_path, "paper_tables/kadar2018_table2.csv")
    argv = ["retrieval-tables", "--config", str(_empty_record(tmp_path)), "--runs",
            "--paper-tables", str(paper), "--out", str(paper)]
    check(Case(argv, ["expected an output path other than the input"], intact=inputs), capsys)


def test_retrieval_tables_into_the_shipped_paper_tables(tmp_path, capsys):
    csvs = {p: p.read_bytes() for p in SHIPPED_PAPER_TABLES.glob("*.csv")}
    assert csvs
    argv = ["retrieval-tables", "--config", str(_empty_record(tmp_path)), "--runs", "--out",
            str(SHIPPED_PAPER_TABLES)]  # fmt: skip
    check(Case(argv, ["expected an output path other than the input"], intact=csvs), capsys)


def test_ted_tables_into_the_paper_tables(tmp_path, capsys):
    paper = tmp_path / "paper_tables"
    inputs = _files(tmp_path, "paper_tables/rajendran2016_table1.csv", "cldc.json", "nb.json")
    argv = ["ted-tables", "--cldc", str(tmp_path / "cldc.json"), "--nb", str(tmp_path / "nb.json"),
            "--paper-tables", str(paper), "--out-dir", str(paper)]
    check(Case(argv, ["expected an output path other than the input"], intact=inputs), capsys)


def test_fetch_multi30k_with_its_manifest_inside_out(tmp_path, capsys):
    inputs = _files(tmp_path, "copy/m.sha256", "mirror/a.txt")
    argv = ["fetch-multi30k", "--manifest", str(tmp_path / "copy/m.sha256"),
            "--mirror", str(tmp_path / "mirror"), "--out", str(tmp_path / "copy")]
    says = ["copy", "expected an output path that does not hold the input", "m.sha256"]
    check(Case(argv, says, [tmp_path / "copy/MANIFEST.sha256"], inputs), capsys)


@pytest.mark.parametrize("paper", ["results/tables", "results/tables/paper", "results"])
def test_paper_tables_where_the_workflow_writes_its_tables(paper, tmp_path, monkeypatch):
    from mlmm.errors import InputError

    monkeypatch.chdir(tmp_path)
    with pytest.raises(InputError, match="key 'paper_tables': expected a directory apart from"):
        validate_config({"paper_tables": paper}, SCHEMA_PATH)
    assert validate_config({"paper_tables": "mine"}, SCHEMA_PATH)["paper_tables"] == "mine"


# ------------------------------------------------------------------------------------------
# wrong input, plausible numbers: feature arrays, n-best images, MIRA weights

import numpy as np  # noqa: E402
from helpers.features import write_array  # noqa: E402

from mlmm.arrays import check_feature_rows  # noqa: E402
from mlmm.errors import InputError  # noqa: E402
from mlmm.nbest import NBestList, write_nbest  # noqa: E402
from mlmm.retrieval.data import load_features  # noqa: E402

VAL, TEST = ["v1.jpg", "v2.jpg", "v3.jpg"], ["t1.jpg", "t2.jpg", "t3.jpg"]


def _features(root: Path, split: str, names: list[str]) -> Path:
    """An array as mlmm features writes it: <split>.npy, the list copy <split>.txt and the
    sidecar <split>.json with the array's record."""
    rows = np.arange(1, 3 * len(names) + 1, dtype=np.float32).reshape(len(names), 3)
    write_array(root / "bb" / f"{split}.npy", rows, names)
    return root / "bb" / f"{split}.npy"


def test_swapped_val_and_test_features_are_refused(tmp_path):
    _features(tmp_path / "made", "test", TEST)
    (tmp_path / "bb").mkdir()
    for suffix in (".npy", ".txt"):  # the user copied test's array over val's
        (tmp_path / "bb" / f"val{suffix}").write_bytes(
            (tmp_path / "made/bb" / f"test{suffix}").read_bytes()
        )
    with pytest.raises(InputError) as error:
        load_features(tmp_path, "bb", "val", VAL)
    assert str(error.value) == (
        f"{tmp_path / 'bb/val.txt'}, line 1: expected 'v1.jpg' (row 1 of the val image list: "
        "rows in list order), found 't1.jpg'"
    )


def test_reordered_feature_rows_are_refused(tmp_path):
    _features(tmp_path, "val", VAL[::-1])
    with pytest.raises(InputError, match=r"val\.txt, line 1: expected 'v1.jpg' .* found 'v3.jpg'"):
        load_features(tmp_path, "bb", "val", VAL)


def test_a_feature_array_without_its_list_copy_is_refused(tmp_path):
    _features(tmp_path, "val", VAL)
    (tmp_path / "bb/val.txt").unlink()
    with pytest.raises(InputError, match=r"val\.txt: expected the image list copy written beside"):
        load_features(tmp_path, "bb", "val", VAL)
    _features(tmp_path, "val", VAL)
    assert load_features(tmp_path, "bb", "val", VAL).shape == (3, 3)  # the copy matches


ROW_DAMAGE = {
    "all-zero row": (lambda a: a.__setitem__(1, 0.0) or a,
                     "expected rows with a non-zero norm", "1 all-zero row(s) of 3 (first: row 1)"),
    "tiny row": (lambda a: a.__setitem__(2, 1e-30) or a,
                 "expected row norms within [1e-15, 1e+15]", "(first: row 2, norm 1.73e-30)"),
    "huge row": (lambda a: a.__setitem__(0, 1e30) or a,
                 "expected row norms within [1e-15, 1e+15]", "(first: row 0, norm 1.73e+30)"),
    "zero width": (lambda a: a[:, :0], "expected a 2-d array with at least one column",
                   "shape (3, 0)"),
    "complex": (lambda a: a.astype(np.complex64) + 1j, "expected a real-valued array",
                "complex64 values"),
}  # fmt: skip


@pytest.mark.parametrize("damage", list(ROW_DAMAGE), ids=list(ROW_DAMAGE))
def test_feature_rows_that_would_tie_are_refused(damage, tmp_path):
    change, expected, found = ROW_DAMAGE[damage]
    path = _features(tmp_path, "val", VAL)
    rows = change(np.load(path).astype(np.float64))
    write_array(path, rows, VAL)  # written so by its maker: its record is its own
    with pytest.raises(InputError) as error:
        load_features(tmp_path, "bb", "val", VAL)
    assert str(path) in str(error.value) and expected in str(error.value), error.value
    assert found in str(error.value), error.value


def test_check_feature_rows_keeps_ordinary_features():
    rows = np.array([[0.1, 2.0], [300.0, -4.0]], dtype=np.float64)
    out = check_feature_rows(rows, "x.npy")
    assert out.dtype == np.float32 and np.allclose(out, rows)


def _two_sentences(tmp_path: Path) -> tuple[Path, Path]:
    nbest = NBestList(
        [("NMT", 1)], [0, 1], [["a b", "a"], ["c"]],
        [np.array([[-1.0], [-2.0]]), np.array([[-1.0]])], [np.zeros(2), np.zeros(1)],
    )  # fmt: skip
    write_nbest(tmp_path / "l.nbest", nbest)
    (tmp_path / "src.en").write_text("x y\nz\n")
    return tmp_path / "l.nbest", tmp_path / "src.en"


def test_nbest_features_images_with_more_rows_than_sentences(tmp_path, capsys):
    nbest, source = _two_sentences(tmp_path)
    write_array(tmp_path / "img.npy", np.ones((3, 4), dtype=np.float32))
    argv = ["nbest-features", "--nbest", str(nbest), "--source", str(source),
            "--images", f"v={tmp_path / 'img.npy'}", "--out", str(tmp_path / "o.nbest")]
    says = ["img.npy: expected 2 rows, one per sentence of", "found 3 rows"]
    check(Case(argv, says, [tmp_path / "o.nbest"]), capsys)


def test_nbest_features_images_with_an_all_zero_row(tmp_path, capsys):
    nbest, source = _two_sentences(tmp_path)
    images = np.ones((2, 4), dtype=np.float32)
    images[1] = 0
    write_array(tmp_path / "img.npy", images)
    argv = ["nbest-features", "--nbest", str(nbest), "--source", str(source),
            "--images", f"v={tmp_path / 'img.npy'}", "--out", str(tmp_path / "o.nbest")]
    check(Case(argv, ["img.npy", "non-zero norm", "row 1"], [tmp_path / "o.nbest"]), capsys)


def test_rerank_with_an_empty_weights_file(tmp_path, capsys):
    nbest, _ = _two_sentences(tmp_path)
    (tmp_path / "w.txt").write_text("")
    argv = ["rerank", "--nbest", str(nbest), "--weights", str(tmp_path / "w.txt"),
            "--out", str(tmp_path / "1best")]
    says = ["w.txt: expected at least one 'Name= w ...' line", "found an empty file"]
    check(Case(argv, says, [tmp_path / "1best"]), capsys)


def test_prepare_coco_output_holding_its_annotations(tmp_path, capsys):
    inputs = _files(tmp_path, "coco/annotations/dataset_coco.json", "ja.json", "mic/images.txt")
    argv = ["prepare-coco", "--karpathy", str(tmp_path / "coco/annotations/dataset_coco.json"),
            "--japanese", str(tmp_path / "ja.json"), "https://example.org/ja_val.json",
            "--mic", str(tmp_path / "mic"), "--pivot-split", "karpathy",
            "--out", str(tmp_path / "coco")]  # fmt: skip
    says = ["coco", "expected an output path that does not hold the input", "dataset_coco.json"]
    check(Case(argv, says, intact=inputs), capsys)


def test_local_paths_keeps_paths_and_file_urls_only(tmp_path):
    from mlmm.io import local_paths

    given = [str(tmp_path / "a.zip"), (tmp_path / "b.zip").as_uri(), "https://x.org/c.zip", None]
    assert local_paths(given) == [str(tmp_path / "a.zip"), str(tmp_path / "b.zip")]


def test_retrieval_vectors_over_the_english_vectors(tmp_path, capsys):
    inputs = _files(tmp_path, "vec/wiki.en.align.vec", "muse/en-ja.txt")
    argv = ["retrieval-vectors", "--out", str(tmp_path / "vec"), "--languages", "en",
            "--onto", str(tmp_path / "vec/wiki.en.align.vec"), "--muse", str(tmp_path / "muse"),
            "--dim", "4", "--train-fraction", "0.8"]  # fmt: skip
    check(Case(argv, ["wiki.en.align.vec", "found the input itself"], intact=inputs), capsys)


# ------------------------------------------------------------------------------------------
# nothing a command did not write is replaced without --force (mlmm.cli.declare_outputs)


def test_an_output_file_no_command_wrote_needs_force(tmp_path, capsys):
    from mlmm.cli import main

    nbest, _ = _two_sentences(tmp_path)
    thesis = tmp_path / "thesis.txt"
    thesis.write_text("two years of work\n")
    argv = ["rerank", "--nbest", str(nbest), "--out", str(thesis)]
    says = ["thesis.txt: expected no file, or one an mlmm command wrote and nobody changed",
            "found a file no mlmm command wrote; pass --force to replace it"]  # fmt: skip
    check(Case(argv, says, intact={thesis: b"two years of work\n"}), capsys)
    assert main([*argv, "--force"]) == 0  # asked for
    assert thesis.read_text() == "a b\nc\n"
    assert main(argv) == 0  # ours now (.thesis.txt.mlmm-written): a rerun replaces it
    thesis.write_text("a b\nc\nmy note\n")  # edited since
    check(Case(argv, ["found an edited file; pass --force"]), capsys)


def test_a_table_stem_no_command_wrote_needs_force(tmp_path, capsys):
    metrics = _files(tmp_path, "s.json")
    mine = tmp_path / "t.md"
    mine.write_text("my table\n")
    argv = ["nmt-table", "--metrics", *map(str, metrics), "--out", str(tmp_path / "t")]
    check(Case(argv, ["t.md", "found a file no mlmm command wrote"], [tmp_path / "t.csv"],
               {mine: b"my table\n"}), capsys)  # fmt: skip


@pytest.mark.parametrize(
    "argv, says",
    [
        (["eval-retrieval", "--images", "i.npy", "--captions", "c.npy", "--per-image", "0",
          "--out", "OUT/o.json"], "--per-image: expected a number >= 1, found 0"),
        (["features", "--backbone", "efficientnet_lite0", "--images", "d", "--split", "l.txt",
          "--out", "OUT/a.npy", "--shard-size", "0"], "--shard-size: expected a number >= 1"),
        (["multi30k-vocab", "--root", "r", "--out", "OUT/v", "--min-count", "0"],
         "--min-count: expected a number >= 1, found 0"),
        (["retrieval-vectors", "--out", "OUT/v", "--languages", "de", "--dim", "4",
          "--train-fraction", "1.5"], "--train-fraction: expected a number < 1, found 1.5"),
    ],
    ids=["eval per-image 0", "features shard 0", "vocab min-count 0", "vectors fraction 1.5"],
)  # fmt: skip
def test_options_of_the_other_commands_are_checked_too(argv, says, tmp_path, capsys,
                                                       monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "OUT").mkdir()
    assert says in one_line_error(argv, capsys)
    assert not any((tmp_path / "OUT").iterdir())


def test_feature_row_checks_name_the_row_across_blocks():
    """check_feature_rows reads float64 in blocks of rows: a bad row past the first block is
    still found and named by its index in the whole array."""
    import numpy as np

    from mlmm.arrays import ROWS_PER_BLOCK, check_feature_rows
    from mlmm.errors import InputError

    feats = np.ones((ROWS_PER_BLOCK + 10, 3), dtype=np.float32)
    feats[ROWS_PER_BLOCK + 7] = 0
    want = rf"1 all-zero row\(s\) of {ROWS_PER_BLOCK + 10} \(first: row {ROWS_PER_BLOCK + 7}\)"
    with pytest.raises(InputError, match=want):
        check_feature_rows(feats, "f.npy")
    feats[ROWS_PER_BLOCK + 7] = 1
    feats[ROWS_PER_BLOCK + 2, 1] = np.nan
    with pytest.raises(InputError, match=rf"first: row {ROWS_PER_BLOCK + 2}\)"):
        check_feature_rows(feats, "f.npy")
    assert check_feature_rows(np.ones((5, 2)), "f.npy").dtype == np.float32
