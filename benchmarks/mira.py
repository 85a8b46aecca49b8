"""k-best batch MIRA end to end beside Moses' kbmira: 100 sentences x 100-best x 300 epochs.

Side by side in one run, on the same Moses-format n-best list and reference file (random
words, 10 dense features): `mlmm mira` as a command (start-up, reading the list, BLEU
statistics, 300 epochs, writing the weights) and Moses' `extractor` + `kbmira` (the same steps
in C++: statistics and features files, then tuning with --dense-init at zero weights). Each is
run --repeats times, interleaved, and the fastest run of each is kept (the machine is shared).
The in-process stages of `mlmm mira` are timed too, so a regression shows where it is.
Moses is found in --moses (a directory holding the `extractor` and `kbmira` binaries, built from
moses-smt/mosesdecoder's mert/, see docs/nmt.md) or on PATH; without it only mlmm is timed.
`loop_mira` below is the same algorithm as one Python loop iteration per hypothesis, the
reference tests/test_rerank.py compares `mlmm.rerank.mira` with. Writes
results/benchmarks/mira.csv.

`--agreement` compares the steps instead of the time: kbmira --no-shuffle against
`mira(shuffle=False)`, epoch by epoch (updates, average loss, tuning BLEU), and the best tuning
BLEU of shuffled runs over seeds 1-3, for each Moses build given (--moses, and --moses-fixed: a
build with the one-line fix of kbmira's hypothesis de-duplication, `build_kbmira.sh ...
--fix-dedup`; docs/nmt.md says why). Writes results/benchmarks/mira_agreement.csv.

    python benchmarks/mira.py [--sentences 100] [--kbest 100] [--epochs 300] [--moses DIR]
                              [--before OLD_CHECKOUT]
    python benchmarks/mira.py --agreement --moses DIR [--moses-fixed DIR] [--epochs 300]
"""

from __future__ import annotations

import argparse
import math
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

from mlmm.io import write_text
from mlmm.rerank import N_STATS, ORDER, REFLEN, corpus_bleu, mira


def synthetic_lists(sentences: int, kbest: int, features: int, seed: int = 0):
    """Random n-best lists whose BLEU statistics correlate with the features."""
    rng = np.random.default_rng(seed)
    truth = rng.normal(size=features)
    feats, stats = [], []
    for _ in range(sentences):
        f = rng.normal(size=(kbest, features))
        quality = 0.8 / (1 + np.exp(-(f @ truth + rng.normal(scale=2.0, size=kbest))))
        length = rng.integers(8, 20, size=kbest).astype(float)
        s = np.zeros((kbest, N_STATS))
        for n in range(ORDER):
            s[:, ORDER + n] = np.maximum(length - n, 0)
            s[:, n] = np.floor(s[:, ORDER + n] * quality ** (n + 1))
        s[:, REFLEN] = rng.integers(8, 20)
        feats.append(f)
        stats.append(s)
    return feats, stats


def loop_mira(features, stats, iters, c=0.01, decay=0.999, seed=1):
    """Per-hypothesis Python loops; same arithmetic and shuffling as `mlmm.rerank.mira`."""
    kept = [np.sort(np.unique(f, axis=0, return_index=True)[1]) for f in features]
    feats = [[list(f[i]) for i in k] for f, k in zip(features, kept, strict=True)]
    stat = [[list(s[i]) for i in k] for s, k in zip(stats, kept, strict=True)]
    d = len(feats[0][0])
    w, totals, updates = [0.0] * d, [0.0] * d, 0
    bg = [1.0] * N_STATS
    rng = np.random.default_rng(seed)

    def dot(a, b):
        return sum(x * y for x, y in zip(a, b, strict=True))

    def sbleu(s):
        t = [a + b for a, b in zip(s, bg, strict=True)]
        logp = sum(math.log(t[n]) - math.log(t[ORDER + n]) for n in range(ORDER)) / ORDER
        return math.exp(logp + min(0.0, 1 - t[REFLEN] / t[ORDER])) * t[REFLEN]

    def evaluate(weights):
        total = np.zeros(N_STATS)
        for fs, ss in zip(feats, stat, strict=True):
            scores = [dot(f, weights) for f in fs]
            total += ss[scores.index(max(scores))]
        return corpus_bleu(total)

    best = -math.inf
    for _ in range(iters):
        for i in rng.permutation(len(feats)):
            hope = fear = None
            for j, (f, s) in enumerate(zip(feats[i], stat[i], strict=True)):
                score, b = dot(f, w), sbleu(s)
                if hope is None or score + b > hope[0]:
                    hope = (score + b, j, b)
                if fear is None or score - b > fear[0]:
                    fear = (score - b, j, b)
            if hope[1] == fear[1] or hope[2] <= fear[2]:
                continue
            diff = [a - b for a, b in zip(feats[i][hope[1]], feats[i][fear[1]], strict=True)]
            loss = hope[2] - fear[2] - dot(diff, w)
            if loss > 0:
                eta = min(c, loss / dot(diff, diff))
                w = [a + eta * b for a, b in zip(w, diff, strict=True)]
                totals = [a + b for a, b in zip(totals, w, strict=True)]
                updates += 1
            bg = [decay * a + b for a, b in zip(bg, stat[i][hope[1]], strict=True)]
        avg = [t / updates for t in totals] if updates else list(w)
        best = max(best, evaluate(avg))
    return best


