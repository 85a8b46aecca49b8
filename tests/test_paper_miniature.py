"""The paper configuration in miniature: config/paper.yaml, run by
Snakemake on the demo worlds written into every real layout it reads (``mlmm
demo-paper-layouts``), with config/paper_miniature.yaml changing sizes only and the generated
locations.yaml changing location keys only. Every rule of the paper DAG runs, every paper table
and figure is written.

The backbones load torchvision's IMAGENET1K_V1 file names from a temporary TORCH_HOME holding
random weights (``write_random_backbone_weights``): offline there are no pretrained weights, and
the paper's ``features.weights`` stays as it is.
"""

from __future__ import annotations

import fnmatch
import json
import re
import subprocess
import time
from pathlib import Path

import pandas as pd
import pytest
import yaml
from helpers.local_data import PAPER_LOCAL_DATA, provide_local_data
from helpers.paper_config import paper_config, paper_variant
from helpers.workflow import BIN, LOCAL_RUN, REPO, tool_env

from mlmm.catalogue import ALL_FIGURES, ALL_TABLES, CLAIM_PAPERS
from mlmm.demo.paper_layouts import LOCATION_KEYS, flattened_keys
from mlmm.results.claims import VERDICTS

PAPER = REPO / "config" / "paper.yaml"
MINIATURE = REPO / "config" / "paper_miniature.yaml"
# The only keys config/paper_miniature.yaml may set: true sizes, each with why it
# moves no mechanism. A protocol key (loss, batching and batch size, selection, validation
# intervals, patience, decay, alignment interval, checkpointing, the epochs of a fixed-length
# protocol, data portions, splits, decoder, beam, MIRA iterations, perceptron epochs, features,
# reranking features) fails test_the_miniature_override_changes_sizes_only.
SIZE_KEYS = (
    # Kadar's epoch cap: the protocol stops on patience (1000 epochs is a cap, docs/fidelity.md);
    # the Calixto and AME records restate their epochs (the protocol), which this cannot reach
    "retrieval.defaults.epochs",
    # repetitions of one protocol (Kadar's 10 seeds, Figure 3's 3)
    "retrieval.defaults.seeds",
    "retrieval.variants.*.seeds",
    # dimensions of words, GRU, joint space, word vectors
    "retrieval.defaults.embed_dim",
    "retrieval.defaults.hidden",
    "retrieval.defaults.joint",
    "retrieval.variants.*.embed_dim",
    "retrieval.variants.*.hidden",
    "retrieval.variants.*.joint",
    "retrieval.vectors.dim",
    # Calixto cuts Multi30K's val split at image 500 into validation and test: the cut, scaled
    # to the miniature's val split (test_calixto_cut_is_only_scaled holds its shape)
    "retrieval.variants.calixto_*.validation.images",
    "retrieval.variants.calixto_*.test.images",
    # NMT dimensions (attention = 2 x hidden: test_the_miniature_keeps_attention_twice_hidden)
    "nmt.model.embedding",
    "nmt.model.hidden",
    "nmt.model.attention",
    # a cap: the NMT stops on patience 5 (nmt.train.patience, the protocol)
    "nmt.train.max_epochs",
    # Bridge CorrNet's dimensions, and its epochs: a fixed count with no schedule over them (no
    # decay, no selection between epochs; the lambda is chosen across runs)
    "ted.hidden",
    "pivot.hidden",
    "pivot.epochs",
)


def not_sizes(record: dict) -> list[str]:
    """Flattened keys of an override record that are not size keys."""
    return [
        key
        for key in flattened_keys(record)
        if not any(fnmatch.fnmatchcase(key, pattern) for pattern in SIZE_KEYS)
    ]


def not_locations(record: dict) -> list[str]:
    return [key for key in flattened_keys(record) if key not in LOCATION_KEYS]


def test_the_miniature_override_changes_sizes_only():
    record = yaml.safe_load(MINIATURE.read_text(encoding="utf-8"))
    assert record and not_sizes(record) == []
    variants = yaml.safe_load(PAPER.read_text(encoding="utf-8"))["retrieval"]["variants"]
    named = set(record.get("retrieval", {}).get("variants", {}))
    assert named <= set(variants), named - set(variants)  # no variant is added


