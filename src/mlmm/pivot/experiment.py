"""One pivot run: train a model for one caption language and lambda, write metrics.json.

The run records the test recalls on MIC and, for choosing lambda later (mlmm.results.pivot_table),
validation recalls that use no image-French/German pairs (Section 6):
- image-to-caption: retrieval of X talks for English talks on held-out Z2 talks
  (`z2_en_to_x`); for the En-Image CorrNet, image-to-caption on held-out Z1 images;
- caption-to-image: image retrieval with English captions on held-out Z1 images (`z1`).

Beside it, `test_ranking.npz` keeps what ranks the MIC test set: the common-space codes of the
MIC images and captions (`image_codes`, `caption_codes`; Bridge CorrNet, Bridge MAE, En-Image
CorrNet), or the score matrices (`i2t_scores`, `t2i_scores`: 2-CorrNet's chains; `i2t_scores`:
Random), so that Tables 6 and 7 rank without retraining.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import numpy as np

from mlmm.data.multi30k import image_list
from mlmm.errors import InputError
from mlmm.fingerprint import record_directory
from mlmm.io import read_json, write_npz
from mlmm.outcomes import write_result
from mlmm.pivot import IMAGE, LANGUAGES, MODELS, PIVOT
from mlmm.pivot.data import CAPTIONS_PER_IMAGE, TEST_SPLIT, PivotData, load
from mlmm.pivot.evaluate import criterion, ranks, recalls, recalls_of_ranks
from mlmm.pivot.models import BridgeMAE, chain_scores, distance_scores, random_scores
from mlmm.provenance import Timer, provenance
from mlmm.records import COMMANDS
from mlmm.ted import corrnet

# The training settings of a run: what `pivot-train` reads from its record (mlmm.records),
# the backbone aside (an argument of its own: it names the feature files)
SETTINGS = tuple(key for key in COMMANDS["pivot-train"][1] if key != "backbone")
# Beside metrics.json, what ranks the MIC test set (Tables 6 and 7 read it;
# mlmm.results.pivot_examples)
RANKING_FILE = "test_ranking.npz"


def coco_pivot_split(coco_root: str | Path) -> str:
    """Which Z1 split `mlmm prepare-coco` wrote (its provenance.json; karpathy if unrecorded)."""
    try:
        record = read_json(Path(coco_root) / "provenance.json")
    except InputError:
        return "karpathy"
    return record.get("provenance", {}).get("config", {}).get("pivot_split", "karpathy")


def check_request(model: str, language: str | None, ted_root) -> None:
    """Which models take a caption language and TED talks: a wrong mix is an input error."""
    if model not in MODELS:
        raise InputError("--model", f"one of {', '.join(MODELS)}", repr(model))
    needs = model in ("bridge", "mae", "two")
    if needs and language not in LANGUAGES:
        raise InputError("--language", f"one of {', '.join(LANGUAGES)} for {model}", repr(language))
    if needs and ted_root is None:
        raise InputError("--ted-root", f"a ted-cldc directory for {model}", "none")
    if not needs and language is not None:
        raise InputError("--language", f"none for {model} (English or no captions)", repr(language))


def _validation_z1(encode_image, encode_en, data: PivotData) -> dict:
    scores = distance_scores(encode_image(data.z1.val_images), encode_en(data.z1.val_captions))
    return recalls(scores, CAPTIONS_PER_IMAGE)


def _validation_z2(encode_en, encode_x, data: PivotData) -> dict:
    """English talk -> its X talk among all held-out X talks (one target each)."""
    scores = distance_scores(encode_en(data.z2.val_english), encode_x(data.z2.val_foreign))
    return recalls(scores, 1)["i2t"]


def _train(pairs: dict, data: PivotData, settings: dict, lam: float, progress: bool, **extra):
    """corrnet.train with the run's settings; `extra`: its other arguments (model_class)."""
    model, history = corrnet.train(
        pairs,
        len(data.words[PIVOT]),
        pivot=PIVOT,
        hidden=settings["hidden"],
        epochs=settings["epochs"],
        batch_size=settings["batch_size"],
        learning_rate=settings["learning_rate"],
        lam=lam,
        seed=settings["seed"],
        binary=settings["input"] == "binary",
        progress=progress,
        device=settings["device"],
        reconstruction=settings["reconstruction"],
        **extra,
    )
    return model, history