def write_text_lists(root: Path, sentences: int, kbest: int, features: int, seed: int = 0):
    """A Moses n-best list of random-word hypotheses (about 60 % of each reference's words)
    and its reference file; features are random, the score their sum."""
    rng = np.random.default_rng(seed)
    words = [f"w{i}" for i in range(300)]
    lines, refs = [], []
    for s in range(sentences):
        ref = list(rng.choice(words, size=rng.integers(8, 20)))
        refs.append(" ".join(ref))
        for _ in range(kbest):
            hyp = [w if rng.random() < 0.6 else str(rng.choice(words)) for w in ref]
            hyp = hyp[: len(hyp) + int(rng.integers(-3, 3))]
            f = rng.normal(size=features)
            labelled = " ".join(f"F{j}= {float(v)!r}" for j, v in enumerate(f))
            lines.append(f"{s} ||| {' '.join(hyp)} ||| {labelled} ||| {float(f.sum())!r}")
    (root / "list.nbest").write_text("\n".join(lines) + "\n")
    (root / "ref.txt").write_text("\n".join(refs) + "\n")
    (root / "init.txt").write_text("".join(f"F{j}= 0\n" for j in range(features)))


def seconds(command: list[str], cwd: Path, env: dict | None = None) -> float:
    """Wall time of one run. Python runs with its bytecode cache, as a user's would: without
    it (PYTHONDONTWRITEBYTECODE, set in some sandboxes) every start recompiles mlmm's sources."""
    env = {k: v for k, v in (env or os.environ).items() if k != "PYTHONDONTWRITEBYTECODE"}
    start = time.perf_counter()
    subprocess.run(command, cwd=cwd, check=True, capture_output=True, env=env)
    return time.perf_counter() - start


def mira_epoch_loop() -> str:
    """Which MIRA epoch loop mlmm runs here: "compiled" (mlmm/_mira_epoch.c) or "numpy"."""
    from mlmm import rerank

    return "numpy" if rerank._mira_epoch is None else "compiled"


def stage_seconds(root: Path, epochs: int) -> dict[str, float]:
    """The in-process stages of `mlmm mira` (this process has imported them already)."""
    from mlmm.nbest import read_nbest, read_references
    from mlmm.rerank import nbest_stats

    start = time.perf_counter()
    nbest = read_nbest(root / "list.nbest")
    read = time.perf_counter()
    stats = nbest_stats(nbest.texts, read_references([root / "ref.txt"], nbest.ids))
    counted = time.perf_counter()
    mira(nbest.features, stats, epochs)
    return {"read_nbest": read - start, "nbest_stats": counted - read,
            "mira_epochs": time.perf_counter() - counted}  # fmt: skip


def extractor_command(binary) -> list[str]:
    """Moses' extractor: BLEU statistics and features files of list.nbest against ref.txt."""
    return [str(binary), "--sctype", "BLEU", "--scfile", "scores.dat", "--ffile", "features.dat",
            "-r", "ref.txt", "-n", "list.nbest"]  # fmt: skip


def kbmira_command(binary, epochs: int, order: list[str]) -> list[str]:
    """kbmira on extractor's files from zero weights (init.txt); ``order``: -r SEED or
    --no-shuffle."""
    return [str(binary), "--sctype", "BLEU", "--scfile", "scores.dat", "--ffile", "features.dat",
            "--iters", str(epochs), "-d", "init.txt", "-o", "kb.txt", *order]  # fmt: skip


KBMIRA_EPOCH = re.compile(r"^(\d+)/\d+ updates, avg loss = (\S+), BLEU = (\S+)$")


def kbmira_epochs(moses: Path, root: Path, epochs: int, seed: int | None) -> list[dict]:
    """kbmira's own per-epoch report (stderr) on the statistics and features in ``root``;
    ``seed`` None runs it with --no-shuffle."""
    order = ["--no-shuffle"] if seed is None else ["-r", str(seed)]
    done = subprocess.run(kbmira_command(moses / "kbmira", epochs, order), cwd=root,
                          check=True, capture_output=True, text=True)  # fmt: skip
    rows = [KBMIRA_EPOCH.match(line.strip()) for line in done.stderr.splitlines()]
    return [{"epoch": e, "updates": int(m[1]), "avg_loss": float(m[2]), "bleu": 100 * float(m[3])}
            for e, m in enumerate((m for m in rows if m), start=1)]  # fmt: skip


