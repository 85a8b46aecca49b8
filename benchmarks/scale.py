"""Scale rehearsal: every non-network stage at 1/16 .. 1 of the paper's data sizes.

Inputs of the real layouts are generated per fraction (Zipf-distributed random words for
captions, talks and n-best hypotheses; random float32 arrays of the real shapes for image
features and embeddings: images and a CNN are not what these stages cost), then each stage runs
in its own Python process (`--run-stage`), so that its peak resident memory is its own (VmHWM
of that process: interpreter, imports, the stage's inputs in memory and its work). The wall
time is that of the stage's work alone; generating in-memory inputs (TED talks, embeddings) is
outside the timer but inside the peak, as reading them would be. Full sizes (fraction 1):

- Multi30K: 29,000 / 1,014 / 1,000 images; task1 en/de/fr/cs one caption each, task2 en/de
  five each (raw .gz and tok): validation (`mlmm.data.prepare.validate`), vocabularies
  (`write_vocabularies`), caption encoding and batching (vocabulary per language, every
  training caption encoded and padded in batches of 128);
- COCO: Karpathy's dataset_coco.json of 123,287 images x 5 captions (`read_karpathy`); pivot
  data assembly (`mlmm.pivot.data.load`: Z1 of the paper's split, 123,287 fc6 rows of 4,096
  float32 from the Karpathy arrays, 5 captions each, standardised; 1,000 MIC test images);
- retrieval training: 5 steps of the Kadar family at batch 128 on the CPU (the cost of a
  step, which does not grow with the data; benchmarks/gpu_hours.py counts the steps);
- evaluation (`retrieval_metrics`, 1,024-d): Multi30K 1K (1,000 images x 5 captions), COCO
  1K x 5 folds and COCO 5K (5,000 images x 25,000 captions); STS (`sts_pearson`, 3 x 750 pairs);
- n-best reranking: 20-best lists of the Multi30K test set (1,000 sentences, 6 features):
  `read_nbest`, BLEU statistics, 60 epochs of MIRA (config.yaml's nmt.mira.iters), `rerank`;
- TED CLDC: 11 pairs x 1,100 talks of 2,000 tokens a side, vocabularies of 31K-60K words:
  bag-of-words (`vocabulary`, `count_matrix`) and the averaged perceptron per topic (12) and
  pair.

Writes results/benchmarks/scale.csv (stage, fraction, size, seconds, peak RSS, the RSS of the
same process before the stage) after every fraction, keeping an earlier run's rows of the
stages and fractions not run this time (rerun one stage after a fix with --stages); then
scale_exponents.csv (the log-log slope of CPU seconds, of wall seconds and of the stage's own
memory, peak minus start, against its natural size, over the three largest fractions run) and
scale.png (CPU seconds against fraction, one line per stage). docs/scale.md reads them.

    python benchmarks/scale.py [--quick] [--fractions 0.0625 0.125 ...] [--stages NAME ...]
"""

from __future__ import annotations

import argparse
import gzip
import json
import math
import resource
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
FRACTIONS = (1 / 16, 1 / 8, 1 / 4, 1 / 2, 1.0)
QUICK_FRACTIONS = (1 / 16, 1 / 8)
MULTI30K = {"train": 29_000, "val": 1_014, "test_2016_flickr": 1_000}
COCO = {"train": 113_287, "val": 5_000, "test": 5_000}
FC6, EMBED = 4_096, 1_024
TED_PAIRS, TED_TALKS, TED_TOKENS, TED_TOPICS = 11, 1_100, 2_000, 12
NBEST_SENTENCES, NBEST_K, NBEST_FEATURES, MIRA_ITERS = 1_000, 20, 6, 60
STS_PAIRS = 3 * 750
MIC_IMAGES = 1_000
VOCABULARY = {"en": 10_000, "de": 16_000, "fr": 11_000, "cs": 22_000}


