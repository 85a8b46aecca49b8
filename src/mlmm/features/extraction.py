"""Images dir + split list -> one feature array whose row i is image i of the list.

Work is cut into shards of ``shard_size`` rows written to ``<out stem>.work/`` beside the
output as they finish, so a killed job resumes from its last finished shard; each is appended
to the final array as it is saved (both on a thread of their own, ``ShardWriter``: the model
never waits on a file or a digest), which is renamed into place at the end, then the work dir
is removed.
A work dir made for other settings (backbone, weights, dtype, precision, decoder, list, shard
size) is discarded.

Speed (docs/gpu.md): decoding runs in DataLoader worker processes (as many as there are batches,
up to ``workers``; none for a one-batch split, whose start-up would cost more than it saves);
with ``decode="torchvision"`` the workers only read bytes and a batch of JPEGs is decoded and
resized on the device. The model runs in float32 (TF32 matmuls and convolutions on a GPU) unless
``precision="float16"``; the next batch is launched before the last one's features are copied
back, so the GPU does not wait for the host.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from queue import Queue

import numpy as np
import torch
from PIL import Image
from torch.utils.data import DataLoader

from mlmm.degenerate import unique_ids
from mlmm.errors import InputError
from mlmm.features.backbones import FeatureNet, build_trunk, get_backbone, make_transform
from mlmm.features.decoding import (
    DECODERS,
    FileBytes,
    ImageRows,
    collate_lists,
    device_batch,
    identity_of,
)
from mlmm.fingerprint import (
    files_digest,
    identities_digest,
    made_from_record,
    stale,
    value_digest,
)
from mlmm.io import (
    discard,
    npy_rows,
    read_json,
    read_json_object,
    read_lines,
    read_npy,
    sha256_file,
    write_json,
    write_npy,
    write_text,
)
from mlmm.logs import progress as progress_bar
from mlmm.provenance import Timer, provenance
from mlmm.slurm import auto_device

DTYPES = ("float32", "float16")
PRECISIONS = ("float32", "float16")  # of the model's arithmetic; DTYPES: of the stored array
BAD_IMAGE_POLICIES = ("error", "skip")
SHOWN_BAD = 10
AUTOTUNE_BATCHES = 20  # cuDNN autotuning only for splits of at least this many batches


@dataclass
class Outputs:
    """The files written for one split: the array and, beside it, sidecar, list and report."""

    array: Path

    @property
    def sidecar(self) -> Path:
        return self.array.with_suffix(".json")

    @property
    def image_list(self) -> Path:
        return self.array.with_suffix(".txt")

    @property
    def skipped(self) -> Path:
        return self.array.with_name(self.array.stem + ".skipped.tsv")

    @property
    def work(self) -> Path:
        return self.array.with_name(self.array.stem + ".work")


def feature_inputs(names: list[str], split: str | Path) -> dict[str, str]:
    """What a feature array is made from, as its record names it (``check_made_from``): the
    image list in order, and the split's name (the list file's stem, ``val``)."""
    return {"image list": value_digest(list(names)), "split": value_digest(Path(split).stem)}


def write_beside(outputs: Outputs, names: list[str], split: str | Path, sidecar: dict) -> dict:
    """Finish a split's files once its array ``outputs.array`` is written: the list copy
    (.txt, ``names`` in order) and the sidecar (.json): ``sidecar``'s keys and the array's
    record (``mlmm.fingerprint.made_from_record`` of ``feature_inputs``), written last, which
    every reader requires (``mlmm.arrays.check_feature_record``). Returns the sidecar."""
    write_text(outputs.image_list, "".join(f"{name}\n" for name in names))
    sidecar = {
        **sidecar,
        "image_list_copy": outputs.image_list.name,
        **made_from_record(outputs.array, feature_inputs(names, split)),
    }
    write_json(outputs.sidecar, sidecar)
    return sidecar


def write_features(
    out: str | Path, array: np.ndarray, names: list[str], split: str | Path, sidecar: dict
) -> dict:
    """Write ``array`` as the feature array ``out`` (.npy, row i = image ``names[i]`` of the
    split list ``split``) with its list copy and its sidecar carrying ``sidecar``'s keys and
    the array's record, as ``mlmm features`` writes them (``write_beside``)."""
    outputs = Outputs(Path(out))
    write_npy(outputs.array, array)
    return write_beside(outputs, names, split, sidecar)


