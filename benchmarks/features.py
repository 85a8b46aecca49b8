"""Throughput of `mlmm.features.extract` against the plain loop most repositories use.

For each backbone, on the same device and in the same run: our pipeline at its default batch
size and workers, and a single-process baseline (PIL open -> transform -> model, batch of 1
and of 32). Writes images/s and the speed-up over each baseline to results/benchmarks/features.csv.
torchvision backbones run with random weights (throughput does not depend on the values);
EfficientNet-Lite0 with its packaged weights. Nothing is asserted.

    .venv/bin/python benchmarks/features.py [--images 32] [--device auto] [--backbones ...]

Rows of backbones not named in --backbones are kept from an existing CSV, so the heavy
backbones can be measured with fewer images in a second call.
"""

from __future__ import annotations

import argparse
import platform
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
import torch
from PIL import Image

from mlmm.features import BACKBONES, FeatureNet, build_trunk, extract, make_transform
from mlmm.features.extraction import resolve_device
from mlmm.io import atomic_path

ROOT = Path(__file__).resolve().parents[1]


def make_images(root: Path, count: int) -> Path:
    """JPEGs of Flickr30K's typical size (500 x 375) with noise, so decoding costs what it does."""
    rng = np.random.default_rng(0)
    (root / "images").mkdir(parents=True)
    names = []
    for i in range(count):
        pixels = rng.integers(0, 256, size=(375, 500, 3), dtype=np.uint8)
        names.append(f"{i:05d}.jpg")
        Image.fromarray(pixels).save(root / "images" / names[-1], quality=90)
    (root / "list.txt").write_text("\n".join(names) + "\n", encoding="utf-8")
    return root / "list.txt"


def weights_for(backbone: str) -> str | None:
    return "DEFAULT" if BACKBONES[backbone].torchvision_arch is None else None


def synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize()


def baseline(backbone: str, paths: list[Path], batch: int, device: torch.device) -> float:
    """Images/s of the plain loop: no workers, no mixed precision, float32."""
    spec = BACKBONES[backbone]
    model = FeatureNet(build_trunk(spec, weights_for(backbone))[0]).eval().to(device)
    transform = make_transform(spec)
    with torch.no_grad(), Image.open(paths[0]) as image:  # warm-up: first calls pick kernels
        model(transform(image.convert("RGB"))[None].to(device))
    synchronize(device)
    start = time.perf_counter()
    with torch.no_grad():
        for first in range(0, len(paths), batch):
            tensors = []
            for path in paths[first : first + batch]:
                with Image.open(path) as image:
                    tensors.append(transform(image.convert("RGB")))
            model(torch.stack(tensors).to(device)).cpu()
    synchronize(device)
    return len(paths) / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", type=int, default=32)
    parser.add_argument("--device", default="auto", choices=("auto", "cpu", "cuda"))
    parser.add_argument("--backbones", nargs="+", default=list(BACKBONES), choices=list(BACKBONES))
    parser.add_argument("--out", type=Path, default=ROOT / "results/benchmarks/features.csv")
    args = parser.parse_args()
    device = resolve_device(args.device)
    device_name = (
        torch.cuda.get_device_name(device) if device.type == "cuda" else platform.processor()
    )
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        split = make_images(Path(tmp), args.images)
        paths = [Path(tmp) / "images" / name for name in split.read_text().split()]
        for backbone in args.backbones:
            plain = {b: baseline(backbone, paths, b, device) for b in (1, 32)}
            sidecar = extract(
                Path(tmp) / "images",
                split,
                Path(tmp) / f"out/{backbone}.npy",
                backbone,
                weights=weights_for(backbone),
                device=args.device,
                progress=False,
            )
            config = sidecar["provenance"]["config"]
            ours = sidecar["images_per_second"]
            common = {"device": str(device), "device_name": device_name or platform.machine(),
                      "threads": torch.get_num_threads(), "backbone": backbone,
                      "images": args.images}  # fmt: skip
            for method, batch, workers, speed in [
                ("mlmm.features", config["batch_size"], config["workers"], ours),
                ("baseline", 1, 0, plain[1]),
                ("baseline", min(32, args.images), 0, plain[32]),
            ]:
                rows.append({**common, "method": method, "batch_size": batch, "workers": workers,
                             "images_per_second": round(speed, 3),
                             "speedup_vs_baseline_b1": round(speed / plain[1], 3),
                             "speedup_vs_baseline_b32": round(speed / plain[32], 3)})  # fmt: skip
            print(pd.DataFrame(rows[-3:]).to_string(index=False), flush=True)
    table = pd.DataFrame(rows)
    if args.out.is_file():  # keep the rows of backbones not measured this time
        earlier = pd.read_csv(args.out)
        table = pd.concat([earlier[~earlier["backbone"].isin(args.backbones)], table])
    with atomic_path(args.out) as tmp_csv:
        table.to_csv(tmp_csv, index=False)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