def test_calixto_cut_is_only_scaled():
    """The override moves Calixto's cut of the val split (images [0, 500) validation, [500, end)
    test), never the split, the portion or the two parts' order."""
    record = yaml.safe_load(MINIATURE.read_text(encoding="utf-8"))["retrieval"]["variants"]
    for name, override in record.items():
        if "validation" not in override and "test" not in override:
            continue
        paper = paper_variant(name)
        assert (paper["validation"]["split"], paper["test"]["split"]) == ("val", "val"), name
        cut = paper["validation"]["images"][1]
        assert paper["validation"]["images"] == [0, cut] and paper["test"]["images"] == [cut, None]
        small = override["validation"]["images"][1]
        assert override["validation"] == {"images": [0, small]}, name
        assert override["test"] == {"images": [small, None]}, name
        assert 0 < small < cut


def _miniature_variants() -> dict[str, dict]:
    """Every retrieval variant the miniature runs, resolved (config.yaml <- paper <- miniature)."""
    from helpers.paper_config import SCHEMA

    from mlmm.config import validate_config
    from mlmm.retrieval.config import merge_config, resolve_variant

    merged = yaml.safe_load((REPO / "config.yaml").read_text(encoding="utf-8"))
    for path in (PAPER, MINIATURE):
        merged = merge_config(merged, yaml.safe_load(path.read_text(encoding="utf-8")))
    config = validate_config(merged, SCHEMA, [REPO / "config.yaml", PAPER, MINIATURE])
    section = config["retrieval"]
    return {name: resolve_variant(section, name, str(MINIATURE)) for name in section["run"]}


def test_the_miniature_keeps_every_protocol_count():
    """Each variant's epochs reach past its lr decay, and a restated epoch count (Calixto, AME:
    the protocol) is the paper's."""
    for name, record in _miniature_variants().items():
        decay = record["optimizer"]["decay_epochs"]
        assert decay is None or record["epochs"] > decay, name
        paper = paper_variant(name)
        if paper["epochs"] != paper_config()["retrieval"]["defaults"]["epochs"]:
            assert record["epochs"] == paper["epochs"], name


def test_the_miniature_keeps_attention_twice_hidden():
    """Nematus's gru_cond_layer: the attention layer is 2 x hidden (pinned for the paper), in
    whatever NMT sizes the miniature runs (today the paper's own: it sets none)."""
    override = yaml.safe_load(MINIATURE.read_text(encoding="utf-8")).get("nmt", {})
    model = {**paper_config()["nmt"]["model"], **override.get("model", {})}
    assert model["attention"] == 2 * model["hidden"]


@pytest.mark.parametrize(
    "override",
    [
        {"retrieval": {"defaults": {"loss": "sum"}}},
        {"retrieval": {"defaults": {"batch_size": 8}}},
        {"retrieval": {"defaults": {"early_stopping": {"patience": 2}}}},
        {"retrieval": {"variants": {"ame_ame_sym": {"early_stopping": {"every": 10}}}}},
        {"retrieval": {"variants": {"ame_ame_sym": {"alignment": {"every": 10}}}}},
        {"retrieval": {"variants": {"ame_ame_sym": {"epochs": 2}}}},
        {"retrieval": {"defaults": {"checkpoint_every": 10}}},
        {"nmt": {"beam": 2}},
        {"nmt": {"mira": {"iters": 2}}},
        {"nmt": {"train": {"patience": 1}}},
        {"ted": {"perceptron_epochs": 1}},
        {"retrieval": {"variants": {"kadar_bi": {"select_language": "en"}}}},
        {"retrieval": {"defaults": {"validation": {"portion": "translation"}}}},
        {"retrieval": {"variants": {"kadar_bi": {"test": {"images": [0, 10]}}}}},
        {"retrieval": {"variants": {"calixto_vse_en": {"test": {"split": "test_2016_flickr"}}}}},
        {"retrieval": {"defaults": {"backbone": "efficientnet_lite0"}}},
        {"features": {"weights": "DEFAULT"}},
        {"nmt": {"model": {"decoder": "bahdanau"}}},
        {"nmt": {"systems": {"vse": {"features": ["NMT", "WordPenalty"]}}}},
        {"coco": {"pivot_split": "karpathy"}},
        {"retrieval": {"run": ["kadar_mono_en"]}},
        {"multi30k": {"url": "file:///elsewhere"}},  # a location, not a size
    ],
)
def test_a_protocol_key_in_the_override_is_caught(override):
    assert not_sizes(override)


def test_location_keys_are_locations_only():
    """What locations.yaml may set: URLs and paths of data, nothing that changes a run."""
    for key in LOCATION_KEYS:
        assert key.rsplit(".", 1)[-1] in ("url", "manifest", "location", "muse", "ja"), key
    assert not_locations({"coco": {"karpathy": {"location": "x", "sha256": "0" * 64}}}) == [
        "coco.karpathy.sha256"
    ]


