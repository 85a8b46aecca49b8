"""Two ways from image files to a model batch, both run by DataLoader workers where they can.

- ``pil`` (default, the numbers the plain loop gives): workers open, decode, resize, crop and
  normalise with PIL and torchvision transforms; the main process only moves batches.
- ``torchvision``: workers only read the file bytes (and decode on the CPU the few files that
  are not complete JPEGs); the main process decodes a whole batch of JPEGs at once with
  ``torchvision.io.decode_jpeg(device=...)`` (nvJPEG on a GPU) and resizes, crops and
  normalises on the device. Resampling is torch's antialiased interpolation, not PIL's, so
  features differ from the ``pil`` path by a little (tested on CPU); on an H100 it aims at
  3,000+ images/s where PIL on 16 processes gives ~1,600 (docs/gpu.md).
"""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import torch
from PIL import Image
from torch.utils.data import Dataset
from torchvision.io import ImageReadMode, decode_image, decode_jpeg
from torchvision.transforms.v2 import functional as F

from mlmm.features.backbones import Backbone
from mlmm.fingerprint import file_identity

DECODERS = ("pil", "torchvision")
JPEG_START, JPEG_END = b"\xff\xd8", b"\xff\xd9"
BAD_FILE_ERRORS = (OSError, ValueError, SyntaxError, RuntimeError)  # PIL and torchvision


def read_image_file(path: Path) -> tuple[bytes | None, str]:
    """A worker's one read of an image file: its bytes, and the size and sha256 of its
    ``file_identity`` as "SIZE SHA256" (the shards' resume fingerprint, computed where the
    bytes already are, in parallel, instead of a second read of every image in the main
    process; ``identity_of`` turns it back)."""
    try:
        data = path.read_bytes()
    except OSError:  # missing ("missing", as files_digest says), or unreadable
        return None, "-1 missing" if not path.is_file() else "-1 unreadable"
    _, size, digest = file_identity(path, data)
    return data, f"{size} {digest}"


def identity_of(path: Path, read: str) -> tuple[str, int, str]:
    """The ``file_identity`` of ``path`` from what ``read_image_file`` said of it."""
    size, digest = read.split(" ", 1)
    return path.name, int(size), digest


def _open(path: Path, data: bytes | None) -> Image.Image:
    """PIL's image of the bytes read from ``path``, its errors worded as for the path."""
    if data is None:
        path.read_bytes()  # raises the reason it cannot be read
    buffer = io.BytesIO(data)
    try:
        return Image.open(buffer)
    except (OSError, ValueError, SyntaxError) as exc:
        exc.args = tuple(str(a).replace(repr(buffer), repr(str(path))) for a in exc.args)
        raise


class ImageRows(Dataset):
    """Row -> (row, tensor, error, identity). An unreadable image gives a zero tensor and the
    reason, so one bad file does not kill the loader; the caller decides (error or NaN row)."""

    def __init__(self, paths: list[Path], rows: list[int], transform, shape: tuple[int, ...]):
        self.paths, self.rows, self.transform, self.shape = paths, rows, transform, shape

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, index: int):
        row = self.rows[index]
        data, identity = read_image_file(self.paths[row])
        try:
            with _open(self.paths[row], data) as image:
                tensor = self.transform(image.convert("RGB"))
            return row, tensor, "", identity
        except (OSError, ValueError, SyntaxError) as exc:  # PIL raises all three on bad files
            return row, torch.zeros(self.shape), f"{type(exc).__name__}: {exc}", identity


class FileBytes(Dataset):
    """Row -> (row, data, error, identity): data is the file's bytes (1-D uint8) for a complete
    JPEG, or
    the decoded RGB image (3-D uint8, CHW) for anything else PIL can read, so the device
    decoder only sees JPEGs and a truncated JPEG is caught as PIL catches it."""

    def __init__(self, paths: list[Path], rows: list[int]):
        self.paths, self.rows = paths, rows

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, index: int):
        row = self.rows[index]
        data, identity = read_image_file(self.paths[row])
        try:
            if data is None:
                self.paths[row].read_bytes()  # raises the reason it cannot be read
            if data.startswith(JPEG_START) and data.rstrip(b"\0\n\r ").endswith(JPEG_END):
                return row, torch.frombuffer(bytearray(data), dtype=torch.uint8), "", identity
            with _open(self.paths[row], data) as image:
                pixels = torch.from_numpy(np.array(image.convert("RGB")))
            return row, pixels.permute(2, 0, 1).contiguous(), "", identity
        except (OSError, ValueError, SyntaxError) as exc:
            return row, torch.zeros(0, dtype=torch.uint8), f"{type(exc).__name__}: {exc}", identity