def _encoder(model, view: str):
    return lambda matrix: corrnet.encode(model, view, matrix)


def evaluate_run(
    model: str,
    data: PivotData,
    settings: dict,
    lam: float,
    progress: bool,
    save_dir: str | Path | None = None,
) -> dict:
    """Train and evaluate one model on loaded data: history, validation, criteria, test.

    `save_dir`: where a direct run keeps its network for the CorrNet + MT rows (mlmm.pivot.mt).
    """
    x = data.language
    if model in ("bridge", "mae", "direct"):
        pairs = {IMAGE: data.z1.pairs()}
        if model != "direct":
            pairs[x] = (data.z2.foreign, data.z2.english)
        extra = {"model_class": BridgeMAE} if model == "mae" else {}
        net, history = _train(
            pairs, data, settings, 0.0 if model == "mae" else lam, progress, **extra
        )
        image, en = _encoder(net, IMAGE), _encoder(net, PIVOT)
        validation = {"z1": _validation_z1(image, en, data)}
        if model != "direct":
            validation["z2_en_to_x"] = _validation_z2(en, _encoder(net, x), data)
        ranking = {
            "image_codes": image(data.mic.images),
            "caption_codes": _encoder(net, x)(data.mic.captions),
        }
        test_ranks = ranks(
            distance_scores(ranking["image_codes"], ranking["caption_codes"]), CAPTIONS_PER_IMAGE
        )
        histories = {"model": history}
        if model == "direct" and save_dir is not None:
            from mlmm.pivot.mt import save_direct

            save_direct(save_dir, net, data.words[PIVOT], data.mean, data.std)
    else:  # two: image-en CorrNet on Z1, en-X CorrNet on Z2, chained via Z1 training captions
        first, h1 = _train({IMAGE: data.z1.pairs()}, data, settings, lam, progress)
        second, h2 = _train({x: (data.z2.foreign, data.z2.english)}, data, settings, lam, progress)
        pool_first = corrnet.encode(first, PIVOT, data.z1.captions)
        pool_second = corrnet.encode(second, PIVOT, data.z1.captions)
        images = corrnet.encode(first, IMAGE, data.mic.images)
        captions = corrnet.encode(second, x, data.mic.captions)
        i2t_scores = chain_scores(images, pool_first, pool_second, captions)
        t2i_scores = chain_scores(captions, pool_second, pool_first, images).T
        test_ranks = ranks(i2t_scores, CAPTIONS_PER_IMAGE, t2i_scores)
        ranking = {"i2t_scores": i2t_scores, "t2i_scores": t2i_scores}
        validation = {
            "z1": _validation_z1(_encoder(first, IMAGE), _encoder(first, PIVOT), data),
            "z2_en_to_x": _validation_z2(_encoder(second, PIVOT), _encoder(second, x), data),
        }
        histories = {"image_en": h1, f"en_{x}": h2}
    i2t_source = validation["z1"]["i2t"] if model == "direct" else validation["z2_en_to_x"]
    criteria = {"i2t": criterion(i2t_source), "t2i": criterion(validation["z1"]["t2i"])}
    return {
        "history": histories,
        "validation": validation,
        "criteria": criteria,
        "test": recalls_of_ranks(test_ranks),
        "ranks": test_ranks,
        "ranking": {key: np.asarray(value, dtype=np.float32) for key, value in ranking.items()},
    }