# ------------------------------------------------------------------------------- the run

# What the miniature's data do not reach, and what was measured: RCSLS halving needs far more
# images (every image costs its features, at one thread on the shared 2-core machine 3.0 CPU-s
# of ResNet-152 ten-crop (AME), 0.8 s of VGG-19 (Calixto), 0.2 s of ResNet-50 (Kadar): ~4 CPU-s
# a Multi30K-world image, ~3 s a COCO-world one); mean-rank selection was not reached at any
# size tried. Neither needs a protocol override. The miniature's run test asserts that each
# is indeed not reached, so that an entry is moved out when larger data reach it.
NOT_REACHED = {
    "selection by mean_rank between validation points": "Calixto's records are the only ones "
    "selecting by mean rank; at the miniature's 260 images the MLMME runs validate at updates "
    "1132 and 1800 but choose the last point (still learning at epoch 200 of a constant lr: "
    "rsum 647 -> 724 and 700 -> 764, measured 2026-11-26); larger MLMME dimensions (a size) "
    "did not change that (64/128/256: rsum 858 -> 916; 128/256/512: 831 -> 853, at 148 s and "
    "341 s of training against ~40 s); nor did 600 epochs instead of 200 (a diagnostic, not "
    "the protocol: 5400 updates, rsum 720, 742, 824, 851, 844 at its five validation points, "
    "and mean rank still chose the last, measured 2026-11-28): the generated captions leave "
    "nothing to overfit at these sizes. Through the trainer, off the paper DAG: "
    "test_selection_by_mean_rank_keeps_the_lowest_sum_of_mean_ranks_in_training",
    "RCSLS rate halved on a rising loss (alignment.lr_schedule)": "AME's RCSLS updates its "
    "mappings every 500 updates, and the loss first rises only near its optimum: on the "
    "miniature's en-de lexicon (109 pairs) with the word rows held, at the protocol's rate 2, it "
    "descends for 54 RCSLS updates (0.280 -> 0.155) and first rises at the 55th (the 53rd with "
    "32-d vectors, the 90th with 48-d; en-ja at rate 5 descends 100 updates: measured 2026-11-28;"
    " with the de vectors first RCSLS-aligned onto English, as fastText made its published "
    "aligned vectors (align.py's lr 1, 10 iterations, k = 10), the 39th, 0.224 -> 0.126: measured"
    " 2026-11-28). The miniature's AME runs take 510 updates (two RCSLS updates; 80 for COCO, "
    "one); ame_figure2 at batch 32 instead of 128 (2040 updates, five RCSLS updates, a "
    "diagnostic, not the protocol) did not rise either. A rise needs about 27,000 updates in a "
    "run's 30 epochs, about 11,500 Multi30K training images (the real data's 29,000 give about "
    "68,000). Through the trainer, off the paper DAG (RCSLS every update): "
    "test_the_papers_rcsls_rate_halves_on_a_rising_loss_in_training",
}
LARGEST_K = {"multi30k": 10, "coco": 10, "mic": 50}


def _retrieval_runs(results: Path) -> list[dict]:
    runs = []
    for path in sorted((results / "retrieval").glob("*/seed*/metrics.json")):
        metrics = json.loads(path.read_text(encoding="utf-8"))
        runs.append({**metrics, "record": metrics["provenance"]["config"]["retrieval"]})
    assert runs, results
    return runs


def _split_images(results: Path, dataset: str, split: str) -> int:
    path = results / dataset / "data" / "task1" / "image_splits" / f"{split}.txt"
    return len(path.read_text(encoding="utf-8").splitlines())


def _fired(runs: list[dict], condition) -> str | None:
    """None when a run meets ``condition``, else the runs it was looked for in."""
    if any(condition(run) for run in runs):
        return None
    return f"none of {len(runs)} runs: {sorted({r['variant'] for r in runs})[:6]}"