def collate_lists(
    items: list[tuple],
) -> tuple[torch.Tensor, list[torch.Tensor], list[str], list[str]]:
    """Rows as a tensor, data, errors and identities as lists (images differ in size)."""
    rows, data, errors, identities = zip(*items, strict=True)
    return torch.tensor(rows), list(data), list(errors), list(identities)


def _decode_one(data: torch.Tensor, device: torch.device) -> torch.Tensor:
    if data.dim() == 3:  # decoded by the worker
        return data.to(device, non_blocking=True)
    try:
        return decode_jpeg(data, mode=ImageReadMode.RGB, device=device)
    except RuntimeError:  # e.g. a JPEG flavour nvJPEG does not take: decode on the CPU
        return decode_image(data, mode=ImageReadMode.RGB).to(device)


def decode_batch(
    data: list[torch.Tensor], errors: list[str], device: torch.device
) -> tuple[list[torch.Tensor | None], list[str]]:
    """Decode the JPEG byte tensors of a batch in one call on ``device``; on a failure, one by
    one so that only the bad file is marked. Returns (RGB uint8 CHW or None, errors)."""
    errors = list(errors)
    jpegs = [i for i, (d, e) in enumerate(zip(data, errors, strict=True)) if not e and d.dim() == 1]
    images: list[torch.Tensor | None] = [None] * len(data)
    images_of = {}
    if jpegs:
        try:
            decoded = decode_jpeg([data[i] for i in jpegs], mode=ImageReadMode.RGB, device=device)
            images_of = dict(zip(jpegs, decoded, strict=True))
        except RuntimeError:
            pass  # decoded one by one below, so that only the bad file is marked
    for i, (d, e) in enumerate(zip(data, errors, strict=True)):
        if e:
            continue
        if i in images_of:
            images[i] = images_of[i]
            continue
        try:
            images[i] = _decode_one(d, device)
        except BAD_FILE_ERRORS as exc:
            errors[i] = f"{type(exc).__name__}: {exc}"
    return images, errors


def resize_and_crop(image: torch.Tensor, backbone: Backbone) -> torch.Tensor:
    """RGB uint8 CHW on any device -> float in [0, 1], as ``make_transform`` before its
    Normalize: the shorter side resized (antialiased) and rounded to 8 bits as PIL's output is,
    then the centre crop, or the ten crops (3, crop, crop) / (10, 3, crop, crop)."""
    x = F.resize(
        image.float(),
        [backbone.resize],
        interpolation=F.InterpolationMode(backbone.interpolation),
        antialias=True,
    )
    x = x.round_().clamp_(0, 255).div_(255)
    if backbone.crops == 10:
        return torch.stack(F.ten_crop(x, [backbone.crop, backbone.crop]))
    return F.center_crop(x, [backbone.crop, backbone.crop])


def device_batch(
    data: list[torch.Tensor], errors: list[str], backbone: Backbone, device: torch.device
) -> tuple[torch.Tensor, list[str]]:
    """Decode and preprocess a batch on ``device``; bad images give zero inputs and a reason."""
    images, errors = decode_batch(data, errors, device)
    crop = (3, backbone.crop, backbone.crop)
    shape = (10, *crop) if backbone.crops == 10 else crop
    batch = torch.zeros((len(data), *shape), device=device)
    for i, image in enumerate(images):
        if image is not None:
            batch[i] = resize_and_crop(image, backbone)
    mean = torch.tensor(backbone.mean, device=device).view(3, 1, 1)
    std = torch.tensor(backbone.std, device=device).view(3, 1, 1)
    bad = torch.tensor([bool(e) for e in errors], device=device)
    batch = (batch - mean) / std  # normalising commutes with cropping
    return batch.masked_fill_(bad.view(-1, *[1] * len(shape)), 0.0), errors