def agreement(args, moses_builds: dict[str, Path]) -> pd.DataFrame:
    """Epoch-by-epoch steps of kbmira --no-shuffle and of mlmm's mira in list order, and the
    best tuning BLEU of shuffled runs (seeds 1-3), on one list and its BLEU statistics."""
    from mlmm.nbest import read_nbest, read_references
    from mlmm.rerank import nbest_stats

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        write_text_lists(root, args.sentences, args.kbest, args.features)
        extractor = extractor_command(next(iter(moses_builds.values())) / "extractor")
        subprocess.run(extractor, cwd=root, check=True, capture_output=True)
        nbest = read_nbest(root / "list.nbest")
        stats = nbest_stats(nbest.texts, read_references([root / "ref.txt"], nbest.ids))
        ours = mira(nbest.features, stats, args.epochs, shuffle=False)
        rows += [{"implementation": "mlmm mira", "order": "list order", **h} for h in ours.history]
        for name, build in moses_builds.items():
            rows += [{"implementation": name, "order": "list order", **h}
                     for h in kbmira_epochs(build, root, args.epochs, None)]  # fmt: skip
        for seed in (1, 2, 3):
            best = mira(nbest.features, stats, args.epochs, seed=seed).best_bleu
            rows.append({"implementation": "mlmm mira", "order": f"shuffled, seed {seed}",
                         "best_bleu": best})  # fmt: skip
            for name, build in moses_builds.items():
                history = kbmira_epochs(build, root, args.epochs, seed)
                rows.append({"implementation": name, "order": f"shuffled, seed {seed}",
                             "best_bleu": max(h["bleu"] for h in history)})  # fmt: skip
    return pd.DataFrame(rows).assign(
        sentences=args.sentences, kbest=args.kbest, epochs=args.epochs, features=args.features)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sentences", type=int, default=100)
    parser.add_argument("--kbest", type=int, default=100)
    parser.add_argument("--epochs", type=int, default=300)
    parser.add_argument("--features", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--moses", type=Path, help="directory of Moses' extractor and kbmira")
    parser.add_argument("--moses-fixed", type=Path,
                        help="a Moses build with kbmira's de-duplication fixed (--agreement)")
    parser.add_argument("--agreement", action="store_true",
                        help="compare the steps with kbmira's instead of the time")
    parser.add_argument("--before", type=Path,
                        help="an older mlmm checkout (its src/ is imported) timed alongside")
    parser.add_argument("--out", type=Path, default=Path("results/benchmarks/mira.csv"))
    args = parser.parse_args()
    if args.agreement:
        builds = {"Moses kbmira": args.moses} | (
            {"Moses kbmira, de-duplication fixed": args.moses_fixed} if args.moses_fixed else {})
        if not all(b and (b / "kbmira").exists() for b in builds.values()):
            parser.error("--agreement needs --moses DIR holding extractor and kbmira")
        frame = agreement(args, builds)
        out = args.out.with_name("mira_agreement.csv")
        write_text(out, frame.to_csv(index=False))
        print(frame.to_string(index=False))
        return
    found = [shutil.which(b, path=str(args.moses) if args.moses else None)
             for b in ("extractor", "kbmira")]  # fmt: skip
    moses = all(found)
    mlmm = [sys.executable, "-m", "mlmm", "mira", "--nbest", "list.nbest", "--ref", "ref.txt",
            "--iters", str(args.epochs), "--out", "weights.txt", "--force"]  # fmt: skip
    extractor = extractor_command(found[0])
    kbmira = kbmira_command(found[1], args.epochs, ["-r", "1"])
    times: dict[str, list[float]] = {"mlmm mira (command)": []}
    if args.before:
        times["mlmm mira (command), --before checkout"] = []
    if moses:
        times |= {"Moses extractor + kbmira": [], "Moses kbmira alone": []}
    stages: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        write_text_lists(root, args.sentences, args.kbest, args.features)
        for _ in range(args.repeats):
            times["mlmm mira (command)"].append(seconds(mlmm, root))
            if args.before:
                env = os.environ | {"PYTHONPATH": str(args.before.resolve() / "src")}
                before = seconds(mlmm, root, env)
                times["mlmm mira (command), --before checkout"].append(before)
            if moses:
                extract = seconds(extractor, root)
                tune = seconds(kbmira, root)
                times["Moses extractor + kbmira"].append(extract + tune)
                times["Moses kbmira alone"].append(tune)
            for name, value in stage_seconds(root, args.epochs).items():
                stages.setdefault(f"mlmm stage: {name} (in process)", []).append(value)
    rows = [{"implementation": name, "seconds_min": min(v), "seconds_median": float(np.median(v)),
             "repeats": len(v)} for name, v in (times | stages).items()]  # fmt: skip
    frame = pd.DataFrame(rows).assign(
        sentences=args.sentences, kbest=args.kbest, epochs=args.epochs, features=args.features,
        host=platform.node(), epoch_loop=mira_epoch_loop(),
        moses="measured" if moses else "extractor/kbmira not found (--moses DIR); not timed",
    )  # fmt: skip
    if moses:
        pipeline = frame.loc[frame["implementation"] == "Moses extractor + kbmira"]
        frame["ratio_to_moses_pipeline"] = frame["seconds_min"] / pipeline["seconds_min"].iloc[0]
    write_text(args.out, frame.to_csv(index=False))
    print(frame.to_string(index=False))


if __name__ == "__main__":
    main()
