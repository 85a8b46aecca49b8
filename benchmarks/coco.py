"""Wall time and peak memory of `mlmm.data.coco.prepare_coco` on a generated input of a given size.

Inputs are written first: a Karpathy ``dataset_coco.json`` (splits in Karpathy's proportions,
5,000 val / 5,000 test / 30,504 restval / 82,783 train, scaled to --images), STAIR-format
Japanese caption JSON (train2014 and val2014 files, 5 captions per image) and a MIC directory
(at most 1,000 train images, 5 en/fr/de captions each). Captions are real sentences of the demo
grammar (mlmm.demo.grammar), drawn from a pool of sampled contents (generating one per caption
costs more than the stage itself; the tokenisers do not cache, so repeats cost the same).
prepare_coco runs in a fresh process, so its peak RSS (Linux VmHWM) is its own; the baseline is
that process's peak before the call (the imports). Side by side in the same run: captions/s of
the two tokenisers, tokenise_japanese (MeCab) on the Japanese and tokenise_mic on the English
captions (alternating rounds, median).
Writes results/benchmarks/coco.csv.

    .venv/bin/python benchmarks/coco.py [--images 20000] [--captions 5000] [--out CSV]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import platform
import statistics
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
import pandas as pd

from mlmm.data.coco import prepare_coco, tokenise_japanese, tokenise_mic
from mlmm.demo.grammar import raw, sample_content, tokens
from mlmm.demo.scenes import sample_scene
from mlmm.io import write_text

KARPATHY = {"val": 5000, "test": 5000, "restval": 30504, "train": 82783}  # 123,287 images
POOL = 5000  # sampled contents captions are drawn from
MIC_IMAGES = 1000


def caption_pool(rng: np.random.Generator, size: int) -> dict[str, list]:
    """Per language, `size` captions of the demo grammar ('en_tokens': Karpathy's tokens)."""
    contents = []
    while len(contents) < size:
        scene = sample_scene(rng)
        contents += [sample_content(scene, rng) for _ in range(5)]
    pool = {lang: [raw(tokens(c, lang), lang) for c in contents] for lang in ("en", "fr", "de")}
    pool["ja"] = [raw(tokens(c, "ja"), "ja") for c in contents]
    pool["en_tokens"] = [[t.lower() for t in tokens(c, "en") if t.isalnum()] for c in contents]
    return pool


def write_inputs(root: Path, images: int, pool: dict[str, list], seed: int = 0) -> dict[str, str]:
    """Karpathy JSON, STAIR train/val JSON and a MIC directory under `root`; their paths."""
    rng = np.random.default_rng(seed)
    counts = {s: round(n * images / sum(KARPATHY.values())) for s, n in KARPATHY.items()}
    counts["train"] = images - counts["val"] - counts["test"] - counts["restval"]
    splits = rng.permutation(np.repeat(list(counts), list(counts.values())))
    picks = rng.integers(0, len(pool["ja"]), size=(images, 5))
    records, stair = [], {"train2014": [], "val2014": []}
    for i, (split, five) in enumerate(zip(splits, picks, strict=True)):
        folder = "train2014" if split == "train" else "val2014"
        cocoid = 100000 + i
        sentences = [
            {"tokens": pool["en_tokens"][p], "raw": pool["en"][p], "imgid": i, "sentid": 5 * i + k}
            for k, p in enumerate(five)
        ]
        name = f"COCO_{folder}_{cocoid:012d}.jpg"
        records.append({"filepath": folder, "filename": name, "imgid": i, "split": str(split),
                        "cocoid": cocoid, "sentids": [5 * i + k for k in range(5)],
                        "sentences": sentences})  # fmt: skip
        stair[folder] += [
            {"id": 5 * i + k, "image_id": cocoid, "caption": pool["ja"][p]}
            for k, p in enumerate(five)
        ]
    paths = {"karpathy": root / "dataset_coco.json", "mic": root / "mic"}
    write_text(paths["karpathy"], json.dumps({"images": records, "dataset": "coco"}))
    for folder, anns in stair.items():
        paths[folder] = root / f"stair_captions_v1.2_{folder.removesuffix('2014')}.json"
        write_text(paths[folder], json.dumps({"annotations": anns}, ensure_ascii=False))
    train = [f"{r['filepath']}/{r['filename']}" for r in records if r["split"] == "train"]
    mic = [train[j] for j in sorted(rng.choice(len(train), min(MIC_IMAGES, len(train)), False))]
    write_text(paths["mic"] / "images.txt", "".join(f"{rel}\n" for rel in mic))
    lines = rng.integers(0, len(pool["ja"]), size=5 * len(mic))
    for lang in ("en", "fr", "de"):
        write_text(paths["mic"] / f"captions.{lang}", "".join(pool[lang][p] + "\n" for p in lines))
    return {role: str(path) for role, path in paths.items()}


def peak_rss_kib() -> int:
    """This process's peak RSS (VmHWM; ru_maxrss would include the parent's, kept over exec)."""
    status = Path("/proc/self/status").read_text()
    return int(next(line for line in status.splitlines() if line.startswith("VmHWM:")).split()[1])


def run_prepare(out: str, inputs: dict[str, str]) -> dict:
    """In a fresh process: prepare_coco's wall seconds, peak RSS and the peak before the call."""
    before = peak_rss_kib()
    start = time.perf_counter()
    counts = prepare_coco(out, inputs["karpathy"], [inputs["train2014"], inputs["val2014"]],
                          inputs["mic"])  # fmt: skip
    seconds = time.perf_counter() - start
    stages = json.loads((Path(out) / "provenance.json").read_text())["timings"]
    return {"seconds": seconds, "rss_before_kib": before, "rss_peak_kib": peak_rss_kib(),
            "counts": counts, "stages": stages}  # fmt: skip


def captions_per_second(tokenise, captions: list[str]) -> float:
    start = time.perf_counter()
    for caption in captions:
        tokenise(caption)
    return len(captions) / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", type=int, default=20000, help="123287: the real size")
    parser.add_argument("--captions", type=int, default=5000, help="per tokeniser and round")
    parser.add_argument("--rounds", type=int, default=3, help="tokeniser rounds, alternating")
    parser.add_argument("--out", type=Path, default=Path("results/benchmarks/coco.csv"))
    args = parser.parse_args()
    pool = caption_pool(np.random.default_rng(0), POOL)
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        inputs = write_inputs(Path(tmp) / "inputs", args.images, pool)
        print(f"inputs written in {time.perf_counter() - start:.1f} s", flush=True)
        spawn = multiprocessing.get_context("spawn")
        with ProcessPoolExecutor(1, mp_context=spawn) as child:
            prepared = child.submit(run_prepare, str(Path(tmp) / "coco"), inputs).result()
    ja, en = pool["ja"][: args.captions], pool["en"][: args.captions]
    tokenise_japanese(ja[0]), tokenise_mic(en[0], "en")  # load MeCab's dictionary, the regex
    speeds = [[], []]
    for _ in range(args.rounds):  # alternate, so both see the same load
        speeds[0].append(captions_per_second(tokenise_japanese, ja))
        speeds[1].append(captions_per_second(lambda c: tokenise_mic(c, "en"), en))
    mecab, regex = map(statistics.median, speeds)
    rows = [
        ("prepare_coco", "wall", prepared["seconds"], "s"),
        ("prepare_coco", "peak RSS", prepared["rss_peak_kib"] / 1024, "MiB"),
        ("prepare_coco", "peak RSS before (baseline)", prepared["rss_before_kib"] / 1024, "MiB"),
        *[("prepare_coco stage", name, s, "s") for name, s in prepared["stages"].items()],
        ("tokeniser", "tokenise_japanese (MeCab, ja)", mecab, "captions/s"),
        ("tokeniser", "tokenise_mic (en)", regex, "captions/s"),
        ("tokeniser", "MeCab / tokenise_mic", mecab / regex, "ratio"),
    ]
    counts = prepared["counts"]
    frame = pd.DataFrame(rows, columns=["measure", "what", "value", "unit"]).assign(
        images=args.images,
        ja_captions=5 * (counts["train"] + counts["val"] + counts["test"]),
        mic_images=counts["mic"],
        tokeniser_captions=len(ja),
        host=platform.node(),
        load_average=round(os.getloadavg()[0], 1),
    )
    frame["value"] = frame["value"].round(3)
    write_text(args.out, frame.to_csv(index=False))
    print(frame.to_string(index=False))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