def mechanisms(workdir: Path) -> dict[str, str | None]:
    """Every protocol mechanism of the paper DAG -> None (fired at least once in the run's
    records) or what was found. The validation intervals and selection criteria are those of
    the runs' own records, so an interval added to config/paper.yaml is checked too."""
    results = workdir / "results"
    runs = _retrieval_runs(results)
    out: dict[str, str | None] = {}

    def lr_of(run: dict) -> list[float]:
        return [row["lr"] for row in run["history"]]

    decaying = [r for r in runs if r["record"]["optimizer"]["decay_epochs"]]
    out["lr decay (optimizer.decay_epochs)"] = _fired(
        decaying, lambda r: min(lr_of(r)) < r["record"]["optimizer"]["lr"] * 0.99
    )
    patient = [r for r in runs if r["record"]["early_stopping"]["patience"]]
    out["patience stop (early_stopping.patience)"] = _fired(
        patient, lambda r: r["stopped_by"] == "patience"
    )
    for every in sorted({r["record"]["early_stopping"]["every"] or 0 for r in runs}):
        kind = [r for r in runs if (r["record"]["early_stopping"]["every"] or 0) == every]
        if every:
            out[f"validation every {every} updates"] = _fired(
                kind, lambda r, n=every: any(row["step"] == n < r["steps"] for row in r["history"])
            )
        else:  # every epoch
            out["validation every epoch"] = _fired(kind, lambda r: len(r["history"]) >= 3)
    at_epoch_end = [r for r in runs if r["record"]["early_stopping"]["epoch_end"]]
    if at_epoch_end:
        out["validation at each epoch end beside every N updates"] = _fired(
            at_epoch_end,
            lambda r: any(
                float(row["epoch"]).is_integer()
                and row["step"] % r["record"]["early_stopping"]["every"]
                and row["step"] < r["steps"]
                for row in r["history"]
            ),
        )
    out["a best validation point before the last"] = _fired(
        runs, lambda r: r["best_step"] < r["history"][-1]["step"]
    )
    for select_by in sorted({r["record"]["select_by"] for r in runs}):
        kind = [r for r in runs if r["record"]["select_by"] == select_by]
        out[f"selection by {select_by} between validation points"] = _fired(
            kind, lambda r: len(r["history"]) >= 2 and r["best_step"] != r["history"][-1]["step"]
        )
    halving = [
        r for r in runs
        if r["record"]["word_embeddings"] == "ame"
        and r["record"]["alignment"]["lr_schedule"] == "halve_on_rise"
    ]  # fmt: skip
    out["RCSLS rate halved on a rising loss (alignment.lr_schedule)"] = _fired(
        halving,
        lambda r: any(
            row.get("alignment_lr") is not None
            and row["alignment_lr"] < r["record"]["alignment"]["lr"]
            for row in r["history"]
        ),
    )
    nmt = pd.read_csv(results / "nmt" / "history.csv")
    out["NMT model chosen by a non-zero validation BLEU"] = (
        None if nmt["val_bleu"].max() > 0 else f"validation BLEU {nmt['val_bleu'].tolist()}"
    )
    nmt_metrics = json.loads((results / "nmt" / "metrics.json").read_text(encoding="utf-8"))
    cap = nmt_metrics["provenance"]["config"]["train"]["max_epochs"]
    out["NMT best epoch before the last, stopped by patience (nmt.train.patience)"] = (
        None
        if nmt_metrics["epochs"] < cap and nmt_metrics["best_epoch"] < nmt_metrics["epochs"]
        else f"best epoch {nmt_metrics['best_epoch']} of {nmt_metrics['epochs']} (cap {cap})"
    )
    small = []
    for r in runs:
        test, dataset = r["record"]["test"], r["record"]["dataset"]
        start, end = test["images"]
        n = _split_images(results, dataset, test["split"])
        n = (n if end is None else min(n, end)) - start
        if n // test["folds"] <= LARGEST_K[dataset] and dataset == "multi30k":
            small.append(f"{r['variant']}: {n} images")
    out["Multi30K test sets larger than K = 10"] = "; ".join(small) or None
    coco = [r for r in runs if r["record"]["dataset"] == "coco"]
    folds = {
        _split_images(results, "coco", r["record"]["test"]["split"]) // r["record"]["test"]["folds"]
        for r in coco
    }
    out["COCO test folds larger than K = 10"] = (
        None if coco and min(folds) > LARGEST_K["coco"] else f"folds of {sorted(folds)} images"
    )
    mic = _split_images(results, "coco", "mic")
    out["MIC test set larger than K = 50 (pivot R@50)"] = (
        None if mic > LARGEST_K["mic"] else f"{mic} MIC images"
    )
    for table in (6, 7):
        frame = pd.read_csv(results / "tables" / f"rajendran2016_table{table}.csv")
        out[f"paper queries of Rajendran Table {table} matched"] = (
            None if (frame["query_choice"] == "paper").any() else "every query seeded"
        )
    return out


