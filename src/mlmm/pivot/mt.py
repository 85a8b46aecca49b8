"""CorrNet + MT rows of Rajendran et al. 2016 Table 5: translate the MIC captions, then retrieve.

Section 6 of the paper: "we use an Fr/De-En MT system using Z2 to translate the Fr/De captions
to En, and then use the En-Image CorrNet"; footnote 4 names Moses. We train the project's own
NMT (mlmm.nmt, `mlmm train-nmt`) instead, X -> English on the sentences of the Z2 talks:

1. `parallel_corpus`: the sentence pairs of the Z2 train talks (a .ted file has one sentence
   per line and both sides of a talk share the file name). NMT validation = the talks the
   pivot stage holds out of Z2 for choosing lambda (`mlmm.pivot.data.held_out`, same seed), so
   no talk the bridge models are validated on trains the MT system.
2. `translate_mic`: the MIC captions in X, file by file, to English (beam search, the
   length-normalised 1-best as wmt16-scripts' translate.sh -n), in
   the layout of the captions they translate: `OUT/mic.lc.norm.tok.<k>.en`, line i = image i.
3. `evaluate_translations`: the En-Image CorrNet of a `pivot-train --model direct` run (its
   model.pt and inputs.npz) ranks the MIC images against the translated captions. The run's
   lambda and validation criteria are those of the direct run: the same network.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from mlmm.data.multi30k import image_list, task_dir
from mlmm.errors import InputError
from mlmm.fingerprint import check_directory
from mlmm.io import (
    atomic_path,
    read_json,
    read_json_object,
    read_lines,
    read_npz,
    write_json,
    write_text,
)
from mlmm.pivot import IMAGE, LANGUAGES, PIVOT
from mlmm.pivot.data import CAPTIONS_PER_IMAGE, TEST_SPLIT, held_out, read_features, standardise
from mlmm.pivot.evaluate import ranks, recalls_of_ranks
from mlmm.ted.corpus import _id_key, read_sentences

# The 1-best of each beam: log p(Y|X) divided by the length (EOS counted), as wmt16-scripts'
# sample/translate.sh runs Nematus (`-k 12 -n`: beam 12, length normalisation).
LENGTH_NORMALISED = True

# Files of a `pivot-train --model direct` run that this stage reads back.
DIRECT_MODEL, DIRECT_INPUTS = "model.pt", "inputs.npz"


def talk_files(root: Path, pair_dir: str, split: str) -> dict[str, Path]:
    """{talk id: one of its .ted files} under `root/pair_dir/split` (every topic holds a copy)."""
    base = Path(root) / pair_dir / split
    if not base.is_dir():
        raise InputError(base, "a directory of the TED CLDC layout", "no such directory")
    files: dict[str, Path] = {}
    for path in sorted(base.glob("*/*/*.ted")):
        files.setdefault(path.stem, path)
    if not files:
        raise InputError(base, "at least one .ted document", "none")
    return files


def parallel_corpus(
    ted_root: Path,
    language: str,
    validation_fraction: float,
    validation_max: int,
    seed: int,
    max_length: int,
) -> tuple[dict[str, tuple[list[list[str]], list[list[str]]]], dict]:
    """({"train": (X sentences, English sentences), "val": (...)}, statistics) from Z2's train
    talks. Talks whose sides differ in sentence count cannot be aligned and are left out (and
    counted); empty sentence pairs are dropped, and training pairs longer than `max_length`
    tokens on either side (Moses's clean-corpus-n.perl 1 max_length)."""
    if language not in LANGUAGES:
        raise InputError("--language", f"one of {', '.join(LANGUAGES)}", repr(language))
    foreign = talk_files(ted_root, f"{language}-{PIVOT}", "train")
    english = talk_files(ted_root, f"{PIVOT}-{language}", "train")
    if set(foreign) != set(english):
        missing = sorted(set(foreign) ^ set(english), key=_id_key)[:5]
        raise InputError(
            Path(ted_root) / f"{PIVOT}-{language}" / "train",
            f"the same talks as {language}-{PIVOT}/train",
            f"talks on one side only: {missing}",
        )
    ids = sorted(foreign, key=_id_key)  # the order of mlmm.ted.corpus.read_side
    _, val_rows = held_out(len(ids), validation_fraction, validation_max, seed)
    val_ids = {ids[i] for i in val_rows}
    corpus: dict[str, tuple[list, list]] = {"train": ([], []), "val": ([], [])}
    stats = {"talks": len(ids), "validation_talks": len(val_ids), "unaligned_talks": [],
             "empty_pairs": 0, "long_pairs": 0}
    for talk in ids:
        x_side = read_sentences(foreign[talk], language)
        en_side = read_sentences(english[talk], PIVOT)
        if len(x_side) != len(en_side):
            stats["unaligned_talks"].append(talk)
            continue
        split = "val" if talk in val_ids else "train"
        for x, en in zip(x_side, en_side, strict=True):
            if not x or not en:
                stats["empty_pairs"] += 1
            elif split == "train" and max(len(x), len(en)) > max_length:
                stats["long_pairs"] += 1
            else:
                corpus[split][0].append(x)
                corpus[split][1].append(en)
    for split, (x, _) in corpus.items():
        if not x:
            raise InputError(
                Path(ted_root) / f"{language}-{PIVOT}" / "train",
                f"aligned sentence pairs for the MT {split} split",
                f"none ({len(stats['unaligned_talks'])} of {len(ids)} talks unaligned)",
            )
        stats[f"{split}_pairs"] = len(x)
    return corpus, stats


def write_parallel(out: Path, language: str, corpus: dict, stats: dict) -> None:
    """`OUT/{train,val}.lc.norm.tok.{X,en}` (what `mlmm train-nmt --data OUT` reads) and
    OUT/stats.json."""
    for split, (x, en) in corpus.items():
        for lang, sentences in ((language, x), (PIVOT, en)):
            write_text(
                Path(out) / f"{split}.lc.norm.tok.{lang}",
                "".join(" ".join(s) + "\n" for s in sentences),
            )
    write_json(Path(out) / "stats.json", stats)


def mic_caption_file(coco_root: Path, k: int, language: str) -> Path:
    return task_dir(coco_root, 2) / "tok" / f"{TEST_SPLIT}.lc.norm.tok.{k}.{language}"


def translation_file(out: Path, k: int) -> Path:
    """Where the English translation of the k-th MIC caption file goes (line i = image i)."""
    return Path(out) / f"{TEST_SPLIT}.lc.norm.tok.{k}.{PIVOT}"


def translate_mic(
    model: Path, coco_root: Path, language: str, beam: int, out: Path, progress: bool = True
) -> dict:
    """Translate the five MIC caption files in `language` to English; returns statistics
    (sentences, BLEU of the translations against the English MIC captions, the originals the
    French/German captions were translated from)."""
    from tqdm import tqdm

    from mlmm.nmt.model import load_translator
    from mlmm.nmt.search import beam_search, best_translation
    from mlmm.nmt.train import bleu

    # the languages its record names: the model of another pair's run is refused
    translator = load_translator(model, {"languages": [language, PIVOT]}, "pivot-translate")
    n = len(image_list(coco_root, TEST_SPLIT))
    hypotheses, references = [], []
    for k in range(1, CAPTIONS_PER_IMAGE + 1):
        path = mic_caption_file(coco_root, k, language)
        lines = read_lines(path)
        if len(lines) != n:
            raise InputError(path, f"{n} lines (one per image of {TEST_SPLIT})", f"{len(lines)}")
        outputs = []
        for line in tqdm(lines, desc=f"{path.name}", disable=not progress):
            beam_out = beam_search(translator.model, translator.src.encode(line.split()), beam)
            best = best_translation(beam_out, LENGTH_NORMALISED)[0]
            outputs.append(" ".join(translator.tgt.decode(best)))
        write_text(translation_file(out, k), "".join(o + "\n" for o in outputs))
        hypotheses += outputs
        english = mic_caption_file(coco_root, k, PIVOT)
        references += read_lines(english) if english.is_file() else []
    stats = {
        "language": language, "sentences": len(hypotheses), "beam": beam,
        "length_normalised": LENGTH_NORMALISED,
    }
    if len(references) == len(hypotheses):
        stats["bleu_against_english_mic"] = bleu(hypotheses, references)
    return stats


def save_direct(out_dir: Path, model, words: list[str], mean: np.ndarray, std: np.ndarray) -> None:
    """What `evaluate_translations` needs of an En-Image CorrNet run: the network, its English
    vocabulary and the Z1 feature standardiser."""
    from mlmm.ted import corrnet

    corrnet.save(model, Path(out_dir) / DIRECT_MODEL)
    with atomic_path(Path(out_dir) / DIRECT_INPUTS) as tmp, open(tmp, "wb") as handle:
        np.savez(handle, words=np.array(words, dtype=str), mean=mean, std=std)


def read_translations(out: Path, n_images: int) -> list[list[str]]:
    """The translated captions, flat and image-major like mlmm.pivot.data.read_captions (an
    empty translation is an empty caption)."""
    files = []
    for k in range(1, CAPTIONS_PER_IMAGE + 1):
        path = translation_file(out, k)
        lines = read_lines(path, allow_empty_lines=True)
        if len(lines) != n_images:
            raise InputError(path, f"{n_images} lines (one per MIC image)", f"{len(lines)}")
        files.append([line.split() for line in lines])
    return [files[k][i] for i in range(n_images) for k in range(CAPTIONS_PER_IMAGE)]


def evaluate_translations(
    direct_run: Path,
    translations: Path,
    coco_root: Path,
    features: Path,
    backbone: str,
    language: str,
) -> dict:
    """A Table 5 run of model "mt": the direct run's network, tested on translated captions."""
    from mlmm.pivot.models import distance_scores
    from mlmm.ted import corrnet
    from mlmm.ted.bow import count_matrix

    direct_run = Path(direct_run)
    metrics_path = direct_run / "metrics.json"
    check_directory(direct_run, "metrics.json", "pivot-train for the direct run")
    direct = read_json_object(metrics_path, what="a metrics.json of pivot-train --model direct")
    if direct.get("model") != "direct":
        raise InputError(
            metrics_path, "model 'direct' (the En-Image CorrNet)", repr(direct.get("model")),
            key="model",
        )
    for name in (DIRECT_MODEL, DIRECT_INPUTS):
        if not (direct_run / name).is_file():
            raise InputError(
                direct_run / name, "a file of pivot-train --model direct", "no such file"
            )
    inputs = read_npz(direct_run / DIRECT_INPUTS, "the inputs of pivot-train --model direct")
    words, mean, std = inputs["words"].tolist(), inputs["mean"], inputs["std"]
    model = corrnet.load(direct_run / DIRECT_MODEL)
    n = len(image_list(coco_root, TEST_SPLIT))
    images = standardise(read_features(features, backbone, TEST_SPLIT, n), mean, std)
    captions = read_translations(translations, n)
    vocabulary = set(words)
    known = sum(t in vocabulary for c in captions for t in c)
    total = sum(len(c) for c in captions)
    scores = distance_scores(
        corrnet.encode(model, IMAGE, images),
        corrnet.encode(model, PIVOT, count_matrix(captions, words)),
    )
    test_ranks = ranks(scores, CAPTIONS_PER_IMAGE)
    return {
        "model": "mt",
        "language": language,
        "lambda": direct["lambda"],
        "criteria": direct["criteria"],
        "validation": direct.get("validation"),
        "test": recalls_of_ranks(test_ranks),
        "ranks": test_ranks,  # popped by the caller into queries.npz (write_test_ranks)
        "data": {
            "mic_images": n,
            "mic_captions": len(captions),
            "translated_tokens_in_vocabulary": known / max(total, 1),
        },
        "direct_run": str(direct_run),
        "translation": _translation_stats(Path(translations)),
    }


def _translation_stats(translations: Path) -> dict | None:
    """pivot-translate's stats.json (beam, BLEU against the English MIC captions), if there."""
    try:
        stats = read_json(translations / "stats.json")
    except InputError:
        return None
    return {key: value for key, value in stats.items() if key != "provenance"}