def scaled(n: int, fraction: float, multiple: int = 1) -> int:
    return max(multiple, round(n * fraction / multiple) * multiple)


class Zipf:
    """Words ``<lang><rank>`` drawn with probability proportional to 1 / rank."""

    def __init__(self, lang: str, size: int, seed: int = 0) -> None:
        self.words = [f"{lang}{i}" for i in range(size)]
        p = 1.0 / np.arange(1, size + 1)
        self.p = p / p.sum()
        self.rng = np.random.default_rng(seed)

    def sentences(self, n: int, low: int = 6, high: int = 20) -> list[str]:
        lengths = self.rng.integers(low, high, size=n)
        ids = self.rng.choice(len(self.words), size=int(lengths.sum()), p=self.p)
        words, out, start = self.words, [], 0
        for length in lengths:
            out.append(" ".join(words[i] for i in ids[start : start + length]))
            start += length
        return out

    def documents(self, n: int, tokens: int) -> list[list[str]]:
        ids = self.rng.choice(len(self.words), size=(n, tokens), p=self.p)
        return [[self.words[i] for i in row] for row in ids]


# ---------------------------------------------------------------- inputs on disk


def _lines(path: Path, lines: list[str], gz: bool = False) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    text = "".join(f"{line}\n" for line in lines).encode()
    path.write_bytes(gzip.compress(text, mtime=0) if gz else text)


def make_multi30k(root: Path, fraction: float) -> None:
    from mlmm.data.multi30k import CAPTIONS_PER_IMAGE, TASK2_SPLITS

    zipf = {lang: Zipf(lang, size, seed) for seed, (lang, size) in enumerate(VOCABULARY.items())}
    for split, (prefix, list_name) in TASK2_SPLITS.items():
        n = scaled(MULTI30K[split], fraction)
        names = [f"{split}{i:06d}.jpg" for i in range(n)]
        _lines(root / f"data/task1/image_splits/{split}.txt", names)
        _lines(root / f"data/task2/image_splits/{list_name}.txt", names)
        for lang, words in zipf.items():
            text = words.sentences(n)
            _lines(root / f"data/task1/raw/{split}.{lang}.gz", text, gz=True)
            _lines(root / f"data/task1/tok/{split}.lc.norm.tok.{lang}", text)
        for lang in ("en", "de"):
            for k in range(1, CAPTIONS_PER_IMAGE + 1):
                text = zipf[lang].sentences(n)
                _lines(root / f"data/task2/raw/{prefix}.{k}.{lang}.gz", text, gz=True)
                _lines(root / f"data/task2/tok/{prefix}.lc.norm.tok.{k}.{lang}", text)


def make_coco(root: Path, fraction: float) -> None:
    """Karpathy's JSON and, for the pivot stage, image lists and fc6 feature arrays (each with
    the sidecar and record its readers require)."""
    from mlmm.features.extraction import Outputs, write_beside

    zipf, rng = Zipf("en", VOCABULARY["en"]), np.random.default_rng(0)
    images = []
    for split, n in COCO.items():
        captions = iter(zipf.sentences(5 * scaled(n, fraction)))
        n = scaled(n, fraction)
        names = [f"COCO_{split}_{i:012d}.jpg" for i in range(n)]
        _lines(root / f"coco/data/task1/image_splits/{split}.txt", names)
        path = root / f"features/alexnet_fc6/{split}.npy"
        path.parent.mkdir(parents=True, exist_ok=True)
        array = np.lib.format.open_memmap(path, "w+", np.float32, (n, FC6))
        for a in range(0, n, 4096):
            array[a : a + 4096] = rng.random((min(4096, n - a), FC6), dtype=np.float32)
        array.flush()
        del array
        write_beside(Outputs(path), names, split, {"backbone": "alexnet_fc6", "dim": FC6})
        for name in names:
            five = [next(captions) for _ in range(5)]
            sentences = [{"tokens": s.split(), "raw": s} for s in five]
            images.append({"filepath": f"{split}2014", "filename": name, "split": split,
                           "cocoid": len(images), "sentences": sentences})  # fmt: skip
    (root / "dataset_coco.json").write_text(json.dumps({"images": images}))
    # the pivot stage's Z1 (the paper's: every Karpathy image but MIC's) and MIC test split
    pivot = [f"COCO_{split}_{i:012d}.jpg" for split, n in COCO.items()
             for i in range(scaled(n, fraction))]  # fmt: skip
    mic = [f"MIC_{i:06d}.jpg" for i in range(MIC_IMAGES)]
    path = root / "features/alexnet_fc6/mic.npy"
    np.save(path, rng.random((MIC_IMAGES, FC6), np.float32))
    write_beside(Outputs(path), mic, "mic", {"backbone": "alexnet_fc6", "dim": FC6})
    for split, names in (("pivot_train", pivot), ("mic", mic)):
        _lines(root / f"coco/data/task1/image_splits/{split}.txt", names)
        for k in range(1, 6):
            _lines(root / f"coco/data/task2/tok/{split}.lc.norm.tok.{k}.en",
                   zipf.sentences(len(names)))  # fmt: skip