def _snakemake(workdir: Path, *args: str, env: dict, timeout: int = 3600):
    return subprocess.run(
        [str(BIN / "snakemake"), "-s", str(REPO / "Snakefile"), "-d", str(workdir), *args],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=timeout,
    )  # fmt: skip


def _planned_rules(output: str) -> set[str]:
    """Rule names of a Snakemake 'Job stats' table."""
    table = output.split("Job stats:", 1)[1].split("total", 1)[0]
    return {m.group(1) for m in re.finditer(r"^(\w+)\s+\d+$", table, flags=re.MULTILINE)}


def _downloads_only(rule: str) -> bool:
    """Whether the rules files define ``rule`` with the one command `mlmm download`."""
    for path in (REPO / "workflow/rules").glob("*.smk"):
        text = path.read_text(encoding="utf-8")
        match = re.search(rf"^\s*rule {rule}:\n(.*?)(?=^\s*rule |\Z)", text, re.M | re.S)
        if match:
            return '"mlmm download ' in match.group(1)
    return False


def _executed_rules(output: str) -> set[str]:
    return set(re.findall(r"^(?:local)?rule (\w+):$", output, flags=re.MULTILINE))


@pytest.fixture(scope="module")
def paper_rules(tmp_path_factory) -> set[str]:
    """The rules of the real paper DAG (config/paper.yaml alone, its local data sets present)."""
    workdir = tmp_path_factory.mktemp("paper_dag")
    for name in PAPER_LOCAL_DATA.values():
        provide_local_data(workdir, name)
    proc = _snakemake(workdir, "-n", "--configfile", str(PAPER), env=tool_env(), timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:]
    return _planned_rules(proc.stdout)


@pytest.mark.slow
@pytest.mark.full
def test_the_paper_configuration_runs_every_rule_in_miniature(tmp_path, paper_rules):
    from mlmm.demo.paper_layouts import write_paper_layouts, write_random_backbone_weights

    workdir = tmp_path / "run"
    write_paper_layouts(workdir)
    locations = workdir / "locations.yaml"
    assert not_locations(yaml.safe_load(locations.read_text(encoding="utf-8"))) == []
    env = tool_env()
    env["TORCH_HOME"] = str(tmp_path / "torch")
    write_random_backbone_weights(env["TORCH_HOME"])
    configs = ["--configfile", str(PAPER), str(MINIATURE), str(locations)]
    start = time.perf_counter()
    proc = _snakemake(workdir, *LOCAL_RUN, *configs, env=env, timeout=5400)
    minutes = (time.perf_counter() - start) / 60
    assert proc.returncode == 0, proc.stdout[-6000:]
    executed = _executed_rules(proc.stdout)
    # Rules that only fetch an http(s) location (`mlmm download`, tested on its own in
    # test_data_fetch): offline, the miniature's locations are local files, which the rules
    # after them (unpack_coco_images, retrieval_vectors_rotated) read in place.
    downloads = {rule for rule in paper_rules if _downloads_only(rule)}
    assert downloads == {"fetch_coco_images", "fetch_rotated_vectors"}, downloads
    assert paper_rules - {"all"} - downloads <= executed, sorted(paper_rules - executed)
    for stem in ALL_TABLES:
        for suffix in ("csv", "md", "tex", "html"):
            assert (workdir / "results" / "tables" / f"{stem}.{suffix}").is_file(), stem
    for stem in ALL_FIGURES:
        for suffix in ("png", "pdf"):
            assert (workdir / "results" / "figures" / f"{stem}.{suffix}").is_file(), stem
    for paper in CLAIM_PAPERS:  # every paper's claims table and figure (rule claims)
        claims = pd.read_csv(workdir / "results" / "tables" / f"{paper}_claims.csv")
        assert claims.verdict.isin(VERDICTS).all()
        assert (workdir / "results" / "figures" / f"{paper}_claims.png").is_file(), paper
    again = _snakemake(workdir, "-n", *configs, env=env, timeout=600)
    assert "Nothing to be done" in again.stdout, again.stdout[-3000:]
    print(f"paper miniature: {len(executed)} rules in {minutes:.1f} min")
    check_mechanisms_and_labels(workdir)