def train_stage(
    coco_root: str | Path,
    features: str | Path,
    backbone: str,
    ted_root: str | Path | None,
    language: str | None,
    model: str,
    lam: float,
    settings: dict,
    out_dir: str | Path,
    threads: int = 1,
    device: str = "cpu",
    progress: bool = True,
    data_sets: Iterable[str] = (),
) -> dict:
    """Run one (model, language, lambda); write `out_dir/test_ranking.npz`, then
    `out_dir/metrics.json` (returned).

    `data_sets`: the data sets the run reads (COCO's captions and features; the talks' data set,
    `ted` for the TED stage's corpus, when the model reads talks), recorded in its provenance
    so that Table 5 says demo or real data from them (none: origin unrecorded).

    `device`: auto, cpu or cuda for training (a GPU pays at paper scale: the English decoder
    spans the whole vocabulary at every step); evaluation runs on the CPU.
    """
    import torch

    from mlmm.features.extraction import resolve_device

    check_request(model, language, ted_root)
    missing = [key for key in SETTINGS if key not in settings]
    if missing:
        raise InputError("settings", f"keys {list(SETTINGS)}", f"no {missing}")
    torch.set_num_threads(threads)
    settings = dict(settings, device=str(resolve_device(device)))
    timer = Timer()
    config = {key: settings[key] for key in SETTINGS} | {
        "model": model,
        "language": language,
        "lambda": lam,
        "backbone": backbone,
        "coco_root": str(coco_root),
        "pivot_split": coco_pivot_split(coco_root),
        "features": str(features),
        "ted_root": None if ted_root is None else str(ted_root),
        "threads": threads,
        "device": settings["device"],
    }
    result: dict = {"model": model, "language": language, "lambda": lam}
    if model == "random":
        with timer("evaluate"):
            n = len(image_list(coco_root, TEST_SPLIT))
            scores = random_scores(n, n * CAPTIONS_PER_IMAGE, settings["seed"])
            test_ranks = ranks(scores, CAPTIONS_PER_IMAGE)
            result |= {"criteria": None, "test": recalls_of_ranks(test_ranks)}
            ranking = {"i2t_scores": scores.astype(np.float32)}
        result["data"] = {"mic_images": n, "mic_captions": n * CAPTIONS_PER_IMAGE}
    else:
        with timer("load"):
            data = load(
                coco_root,
                features,
                backbone,
                None if model == "direct" else ted_root,
                language,
                settings["min_count"],
                settings["validation_fraction"],
                settings["validation_max"],
                settings["seed"],
                settings["standardise_images"],
            )
        with timer("train_evaluate"):
            result |= evaluate_run(model, data, settings, lam, progress, save_dir=out_dir)
        ranking = result.pop("ranking")
        test_ranks = result.pop("ranks")
        result["data"] = data.sizes()
    result |= {"provenance": provenance(config, settings["seed"], data=data_sets),
               "timings": timer.seconds}  # fmt: skip
    write_npz(Path(out_dir) / RANKING_FILE, ranking)
    caption_language = "" if model == "random" else language or "en"  # as Table 5's rows
    write_test_ranks(Path(out_dir) / "metrics.json", caption_language, test_ranks, result)
    record_directory(out_dir, "metrics.json")
    return result


def write_test_ranks(metrics_path: Path, language: str, test_ranks: dict, result: dict) -> None:
    """A run's metrics.json (``result``) and its MIC test ranks (``evaluate.ranks``) as
    queries.npz beside it (``mlmm.outcomes.write_result``: one fold, keyed by the caption
    language of its Table 5 row: en for the En-Image CorrNet, empty for Random)."""
    outcomes = {"folds": 1, "images": len(test_ranks["i2t"]), "test": {language: test_ranks}}
    write_result(metrics_path, result, "queries", outcomes)


def mean_epoch_seconds(result: dict) -> float | None:
    """Mean seconds per epoch over the run's trainings (None for the random baseline)."""
    epochs = [h["seconds"] for run in result.get("history", {}).values() for h in run]
    return float(np.mean(epochs)) if epochs else None