def make_nbest(root: Path, fraction: float) -> None:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from mira import write_text_lists

    root.mkdir(parents=True, exist_ok=True)
    write_text_lists(root, scaled(NBEST_SENTENCES, fraction), NBEST_K, NBEST_FEATURES)


INPUTS: dict[str, Callable[[Path, float], None]] = {
    "multi30k": make_multi30k, "coco": make_coco, "nbest": make_nbest,
}  # fmt: skip


# ---------------------------------------------------------------- stages
# Each returns (natural size, unit, work): setup before, the timed work in the callable.


def stage_multi30k_validate(work: Path, fraction: float):
    from mlmm.data.prepare import validate

    captions = 14 * sum(scaled(n, fraction) for n in MULTI30K.values())
    return captions, "captions", lambda: validate(work / "multi30k")


def stage_multi30k_vocabularies(work: Path, fraction: float):
    from mlmm.data.prepare import write_vocabularies

    out = work / "out" / "vocab"
    captions = 14 * scaled(MULTI30K["train"], fraction)
    return captions, "captions", lambda: write_vocabularies(work / "multi30k", out, 4)


def stage_caption_batches(work: Path, fraction: float):
    from mlmm.data.multi30k import comparable_captions, translation_captions
    from mlmm.data.vocab import Vocabulary
    from mlmm.retrieval.data import pad

    root = work / "multi30k"

    def run():
        captions = {lang: translation_captions(root, "train", lang) for lang in VOCABULARY}
        for lang in ("en", "de"):
            captions[lang] += [c for five in comparable_captions(root, "train", lang) for c in five]
        for sentences in captions.values():
            vocab = Vocabulary.from_sentences(sentences, 4)
            encoded = [vocab.encode(s) for s in sentences]
            for a in range(0, len(encoded), 128):
                pad(encoded[a : a + 128])

    return 14 * scaled(MULTI30K["train"], fraction), "captions", run


