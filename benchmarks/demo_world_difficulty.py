"""How hard is the demo world? A quick retrieval proxy, no training loop.

EfficientNet-Lite0 features of every image, a ridge map from image features to a TF-IDF
bag-of-words of the English task2 captions fitted on train (penalty chosen on val by mean R@1),
and VSE++-style R@K (i2t: best of the 5 captions; t2i: the image) on the test split (5 captions
per image). A world is informative when R@1 is well below saturation and R@10 well above chance.
Writes results/benchmarks/demo_world_difficulty.csv.

    python benchmarks/demo_world_difficulty.py results/demo/world
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pandas as pd
import torch
from PIL import Image
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.linear_model import Ridge
from sklearn.preprocessing import StandardScaler, normalize

from mlmm.features.backbones import get_backbone, make_transform
from mlmm.features.efficientnet_lite import efficientnet_lite0

CAPTIONS = 5
SPLITS = ("train", "val", "test_2016")
ALPHAS = (100.0, 300.0, 1000.0, 3000.0, 10000.0, 30000.0)


def features(world: Path, names: list[str]) -> np.ndarray:
    model = efficientnet_lite0(pretrained=True).eval()
    transform = make_transform(get_backbone("efficientnet_lite0"))
    rows = []
    with torch.inference_mode():
        for start in range(0, len(names), 64):
            batch = [
                transform(Image.open(world / "images" / n).convert("RGB"))
                for n in names[start : start + 64]
            ]
            rows.append(model(torch.stack(batch)).numpy())
    return np.concatenate(rows)


def recalls(sim: np.ndarray) -> dict[str, float]:
    """sim: (images, images * CAPTIONS), caption j belongs to image j // CAPTIONS."""
    n = sim.shape[0]
    order = np.argsort(-sim, axis=1, kind="stable")
    owner = order // CAPTIONS
    i2t = np.array([np.flatnonzero(owner[i] == i).min() for i in range(n)])
    order_t = np.argsort(-sim.T, axis=1, kind="stable")
    t2i = np.array([np.flatnonzero(order_t[j] == j // CAPTIONS)[0] for j in range(sim.shape[1])])
    out = {}
    for name, ranks in (("i2t", i2t), ("t2i", t2i)):
        for k in (1, 5, 10):
            out[f"{name}_R@{k}"] = 100 * float(np.mean(ranks < k))
        out[f"{name}_medr"] = float(np.floor(np.median(ranks)) + 1)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("world", type=Path)
    parser.add_argument(
        "--out", type=Path, default=Path("results/benchmarks/demo_world_difficulty.csv")
    )
    args = parser.parse_args()
    data = args.world / "data/task2"

    def split(name: str) -> tuple[np.ndarray, list[str]]:
        names = (data / f"image_splits/{name}_images.txt").read_text().split()
        lines = [
            (data / f"tok/{name}.lc.norm.tok.{k}.en").read_text().splitlines()
            for k in range(1, CAPTIONS + 1)
        ]
        captions = [lines[k][i] for i in range(len(names)) for k in range(CAPTIONS)]
        return features(args.world, names), captions

    (x_train, c_train), (x_val, c_val), (x_test, c_test) = map(split, SPLITS)
    bow = TfidfVectorizer(token_pattern=r"\S+", sublinear_tf=True).fit(c_train)
    y_train = normalize(bow.transform(c_train).toarray())
    scaler = StandardScaler().fit(x_train)
    x_rep = np.repeat(scaler.transform(x_train), CAPTIONS, axis=0)

    def evaluate(ridge: Ridge, x: np.ndarray, captions: list[str]) -> dict[str, float]:
        predicted = normalize(ridge.predict(scaler.transform(x)))
        return recalls(predicted @ normalize(bow.transform(captions).toarray()).T)

    best = None
    for alpha in ALPHAS:
        ridge = Ridge(alpha=alpha).fit(x_rep, y_train)
        val = evaluate(ridge, x_val, c_val)
        score = val["i2t_R@1"] + val["t2i_R@1"]
        if best is None or score > best[0]:
            best = (score, alpha, ridge)
    _, alpha, ridge = best
    row = {
        "world": str(args.world),
        "train": len(x_train),
        "test": len(x_test),
        "alpha": alpha,
        **evaluate(ridge, x_test, c_test),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    pd.DataFrame([row]).to_csv(args.out, index=False)
    print(pd.DataFrame([row]).T.to_string(header=False))


if __name__ == "__main__":
    main()