def resolve_device(device: str) -> torch.device:
    if device == "auto":  # a GPU rule's job stops here without a GPU (mlmm.slurm)
        return torch.device(auto_device(torch.cuda.is_available()))
    if device == "cuda" and not torch.cuda.is_available():
        raise InputError("device", "a visible CUDA GPU for device 'cuda'", "none (use auto or cpu)")
    if device not in ("cpu", "cuda"):
        raise InputError("device", "auto, cpu or cuda", repr(device))
    return torch.device(device)


def default_batch_size(device: torch.device, crops: int) -> int:
    """Images per batch: large on a GPU to keep it busy, divided by the crops per image."""
    return max(1, (256 if device.type == "cuda" else 32) // crops)


def default_workers(device: torch.device, decode: str = "pil") -> int:
    """Decoding processes. On a GPU PIL decoding is the bottleneck (ResNet-50 in TF32 takes
    ~7,500 images/s on an H100, PIL ~100 per core), so every core but the main process's;
    reading bytes for the device decoder needs few. On CPU they compete with the model."""
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    spare = max(1, (cpus or 1) - 1)
    if device.type == "cuda":
        return min(4, spare) if decode == "torchvision" else spare
    return min(2, max(0, (cpus or 1) - 1))


def pool_size(workers: int, images: int, batch_size: int) -> int:
    """Worker processes worth starting: no more than there are batches, and none for a split of
    one batch (starting a pool costs more than decoding it in the main process)."""
    batches = -(-images // batch_size)
    return 0 if batches <= 1 else min(workers, batches)


def _header_problem(path: Path) -> str:
    """Why PIL cannot read the image's header, or "" when it can."""
    try:
        with Image.open(path):
            return ""
    except FileNotFoundError:
        return "no such file"
    except (OSError, ValueError, SyntaxError) as exc:
        return f"{type(exc).__name__}: {exc}"


def check_images(
    paths: list[Path], names: list[str], threads: int = 1
) -> list[tuple[int, str, str]]:
    """(row, name, reason) of every image that is missing or whose header PIL cannot read.

    Cheap (headers only; file opening in ``threads`` threads, as it waits on the disk); data
    truncated further in is found when the image is decoded.
    """
    with ThreadPoolExecutor(max(1, threads)) as pool:
        problems = pool.map(_header_problem, paths, chunksize=256)
        return [(row, names[row], p) for row, p in enumerate(problems) if p]


def bad_image_error(images_dir: Path, split: Path, bad: list[tuple[int, str, str]]) -> InputError:
    shown = "; ".join(f"{name} ({reason})" for _, name, reason in bad[:SHOWN_BAD])
    more = f"; ... and {len(bad) - SHOWN_BAD} more" if len(bad) > SHOWN_BAD else ""
    return InputError(
        images_dir,
        f"a readable image for every name in {split} (or on_bad_image: skip)",
        f"{len(bad)} missing or unreadable: {shown}{more}",
    )


def _load_shards(
    work: Path, settings: dict, shard_images: list[list[Path]], threads: int
) -> dict[int, list]:
    """Finished shards of an earlier run with the same settings and the same image bytes:
    {shard: bad rows}. Anything else (other settings, or an image of a finished shard replaced
    under the same name) discards the work directory, with one line saying why."""
    state = work / "state.json"
    if work.exists():
        recorded = read_json(state) if state.is_file() else None
        if stale(work, recorded, settings):
            discard(work)
    if not work.exists():
        work.mkdir(parents=True)
        write_json(state, settings)
    done, recorded, current = {}, {}, {}
    for k, paths in enumerate(shard_images):
        array, meta = work / f"shard-{k:05d}.npy", work / f"shard-{k:05d}.json"
        if array.is_file() and meta.is_file():
            shard = read_json_object(meta, ("bad",))
            done[k] = [tuple(b) for b in shard["bad"]]
            recorded[f"images of shard {k}"] = shard.get("images")
            current[f"images of shard {k}"] = files_digest(paths, threads)
    if stale(work, recorded, current):
        discard(work)
        work.mkdir(parents=True)
        write_json(state, settings)
        done = {}
    return done


def _save_shard(work: Path, k: int, features: np.ndarray, bad: list, images: str) -> None:
    """Bad-row list and the digest of the shard's image files (``identities_digest`` of what
    the loader workers read) first, array last: a shard counts as finished once its array
    exists."""
    write_json(work / f"shard-{k:05d}.json", {"bad": bad, "images": images})
    write_npy(work / f"shard-{k:05d}.npy", features)


class ShardWriter:
    """Saves the shards the loop hands over (``put``, in order) and writes the final array
    ``outputs.array`` of ``shape`` on a thread of its own, so that the loop feeding the model
    never waits on a file or a digest: each shard is saved (``_save_shard``) and appended to the
    array, a shard ``resumed`` from an earlier run read back in its place (``npy_rows``: the
    array's sha256 is taken as it is written). ``finish`` waits for the array and raises the
    thread's error; ``stop`` (on leaving its block with an error) saves what was handed over
    and writes no array."""

    def __init__(self, outputs: Outputs, shape: tuple[int, int], dtype: str, shard_size: int,
                 resumed: Iterable[int]) -> None:  # fmt: skip
        self.queue: Queue = Queue()
        self.thread = ThreadPoolExecutor(1, thread_name_prefix="shard-writer")
        self.done = self.thread.submit(self._write, outputs, shape, dtype, shard_size, set(resumed))

    def _write(self, outputs: Outputs, shape, dtype, shard_size: int, resumed: set) -> None:
        with npy_rows(outputs.array, shape, dtype) as append:
            for k in range(-(-shape[0] // shard_size)):
                if k in resumed:
                    append(read_npy(outputs.work / f"shard-{k:05d}.npy"))
                    continue
                item = self.queue.get()
                if item is None:
                    return  # stopped: npy_rows refuses the short array
                _save_shard(outputs.work, k, *item)
                append(item[0])

    def put(self, features: np.ndarray, bad: list, images: str) -> None:
        if self.done.done():
            self.done.result()  # the thread's error, at once
        self.queue.put((features, bad, images))

    def __enter__(self) -> ShardWriter:
        return self

    def __exit__(self, failed, *_) -> None:
        if failed is not None:
            self.stop()

    def finish(self) -> None:
        try:
            self.done.result()
        finally:
            self.thread.shutdown()

    def stop(self) -> None:
        self.queue.put(None)
        self.done.exception()  # wait; the loop's error is the one raised
        self.thread.shutdown()


def extract(
    images: str | Path,
    split: str | Path,
    out: str | Path,
    backbone: str,
    *,
    weights: str | None = "DEFAULT",
    device: str = "auto",
    batch_size: int | None = None,
    dtype: str = "float32",
    precision: str = "float32",
    decode: str = "pil",
    workers: int | None = None,
    threads: int | None = None,
    shard_size: int = 1024,
    on_bad_image: str = "error",
    progress: bool = True,
    data_sets: Iterable[str] = (),
) -> dict:
    """Extract features of every image named in ``split`` (one file name per line, looked up
    in ``images``) and write ``out`` (.npy) with its sidecar .json and list copy .txt.
    ``data_sets``: the data sets the images belong to (their sources go into the provenance;
    none: origin unrecorded).

    ``dtype`` is the stored array's type; ``precision`` the model's arithmetic (float32, with
    TF32 on a GPU, as the papers' features were computed; float16: autocast); ``decode``: pil
    or torchvision (batched JPEG decoding and resizing on the device). Returns the sidecar.
    """
    images, split, outputs = Path(images), Path(split), Outputs(Path(out))
    spec = get_backbone(backbone)
    if dtype not in DTYPES:
        raise InputError("dtype", " or ".join(DTYPES), repr(dtype))
    if precision not in PRECISIONS:
        raise InputError("precision", " or ".join(PRECISIONS), repr(precision))
    if decode not in DECODERS:
        raise InputError("decode", " or ".join(DECODERS), repr(decode))
    if on_bad_image not in BAD_IMAGE_POLICIES:
        raise InputError("on_bad_image", " or ".join(BAD_IMAGE_POLICIES), repr(on_bad_image))
    if shard_size < 1:
        raise InputError("shard_size", "a positive number of rows", str(shard_size))
    if not images.is_dir():
        raise InputError(images, "a directory of images", "no such directory")
    timer = Timer()
    names = read_lines(split)
    unique_ids(names, split, "image name")  # a repeated image would be two rows, scored twice
    paths = [images / name for name in names]
    dev = resolve_device(device)
    batch_size = batch_size or default_batch_size(dev, spec.crops)
    workers = default_workers(dev, decode) if workers is None else workers
    if threads:
        torch.set_num_threads(threads)

    with timer("check_images"):
        precheck = check_images(paths, names, threads=max(workers, 1))
    if precheck and on_bad_image == "error":
        raise bad_image_error(images, split, precheck)

    n, n_shards = len(names), -(-len(names) // shard_size)
    work_settings = {  # of the shards in OUT.work; the images' bytes are recorded shard by shard
        "backbone": backbone,
        "weights": weights,
        "dtype": dtype,
        "precision": precision,
        "decode": decode,
        "shard_size": shard_size,
        "images": str(images.resolve()),
        "split_sha256": sha256_file(split),
    }
    shard_images = [paths[k * shard_size : (k + 1) * shard_size] for k in range(n_shards)]
    done = _load_shards(outputs.work, work_settings, shard_images, threads=max(workers, 1))
    todo = [k for k in range(n_shards) if k not in done]
    rows = [r for k in todo for r in range(k * shard_size, min(n, (k + 1) * shard_size))]

    with timer("load_model"):
        trunk, weights_label = build_trunk(spec, weights)
        # channels_last: faster convolutions on GPUs and with oneDNN on CPUs (~1.3x measured)
        model = (
            FeatureNet(trunk, channels_last=True).eval().to(dev, memory_format=torch.channels_last)
        )
        if dev.type == "cuda":
            # Autotuning costs seconds per batch shape (the last, shorter batch is another one):
            # worth it over a long split, not for a few batches.
            torch.backends.cudnn.benchmark = len(rows) >= AUTOTUNE_BATCHES * batch_size
            torch.backends.cuda.matmul.allow_tf32 = True  # float32 storage, TF32 arithmetic
            torch.backends.cudnn.allow_tf32 = True
    if decode == "pil":
        crop = (3, spec.crop, spec.crop)
        shape = crop if spec.crops == 1 else (spec.crops, *crop)
        dataset, collate = ImageRows(paths, rows, make_transform(spec), shape), None
    else:
        dataset, collate = FileBytes(paths, rows), collate_lists
    pool = pool_size(workers, len(rows), batch_size)
    loader = DataLoader(
        dataset,
        batch_size=batch_size,
        shuffle=False,
        num_workers=pool,
        collate_fn=collate,
        pin_memory=dev.type == "cuda",
        prefetch_factor=4 if pool else None,
    )
    autocast = torch.autocast(dev.type, dtype=torch.float16, enabled=precision == "float16")
    # shard -> (features, {row: what read_image_file said of its image}, bad rows)
    buffers: dict[int, tuple[np.ndarray, dict, list]] = {}
    bar = progress_bar(total=n, initial=n - len(rows), unit="img",
                       desc=f"{backbone} {split.stem}", disable=not progress)  # fmt: skip

    def store(batch_rows: list[int], features: torch.Tensor, errors: list[str],
              identities: list[str], copied) -> None:  # fmt: skip
        """Put a batch's rows into their shards; save each shard once it is full."""
        if copied is not None:
            copied.synchronize()  # the non-blocking copy to the host has landed
        features = features.float().numpy()
        for row, vector, error, identity in zip(batch_rows, features, errors, identities,
                                                strict=True):  # fmt: skip
            k = row // shard_size
            if k not in buffers:
                size = min(n, (k + 1) * shard_size) - k * shard_size
                buffers[k] = (np.empty((size, spec.dim), dtype=np.float32), {}, [])
            array, filled, bad = buffers[k]
            array[row - k * shard_size] = np.nan if error else vector
            filled[row] = identity
            if error:
                bad.append((row, names[row], error))
            if len(filled) == len(array):
                images_read = identities_digest(
                    identity_of(paths[r], filled[r]) for r in sorted(filled)
                )
                writer.put(array.astype(dtype), bad, images_read)
                done[k] = bad
                del buffers[k]
        bar.update(len(batch_rows))

    start = time.perf_counter()
    # the previous batch: (rows, features on the host, errors, image identities, copy event)
    pending = None
    batches = iter(loader)  # its worker processes forked before the writer's thread starts
    # the shards handed over are saved even if the loop fails: a rerun resumes from them
    with (
        ShardWriter(outputs, (n, spec.dim), dtype, shard_size, done) as writer,
        timer("extract"),
        torch.inference_mode(),
    ):
        for batch_rows, batch, errors, identities in batches:
            if decode == "pil":
                batch = batch.to(dev, non_blocking=True)
            else:
                batch, errors = device_batch(batch, errors, spec, dev)
            failed = [
                (int(r), names[int(r)], e) for r, e in zip(batch_rows, errors, strict=True) if e
            ]
            if failed and on_bad_image == "error":
                raise bad_image_error(images, split, failed)
            with autocast:
                features = model(batch)
            if pending is not None:
                store(*pending)
            # non_blocking: the copy overlaps the next batch's work; store() waits for its event
            host = features.to("cpu", non_blocking=True)
            copied = torch.cuda.Event() if dev.type == "cuda" else None
            if copied is not None:
                copied.record()
            pending = (batch_rows.tolist(), host, errors, identities, copied)
        if pending is not None:
            store(*pending)
    bar.close()
    seconds = time.perf_counter() - start

    with timer("write"):
        writer.finish()
        skipped = sorted(b for k in range(n_shards) for b in done[k])
        if on_bad_image == "skip":
            write_text(
                outputs.skipped,
                "row\tname\treason\n"
                + "".join(f"{r}\t{m}\t{' '.join(e.split())}\n" for r, m, e in skipped),
            )
    settings = {
        "backbone": backbone,
        "weights": weights,
        "images": str(images),
        "split": str(split),
        "device": str(dev),
        "batch_size": batch_size,
        "workers": workers,
        "threads": torch.get_num_threads(),
        "dtype": dtype,
        "precision": precision,
        "decode": decode,
        "workers_started": pool,
        "shard_size": shard_size,
        "on_bad_image": on_bad_image,
    }
    sidecar = {
        "backbone": backbone,
        "dim": spec.dim,
        "dtype": dtype,
        "precision": precision,
        "decode": decode,
        "n": n,
        "layer": spec.layer,
        "weights": weights_label,
        "preprocessing": spec.preprocessing(),
        "images_dir": str(images),
        "image_list": str(split),
        "skipped": [{"row": r, "name": m, "reason": e} for r, m, e in skipped],
        "skipped_marked_as": "NaN rows" if skipped else None,
        "resumed_rows": n - len(rows),
        "extracted_rows": len(rows),
        "images_per_second": len(rows) / seconds if rows and seconds > 0 else None,
        "provenance": provenance(settings, data=data_sets),
        "timings": timer.seconds,
    }
    sidecar = write_beside(outputs, names, split, sidecar)
    discard(outputs.work)
    return sidecar