def _evaluation(images: int, folds: int):
    def stage(work: Path, fraction: float):
        from mlmm.evaluation import retrieval_metrics

        n = scaled(images, fraction, folds)
        rng = np.random.default_rng(0)
        ims = rng.standard_normal((n, EMBED), dtype=np.float32)
        caps = rng.standard_normal((5 * n, EMBED), dtype=np.float32)
        size = folds * (n // folds) * (5 * n // folds)
        return size, "query x candidate pairs", lambda: retrieval_metrics(ims, caps, 5, folds=folds)

    return stage


def stage_sts(work: Path, fraction: float):
    from mlmm.evaluation import sts_pearson

    n = scaled(STS_PAIRS, fraction)
    rng = np.random.default_rng(0)
    a, b = (rng.standard_normal((n, EMBED), dtype=np.float32) for _ in range(2))
    gold = rng.random(n) * 5
    return n, "pairs", lambda: sts_pearson(a, b, gold)


def stage_nbest_mira(work: Path, fraction: float):
    from mlmm.nbest import read_nbest, read_references
    from mlmm.rerank import mira, nbest_stats, rerank

    root = work / "nbest"

    def run():
        nbest = read_nbest(root / "list.nbest")
        stats = nbest_stats(nbest.texts, read_references([root / "ref.txt"], nbest.ids))
        rerank(nbest.features, mira(nbest.features, stats, MIRA_ITERS).weights)

    return scaled(NBEST_SENTENCES, fraction) * NBEST_K, "hypotheses", run


def _ted_corpus(fraction: float):
    """Per pair: foreign and English talks; foreign vocabularies 31K-60K words, English 60K."""
    talks = scaled(TED_TALKS, fraction)
    sizes = np.linspace(31_213, 60_326, TED_PAIRS).astype(int)
    english = Zipf("en", 60_326, 99)
    return {f"l{i}": (Zipf(f"l{i}", int(v), i).documents(talks, TED_TOKENS),
                      english.documents(talks, TED_TOKENS))
            for i, v in enumerate(sizes)}, talks  # fmt: skip


def stage_ted_bow(work: Path, fraction: float):
    from mlmm.ted.bow import count_matrix, vocabulary

    corpus, talks = _ted_corpus(fraction)

    def run():
        english = {" ".join(d): d for _, docs in corpus.values() for d in docs}
        words, _ = vocabulary(list(english.values()), 3)
        for foreign, docs in corpus.values():
            count_matrix(foreign, vocabulary(foreign, 3)[0])
            count_matrix(docs, words)

    return 2 * TED_PAIRS * talks * TED_TOKENS, "tokens", run


def stage_ted_perceptron(work: Path, fraction: float):
    from mlmm.ted.bow import count_matrix, vocabulary
    from mlmm.ted.classify import classify, perceptron

    corpus, talks = _ted_corpus(fraction)
    rng = np.random.default_rng(0)
    data = []
    for foreign, _ in corpus.values():
        x = count_matrix(foreign, vocabulary(foreign, 3)[0])
        y = rng.random((talks, TED_TOPICS)) < 0.2
        data.append((x, y))
    del corpus
    cut = max(1, talks * 9 // 10)

    def run():
        for x, y in data:
            classify(perceptron, x[:cut], y[:cut], {"test": (x[cut:], y[cut:])})

    return TED_PAIRS * talks, "talks", run


def stage_coco_karpathy(work: Path, fraction: float):
    from mlmm.data.coco import read_karpathy

    images = sum(scaled(n, fraction) for n in COCO.values())
    return images, "images", lambda: read_karpathy(work / "coco" / "dataset_coco.json")


def stage_pivot_assembly(work: Path, fraction: float):
    from mlmm.data.multi30k import image_list
    from mlmm.pivot.data import TRAIN_SPLIT, load

    coco = work / "coco" / "coco"
    images = len(image_list(coco, TRAIN_SPLIT))
    features = work / "coco" / "features"
    return images, "images", lambda: load(coco, features, "alexnet_fc6", None, None, 2, 0.05,
                                          1000, 1, standardise_images=True)  # fmt: skip


def stage_training_steps(work: Path, fraction: float):
    """5 retrieval training steps (Kadar family, batch 128, CPU): the cost per step, which
    the size of the data set does not change (benchmarks/gpu_hours.py multiplies it)."""
    import torch

    sys.path.insert(0, str(ROOT / "benchmarks"))
    from retrieval import SETTINGS, run

    name = next(iter(SETTINGS))
    captions = 14 * scaled(MULTI30K["train"], fraction)
    device, generator = torch.device("cpu"), torch.Generator().manual_seed(0)
    return captions, "training captions (5 steps)", lambda: run(
        name, SETTINGS[name], 128, 5, device, generator, "fp32")


STAGES: dict[str, tuple[tuple[str, ...], Callable]] = {
    "multi30k_validate": (("multi30k",), stage_multi30k_validate),
    "multi30k_vocabularies": (("multi30k",), stage_multi30k_vocabularies),
    "caption_batches": (("multi30k",), stage_caption_batches),
    "coco_karpathy_read": (("coco",), stage_coco_karpathy),
    "pivot_assembly": (("coco",), stage_pivot_assembly),
    "training_steps": ((), stage_training_steps),
    "eval_multi30k_1k": ((), _evaluation(1_000, 1)),
    "eval_coco_1k_5fold": ((), _evaluation(5_000, 5)),
    "eval_coco_5k": ((), _evaluation(5_000, 1)),
    "sts": ((), stage_sts),
    "nbest_mira": (("nbest",), stage_nbest_mira),
    "ted_bow": ((), stage_ted_bow),
    "ted_perceptron": ((), stage_ted_perceptron),
}


def peak_rss_mb() -> float:
    """This process's peak resident memory: VmHWM, which starts afresh at exec (ru_maxrss
    would carry the parent's size over into a child it forks)."""
    status = Path("/proc/self/status")
    if status.is_file():
        for line in status.read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024  # kB
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def run_stage(name: str, work: Path, fraction: float) -> dict:
    """In the child process: set up, time the work, report the process's peak memory."""
    start_rss = peak_rss_mb()
    size, unit, work_fn = STAGES[name][1](work, fraction)
    setup_rss = peak_rss_mb()
    start, cpu = time.perf_counter(), time.process_time()
    work_fn()
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    return {"stage": name, "fraction": fraction, "size": size, "unit": unit,
            "seconds": seconds, "cpu_seconds": cpu, "peak_rss_mb": peak_rss_mb(),
            "start_rss_mb": start_rss, "setup_rss_mb": setup_rss}  # fmt: skip


def in_child(args: list[str]) -> dict:
    out = subprocess.run([sys.executable, __file__, *args], capture_output=True, text=True)
    if out.returncode:
        raise RuntimeError(f"{' '.join(args)} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


# ---------------------------------------------------------------- growth


def exponents(frame):
    """Per stage: log-log slope of seconds and of its own memory (peak - start) against size,
    and its figures at the largest fraction measured."""
    import pandas as pd

    rows = []
    for stage, group in frame.groupby("stage", sort=False):
        group = group.sort_values("fraction")
        last = group.iloc[-1]
        row = {"stage": stage, "unit": last["unit"], "fractions": len(group),
               "largest_fraction": last["fraction"], "size": last["size"],
               "seconds": round(last["seconds"], 3),
               "cpu_seconds": round(last.get("cpu_seconds", math.nan), 3),
               "peak_rss_mb": round(last["peak_rss_mb"]),
               "time_exponent": math.nan, "wall_exponent": math.nan,
               "memory_exponent": math.nan}  # fmt: skip
        # the growth at scale (the three largest fractions), not the fixed costs of the smallest
        if len(group) >= 2:
            tail = group.tail(3)
            x = np.log(tail["size"].to_numpy(float))
            row["wall_exponent"] = round(np.polyfit(x, np.log(tail["seconds"]), 1)[0], 2)
            own = (tail["peak_rss_mb"] - tail["start_rss_mb"]).clip(lower=1.0)
            row["memory_exponent"] = round(np.polyfit(x, np.log(own), 1)[0], 2)
        # time: CPU seconds where measured (a niced process's wall time on a shared machine
        # swings with the other users' load, its CPU time much less), else wall seconds
        timed = group.dropna(subset=["cpu_seconds"]) if "cpu_seconds" in group else group[:0]
        timed, column = (timed, "cpu_seconds") if len(timed) >= 2 else (group, "seconds")
        if len(timed) >= 2:
            tail = timed.tail(3)
            x = np.log(tail["size"].to_numpy(float))
            row["time_exponent"] = round(np.polyfit(x, np.log(tail[column]), 1)[0], 2)
        rows.append(row)
    return pd.DataFrame(rows)


def plot(frame, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from mlmm.io import atomic_path

    cpu = "cpu_seconds" in frame and frame["cpu_seconds"].notna().all()
    column = "cpu_seconds" if cpu else "seconds"
    fig, ax = plt.subplots(figsize=(8, 5.5))
    for i, (stage, group) in enumerate(frame.groupby("stage", sort=False)):
        group = group.sort_values("fraction")
        ax.plot(group["fraction"], group[column], marker="os^D"[i // 10], label=stage,
                linestyle="-" if i < 10 else "--")  # fmt: skip
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("fraction of the paper's data size")
    ax.set_ylabel(f"{'CPU' if cpu else 'wall'} seconds (one process per stage)")
    ax.set_title("Scale rehearsal: slope = growth exponent")
    ax.legend(fontsize=7, loc="upper left")
    fig.tight_layout()
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format="png", dpi=110)
    plt.close(fig)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fractions 1/16 and 1/8 only")
    parser.add_argument("--fractions", type=float, nargs="+", help="instead of 1/16 .. 1")
    parser.add_argument("--stages", nargs="+", choices=sorted(STAGES), help="default: all")
    parser.add_argument("--work", type=Path, default=ROOT / "results/benchmarks/scale_inputs",
                        help="where generated inputs are kept (reused across runs)")
    parser.add_argument("--out", type=Path, default=ROOT / "results/benchmarks/scale.csv")
    parser.add_argument("--report-only", action="store_true",
                        help="refit the exponents and redraw the plot from --out's rows")
    parser.add_argument("--run-stage", help=argparse.SUPPRESS)
    parser.add_argument("--make-inputs", help=argparse.SUPPRESS)
    parser.add_argument("--fraction", type=float, help=argparse.SUPPRESS)
    args = parser.parse_args()  # fmt: skip
    if args.run_stage:
        print(json.dumps(run_stage(args.run_stage, args.work, args.fraction)))
        return
    if args.report_only:
        import pandas as pd

        report(pd.read_csv(args.out), args.out)
        return
    if args.make_inputs:
        INPUTS[args.make_inputs](args.work / args.make_inputs, args.fraction)
        print("{}")
        return
    import pandas as pd

    from mlmm.io import write_text

    fractions = args.fractions or (QUICK_FRACTIONS if args.quick else FRACTIONS)
    stages = args.stages or list(STAGES)
    rows = []  # a previous CSV's rows of stages or fractions not run this time are kept
    if args.out.is_file():
        kept = pd.read_csv(args.out)
        rerun = kept["stage"].isin(stages) & kept["fraction"].isin(fractions)
        rows = kept.loc[~rerun].to_dict("records")
    for fraction in sorted(fractions):
        work = args.work / f"f{fraction:g}"
        for kind in sorted({k for s in stages for k in STAGES[s][0]}):
            if not (work / kind / ".done").is_file():
                in_child(["--make-inputs", kind, "--work", str(work), "--fraction", str(fraction)])
                (work / kind / ".done").write_text("")
        for stage in stages:
            row = in_child(["--run-stage", stage, "--work", str(work), "--fraction", str(fraction)])
            rows.append(row)
            print(f"{stage:24s} 1/{1 / fraction:<4g} {row['size']:>14,} {row['unit']:24s} "
                  f"{row['seconds']:8.2f} s {row['peak_rss_mb']:8.0f} MB", flush=True)  # fmt: skip
        frame = pd.DataFrame(rows)
        write_text(args.out, frame.to_csv(index=False))
    report(frame, args.out)


def report(frame, out: Path) -> None:
    from mlmm.io import write_text

    table = exponents(frame)
    write_text(out.with_name(out.stem + "_exponents.csv"), table.to_csv(index=False))
    plot(frame, out.with_suffix(".png"))
    print(table.to_string(index=False))


if __name__ == "__main__":
    main()