def check_mechanisms_and_labels(workdir: Path) -> None:
    """Every protocol mechanism fired at least once (one entry each), what CPU sizes
    cannot reach did not (NOT_REACHED says why), and every table says its data are generated."""
    found = mechanisms(workdir)
    assert set(NOT_REACHED) <= set(found)
    not_fired = {name: why for name, why in found.items() if why and name not in NOT_REACHED}
    assert not not_fired, not_fired
    reached = [name for name in NOT_REACHED if found[name] is None]
    assert not reached, f"now reached, move out of NOT_REACHED: {reached}"
    for path in sorted((workdir / "results" / "tables").glob("*.md")):
        text = path.read_text(encoding="utf-8")
        assert "GENERATED DATA in the real layouts" in text, path.name
        assert "Produced from real data" not in text, path.name


def test_the_cli_defaults_are_the_miniature_sizes():
    """`mlmm demo-paper-layouts OUT` writes what the miniature test runs on: its defaults are
    write_paper_layouts's (the CLI keeps literals so that its parser imports no numpy)."""
    import inspect

    from mlmm.cli import build_parser
    from mlmm.demo.paper_layouts import write_paper_layouts

    args = build_parser().parse_args(["demo-paper-layouts", "out"])
    for name, parameter in inspect.signature(write_paper_layouts).parameters.items():
        if parameter.default is not inspect.Parameter.empty and hasattr(args, name):
            assert getattr(args, name) == parameter.default, name


def test_layouts_refuse_a_directory_with_files(tmp_path):
    from mlmm.demo.paper_layouts import write_paper_layouts
    from mlmm.errors import InputError

    (tmp_path / "mine.txt").write_text("a user's file")
    with pytest.raises(InputError, match="a new or empty directory"):
        write_paper_layouts(tmp_path)
    assert [p.name for p in tmp_path.iterdir()] == ["mine.txt"]


def test_random_weights_never_replace_a_cached_file(tmp_path):
    import torchvision

    from mlmm.demo.paper_layouts import write_random_backbone_weights
    from mlmm.errors import InputError

    url = torchvision.models.ResNet50_Weights.IMAGENET1K_V1.url
    cached = tmp_path / "hub" / "checkpoints" / url.rsplit("/", 1)[-1]
    cached.parent.mkdir(parents=True)
    cached.write_bytes(b"real weights")
    with pytest.raises(InputError, match="never replace"):
        write_random_backbone_weights(tmp_path)
    assert cached.read_bytes() == b"real weights"


def test_muse_sections_split_by_source_word(tmp_path):
    from mlmm.demo.paper_layouts import _muse_sections

    full = tmp_path / "en-de.txt"
    pairs = [f"w{i} x{i}" for i in range(10)] + ["w0 y0"]  # w0 twice: one source word
    full.write_text("\n".join(pairs) + "\n", encoding="utf-8")
    _muse_sections(full, tmp_path / "muse", "de")
    read = lambda name: (tmp_path / "muse" / name).read_text(encoding="utf-8").split("\n")[:-1]  # noqa: E731
    assert read("en-de.txt") == pairs
    assert read("en-de.0-5000.txt") == [*pairs[:8], "w0 y0"]  # 8 of 10 source words
    assert read("en-de.5000-6500.txt") == pairs[8:10]


def test_the_mic_copy_holds_the_paper_queries(tmp_path):
    """The paper's Tables 6-7 query captions replace generated MIC captions, one image each, so
    that the paper-query path (mlmm.results.pivot_examples.find_caption) finds every one of them."""
    from mlmm.data.coco import tokenise_mic
    from mlmm.demo.paper_layouts import _paper_queries, _plant_paper_queries
    from mlmm.io import scratch
    from mlmm.results.pivot_examples import find_caption

    queries = _paper_queries()
    configured = paper_config()["pivot"]["examples"]["paper_queries"]
    assert queries == {t: {k: v for k, v in q.items() if v} for t, q in configured.items()}
    for lang in ("de", "fr"):
        lines = [f"ein bild {k} ." for k in range(20)]
        (tmp_path / f"captions.{lang}").write_text("\n".join(lines) + "\n", encoding="utf-8")
    with scratch(tmp_path):  # as inside the layouts' directory under construction
        _plant_paper_queries(tmp_path, queries)
    for lang in ("de", "fr"):
        lines = (tmp_path / f"captions.{lang}").read_text(encoding="utf-8").splitlines()
        assert len(lines) == 20
        captions = [tokenise_mic(line, lang) for line in lines]
        found = [
            find_caption(captions, text, lang)
            for table in queries.values()
            for text in table.get(lang, [])
        ]
        assert None not in found and len({c // 5 for c in found}) == len(found)
