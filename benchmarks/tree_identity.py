"""The planning-time cost of an image directory's identity (mlmm.local_data.tree_identity) on a
Flickr30K-sized tree: 31,783 files by default, each --bytes long, written under a temporary
directory (on the disk of --dir) and then measured three ways:

- cold: no digest cache (the first plan, or the first after `cp -r`): every byte read once;
- warm: the cache holds every file's size and mtime (every later plan): one stat per file;
- copied: every mtime changed, as a copy that does not keep them (the plan after the copy):
  every byte read again, and the identity unchanged (no rerun).

Writes results/benchmarks/tree_identity.csv (one row a measurement, with the bytes per file and
the MB/s of the reads, from which the cold cost of the real 4.2 GB of Flickr30K images follows).
"""

from __future__ import annotations

import argparse
import csv
import os
import platform
import tempfile
import time
from pathlib import Path

from mlmm.local_data import tree_identity

FLICKR30K_IMAGES = 31_783
FLICKR30K_BYTES = 4.2e9  # the unpacked flickr30k-images directory, about


def measure(root: Path, cache: Path) -> tuple[str, float]:
    start = time.perf_counter()
    identity = tree_identity(root, cache)
    return identity, time.perf_counter() - start


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=FLICKR30K_IMAGES)
    parser.add_argument("--bytes", type=int, default=16_384, help="bytes per file")
    parser.add_argument("--dir", type=Path, default=None, help="where to write the tree")
    parser.add_argument("--out", type=Path, default=Path("results/benchmarks/tree_identity.csv"))
    args = parser.parse_args(argv)
    rows = []
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        root, cache = Path(tmp, "images"), Path(tmp, "digests.json")
        root.mkdir()
        for i in range(args.files):
            (root / f"{i:010d}.jpg").write_bytes(os.urandom(args.bytes))
        total = args.files * args.bytes
        cold, cold_s = measure(root, cache)
        warm, warm_s = measure(root, cache)
        for path in root.iterdir():
            os.utime(path, ns=(0, path.stat().st_mtime_ns + 10**9))
        copied, copied_s = measure(root, cache)
        assert cold == warm == copied, "the identity changed without a change of content"
        for case, seconds in (("cold", cold_s), ("warm", warm_s), ("copied", copied_s)):
            reads = case != "warm"
            rate = total / seconds / 1e6 if reads else None
            rows.append({
                "case": case, "files": args.files, "bytes_per_file": args.bytes,
                "seconds": round(seconds, 3),
                "read_mb_per_s": round(rate, 1) if rate else "",
                "flickr30k_seconds_estimate": round(
                    FLICKR30K_BYTES / (rate * 1e6) + seconds * FLICKR30K_IMAGES / args.files
                    - total / (rate * 1e6), 1
                ) if rate else round(seconds * FLICKR30K_IMAGES / args.files, 3),
                "machine": f"{platform.node()} {os.cpu_count()} cores",
            })  # fmt: skip
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with open(args.out, "w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    for row in rows:
        print(row)


if __name__ == "__main__":
    main()
