"""Throughput of `mlmm.features.extract` against the plain loop, side by side in one run.

For each backbone and each split size (a large one, and a small one that shows start-up), on
the same device: the plain loop most repositories use (one process: PIL open -> transform ->
model, batches of 32, float32) and `extract` with its defaults (worker pool, float32/TF32), and
on a GPU also `extract` with float16 and with JPEG decoding on the device. Times are end to end
(model construction, worker start-up and the loop; `extract` also checks every image header and
writes its shards), the way a user waits for them. Writes results/benchmarks/features.csv with the
device's name. torchvision backbones use random weights (speed does not depend on the values);
EfficientNet-Lite0 its packaged weights. Nothing is asserted.

    .venv/bin/python benchmarks/features.py [--images 2048] [--small 64] [--device auto]
        [--backbones resnet50 ...]

Rows of other devices, and of backbones not named in --backbones, are kept from an existing CSV.
"""

from __future__ import annotations

import argparse
import platform
import shutil
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


def make_images(root: Path, count: int) -> list[str]:
    """JPEGs of Flickr30K's typical size (500 x 375), smooth with noise, so that decoding costs
    what it costs on photographs."""
    rng = np.random.default_rng(0)
    (root / "images").mkdir(parents=True)
    names = []
    for i in range(count):
        base = Image.fromarray(rng.integers(0, 256, (15, 20, 3), dtype=np.uint8)).resize((500, 375))
        noise = rng.integers(-20, 21, size=(375, 500, 3))
        pixels = np.clip(np.asarray(base, dtype=int) + noise, 0, 255).astype(np.uint8)
        names.append(f"{i:05d}.jpg")
        Image.fromarray(pixels).save(root / "images" / names[-1], quality=90)
    return names


def weights_for(backbone: str) -> str | None:
    return "DEFAULT" if BACKBONES[backbone].torchvision_arch is None else None


def synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize()


def plain_loop(backbone: str, paths: list[Path], device: torch.device, batch: int = 32) -> float:
    """Seconds of the plain loop: build the model, then PIL -> transform -> model, float32."""
    synchronize(device)
    start = time.perf_counter()
    spec = BACKBONES[backbone]
    model = FeatureNet(build_trunk(spec, weights_for(backbone))[0]).eval().to(device)
    transform = make_transform(spec)
    with torch.no_grad():
        for first in range(0, len(paths), batch):
            tensors = []
            for path in paths[first : first + batch]:
                with Image.open(path) as image:
                    tensors.append(transform(image.convert("RGB")))
            model(torch.stack(tensors).to(device)).cpu()
    synchronize(device)
    return time.perf_counter() - start


def ours(backbone: str, root: Path, count: int, device: str, **options) -> tuple[float, dict]:
    """Seconds of `extract` end to end, and its sidecar."""
    split = root / f"list{count}.txt"
    out = root / "out" / f"{backbone}-{count}.npy"
    shutil.rmtree(root / "out", ignore_errors=True)
    start = time.perf_counter()
    sidecar = extract(root / "images", split, out, backbone, weights=weights_for(backbone),
                      device=device, progress=False, **options)  # fmt: skip
    return time.perf_counter() - start, sidecar


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", type=int, default=2048, help="the large split")
    parser.add_argument("--small", type=int, default=64, help="the small split (start-up)")
    parser.add_argument("--device", default="auto", choices=("auto", "cpu", "cuda"))
    parser.add_argument("--backbones", nargs="+", default=list(BACKBONES), choices=list(BACKBONES))
    parser.add_argument("--workers", type=int, default=None, help="default: extract's")
    parser.add_argument("--out", type=Path, default=ROOT / "results/benchmarks/features.csv")
    args = parser.parse_args()
    device = resolve_device(args.device)
    device_name = (
        torch.cuda.get_device_name(device)
        if device.type == "cuda"
        else f"CPU {platform.processor() or platform.machine()}"
    )
    variants = [("float32", "pil")]
    if device.type == "cuda":
        variants += [("float16", "pil"), ("float32", "torchvision"), ("float16", "torchvision")]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        names = make_images(root, args.images)
        for count in (args.images, args.small):
            (root / f"list{count}.txt").write_text("\n".join(names[:count]) + "\n")
        for backbone in args.backbones:
            for count in (args.images, args.small):
                paths = [root / "images" / name for name in names[:count]]
                plain = count / plain_loop(backbone, paths, device)
                common = {"device": str(device), "device_name": device_name,
                          "cpus": torch.multiprocessing.cpu_count(),
                          "threads": torch.get_num_threads(), "backbone": backbone,
                          "images": count}  # fmt: skip
                rows.append({**common, "method": "plain loop (PIL, batch 32, 1 process)",
                             "precision": "float32", "decode": "pil", "batch_size": 32,
                             "workers": 0, "images_per_second": round(plain, 2),
                             "loop_images_per_second": None, "speedup_vs_plain": 1.0})  # fmt: skip
                for precision, decode in variants:
                    seconds, sidecar = ours(backbone, root, count, args.device, precision=precision,
                                            decode=decode, workers=args.workers)  # fmt: skip
                    config = sidecar["provenance"]["config"]
                    speed = count / seconds
                    rows.append({**common, "method": "mlmm.features.extract",
                                 "precision": precision, "decode": decode,
                                 "batch_size": config["batch_size"],
                                 "workers": config["workers_started"],
                                 "images_per_second": round(speed, 2),
                                 "loop_images_per_second": round(sidecar["images_per_second"], 2),
                                 "speedup_vs_plain": round(speed / plain, 3)})  # fmt: skip
                print(pd.DataFrame(rows[-1 - len(variants) :]).to_string(index=False), flush=True)
    table = pd.DataFrame(rows)
    if args.out.is_file():  # keep the rows of other devices and of backbones not measured now
        earlier = pd.read_csv(args.out)
        if set(table.columns) == set(earlier.columns):
            measured = earlier["backbone"].isin(args.backbones)
            same_device = earlier["device_name"] == device_name
            table = pd.concat([earlier[~(measured & same_device)], table])
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(args.out) as tmp_csv:
        table.to_csv(tmp_csv, index=False)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
