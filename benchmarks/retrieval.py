"""Training throughput of the retrieval trainer's step at the papers' sizes (caption-image pairs/s).

One step = image projection + packed GRU over a batch of captions + in-batch hinge loss +
backward + gradient clipping + Adam, as in ``mlmm.retrieval.train``. Synthetic inputs with
Multi30K-like caption lengths (8-20 tokens) and a 10,000-word vocabulary. ``--precision``
as the trainer's key: fp32 (TF32 matmuls on a GPU, the paper config) or bf16 autocast on a GPU.
Appends rows to results/benchmarks/retrieval.csv.

    python benchmarks/retrieval.py [--steps 10] [--threads 2] [--device auto] [--precision fp32]
"""

from __future__ import annotations

import argparse
import csv
import platform
import time
from pathlib import Path

import torch

from mlmm.retrieval.data import pad
from mlmm.retrieval.losses import ranking_loss, weighted_loss
from mlmm.retrieval.model import JointEmbedding

# name: (embed, hidden, joint, feature dim, encoders, similarity, loss, beta)
SETTINGS = {
    "kadar (300/1024, resnet50 2048, cosine, max)": (
        300,
        1024,
        1024,
        2048,
        1,
        "cosine",
        "max",
        1.0,
    ),
    "ame (300/1024, resnet152 2048, order, sum)": (300, 1024, 1024, 2048, 1, "order", "sum", 1.0),
    "calixto (620/1024->2048, vgg19 4096, 2 encoders, sum, beta .5)": (
        620,
        1024,
        2048,
        4096,
        2,
        "cosine",
        "sum",
        0.5,
    ),
}
VOCAB = 10_000


def run(name, setting, batch, steps, device, gen, precision) -> dict:
    embed, hidden, joint, feat_dim, encoders, similarity, loss_kind, beta = setting
    names = ["en", "de"][:encoders]
    model = JointEmbedding(
        feat_dim,
        {n: VOCAB for n in names},
        embed,
        hidden,
        joint,
        0.0,
        similarity,
        shared_projection=encoders > 1,  # Calixto's one ff_sentence_mm
    ).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=2e-4)
    use_amp = device.type == "cuda" and precision == "bf16"
    if device.type == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True

    def batch_inputs():
        feats = torch.randn(batch, feat_dim, generator=gen).to(device)
        texts = []
        for _ in names:
            lengths = torch.randint(8, 21, (batch,), generator=gen).tolist()
            ids, lens = pad(
                [torch.randint(2, VOCAB, (n,), generator=gen).tolist() for n in lengths]
            )
            texts.append((ids.to(device), lens))
        return feats, texts

    def step(feats, texts):
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=use_amp):
            images = model.embed_images(feats)
            caps = [
                model.embed_text(n, ids, lens) for n, (ids, lens) in zip(names, texts, strict=True)
            ]
            image_terms = [ranking_loss(model.scores(images, c), 0.2, loss_kind) for c in caps]
            sentence_terms = (
                [ranking_loss(model.scores(caps[0], caps[1]), 0.2, loss_kind)] if (beta < 1) else []
            )
            loss = weighted_loss(image_terms, sentence_terms, beta)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 2.0)
        optimizer.step()

    inputs = [batch_inputs() for _ in range(steps + 2)]
    for feats, texts in inputs[:2]:  # warm-up
        step(feats, texts)
    if device.type == "cuda":
        torch.cuda.synchronize()
    start = time.perf_counter()
    for feats, texts in inputs[2:]:
        step(feats, texts)
    if device.type == "cuda":
        torch.cuda.synchronize()
    seconds = time.perf_counter() - start
    pairs = steps * batch * len(names)
    return {
        "setting": name,
        "device": torch.cuda.get_device_name(device)
        if device.type == "cuda"
        else platform.processor() or "cpu",
        "threads": torch.get_num_threads(),
        "batch": batch,
        "steps": steps,
        "seconds": round(seconds, 3),
        "pairs_per_second": round(pairs / seconds, 1),
        "amp": "bf16" if use_amp else "fp32",
        "packed": True,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--batch", type=int, default=128)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--device", default="auto")
    parser.add_argument("--precision", choices=["fp32", "bf16"], default="fp32")
    parser.add_argument("--out", type=Path, default=Path("results/benchmarks/retrieval.csv"))
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    device = torch.device(
        ("cuda" if torch.cuda.is_available() else "cpu") if args.device == "auto" else args.device
    )
    gen = torch.Generator().manual_seed(0)
    rows = []
    for name, setting in SETTINGS.items():
        row = run(name, setting, args.batch, args.steps, device, gen, args.precision)
        print(row, flush=True)
        rows.append(row)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    new = not args.out.exists()
    with open(args.out, "a", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        if new:
            writer.writeheader()
        writer.writerows(rows)


if __name__ == "__main__":
    main()
