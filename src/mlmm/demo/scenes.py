"""Scenes of the demo world: what is in an image, and its rendering as real pixels.

A scene is a textured background ("place") with 2-6 solid shapes on a 3x3 grid, each with a
colour, a size and a cell. The shapes are large, saturated and shaded with a drop shadow so that
an ImageNet CNN sees them; texture, colour jitter, rotation and pixel noise keep the images from
being trivially identical.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from PIL import Image, ImageDraw, ImageFilter

SIZE = 256
_SUPER = 2  # shapes are drawn at twice the size and box-filtered down (antialiasing)

SHAPES = ("circle", "square", "triangle", "star", "heart", "cross", "diamond", "arrow", "cloud")
COLOURS = {
    "red": (215, 30, 35),
    "blue": (30, 70, 215),
    "green": (35, 165, 45),
    "yellow": (245, 215, 25),
    "black": (25, 25, 25),
    "white": (245, 245, 245),
    "orange": (250, 135, 20),
    "purple": (135, 40, 170),
}
SIZES = ("small", "big")
# place -> (base colour, colour an object may not have there because it would vanish)
PLACES = {
    "grass": ((75, 135, 55), "green"),
    "sand": ((214, 192, 142), "yellow"),
    "snow": ((232, 238, 246), "white"),
    "water": ((45, 95, 165), "blue"),
    "road": ((105, 105, 110), "black"),
}
ROWS = ("top", None, "bottom")  # grid row -> vertical position word (None: middle row)
COLS = ("left", None, "right")  # grid column -> horizontal position word (None: centre column)


@dataclass(frozen=True)
class Obj:
    shape: str
    colour: str
    size: str
    row: int
    col: int

    @property
    def position(self) -> str:
        """Full position: 'top left', 'top', 'left', 'centre', ..."""
        words = [w for w in (ROWS[self.row], COLS[self.col]) if w]
        return " ".join(words) or "centre"


@dataclass(frozen=True)
class Scene:
    place: str
    objects: tuple[Obj, ...]


def sample_scene(rng: np.random.Generator) -> Scene:
    """Draw a place and 2-6 objects in distinct grid cells."""
    place = str(rng.choice(list(PLACES)))
    colours = [c for c in COLOURS if c != PLACES[place][1]]
    n = int(rng.integers(2, 7))
    cells = rng.choice(9, size=n, replace=False)
    objects = tuple(
        Obj(
            shape=str(rng.choice(SHAPES)),
            colour=str(rng.choice(colours)),
            size=str(rng.choice(SIZES, p=(0.45, 0.55))),
            row=int(cell) // 3,
            col=int(cell) % 3,
        )
        for cell in cells
    )
    return Scene(place, objects)


def render(scene: Scene, rng: np.random.Generator) -> Image.Image:
    """Render a scene as a 256x256 RGB image."""
    image = _background(scene.place, rng)
    cell = SIZE / 3
    for obj in scene.objects:
        radius = cell * (rng.uniform(0.38, 0.47) if obj.size == "big" else rng.uniform(0.2, 0.26))
        slack = cell / 2 - radius
        cx = (obj.col + 0.5) * cell + rng.uniform(-slack, slack) * 0.8
        cy = (obj.row + 0.5) * cell + rng.uniform(-slack, slack) * 0.8
        # work in the object's bounding box (with room for the shadow), not the whole image
        margin = int(1.3 * radius) + 6
        x0, y0 = max(0, int(cx) - margin), max(0, int(cy) - margin)
        x1, y1 = min(SIZE, int(cx) + margin + 1), min(SIZE, int(cy) + margin + 1)
        alpha = _mask(obj.shape, cx - x0, cy - y0, radius, (x1 - x0, y1 - y0), rng)
        offset = -radius * 0.12  # light from the top left
        shadow = Image.fromarray((alpha * 255).astype(np.uint8)).transform(
            alpha.shape[::-1], Image.Transform.AFFINE, (1, 0, offset, 0, 1, offset)
        )
        shadow = shadow.filter(ImageFilter.GaussianBlur(radius * 0.08 + 1))
        shadow = np.asarray(shadow, np.float32)[..., None] / 255.0
        alpha = alpha[..., None]
        box = image[y0:y1, x0:x1] * (1.0 - 0.45 * shadow)
        paint = _paint(obj.colour, (x0, y0, x1, y1), rng)
        image[y0:y1, x0:x1] = box * (1.0 - alpha) + paint * alpha
    image += rng.normal(0.0, 5.0, image.shape).astype(np.float32)
    return Image.fromarray(np.clip(image, 0, 255).astype(np.uint8), "RGB")


def _noise(rng: np.random.Generator, grid: tuple[int, int], scale: float) -> np.ndarray:
    """Smooth noise: a coarse random grid resized bicubically to the image size."""
    coarse = rng.normal(0.0, 1.0, grid).astype(np.float32)
    return (
        np.asarray(Image.fromarray(coarse, "F").resize((SIZE, SIZE), Image.Resampling.BICUBIC))
        * scale
    )


def _background(place: str, rng: np.random.Generator) -> np.ndarray:
    base = np.array(PLACES[place][0], np.float32) + rng.normal(0.0, 6.0, 3).astype(np.float32)
    light = _noise(rng, (6, 6), 10.0)
    if place == "grass":  # vertical blades
        light += _noise(rng, (12, 96), 14.0) + rng.normal(0, 10, (SIZE, SIZE)).astype(np.float32)
    elif place == "water":  # horizontal waves
        y = np.arange(SIZE, dtype=np.float32)[:, None]
        light += 12.0 * np.sin(y / rng.uniform(3.0, 5.0) + _noise(rng, (8, 8), 2.0))
    elif place == "sand":  # speckles
        light += rng.normal(0, 9, (SIZE, SIZE)).astype(np.float32) + _noise(rng, (40, 40), 6.0)
    elif place == "road":  # fine grain and a lane marking
        light += rng.normal(0, 12, (SIZE, SIZE)).astype(np.float32)
        lane = int(rng.integers(20, SIZE - 20))
        for x0 in range(int(rng.integers(0, 32)), SIZE, 48):
            light[lane - 3 : lane + 3, x0 : x0 + 24] += 110.0
    else:  # snow: soft drifts
        light += _noise(rng, (16, 16), 6.0)
    return base[None, None, :] + light[..., None]


def _paint(colour: str, box: tuple[int, int, int, int], rng: np.random.Generator) -> np.ndarray:
    """A jittered solid colour with a soft light gradient (objects look lit, not flat)."""
    rgb = np.array(COLOURS[colour], np.float32) + rng.normal(0.0, 10.0, 3).astype(np.float32)
    angle = rng.uniform(0, 2 * math.pi)
    x0, y0, x1, y1 = box
    yy, xx = np.mgrid[y0:y1, x0:x1].astype(np.float32) / SIZE
    shade = 1.0 + 0.12 * ((xx - 0.5) * math.cos(angle) + (yy - 0.5) * math.sin(angle))
    return rgb[None, None, :] * shade[..., None]


def _mask(
    shape: str, cx: float, cy: float, r: float, size: tuple[int, int], rng: np.random.Generator
) -> np.ndarray:
    """Coverage in [0, 1] of one shape on a (width, height) canvas, drawn at twice the size."""
    s = _SUPER
    canvas = Image.new("L", (size[0] * s, size[1] * s), 0)
    draw = ImageDraw.Draw(canvas)
    cx, cy, r = cx * s, cy * s, r * s
    if shape == "circle":
        draw.ellipse((cx - r, cy - r, cx + r, cy + r), fill=255)
    elif shape == "cloud":
        for dx, dy, k in ((-0.5, 0.15, 0.5), (0.0, -0.2, 0.62), (0.5, 0.1, 0.5), (0.0, 0.25, 0.5)):
            x, y, rr = cx + dx * r, cy + dy * r, k * r
            draw.ellipse((x - rr, y - rr, x + rr, y + rr), fill=255)
    else:
        points = _outline(shape)
        turn = rng.uniform(-0.3, 0.3) if shape != "arrow" else rng.integers(0, 4) * math.pi / 2
        c, si = math.cos(turn), math.sin(turn)
        draw.polygon(
            [(cx + r * (x * c - y * si), cy + r * (x * si + y * c)) for x, y in points], 255
        )
    small = canvas.reduce(s)
    return np.asarray(small, np.float32) / 255.0


def _outline(shape: str) -> list[tuple[float, float]]:
    """Polygon of a shape in unit coordinates (radius about 1, y pointing down)."""
    if shape == "square":
        return [(-0.85, -0.85), (0.85, -0.85), (0.85, 0.85), (-0.85, 0.85)]
    if shape == "triangle":
        return [(math.cos(a), math.sin(a)) for a in (-math.pi / 2, math.pi / 6, 5 * math.pi / 6)]
    if shape == "diamond":
        return [(0.0, -1.0), (0.62, 0.0), (0.0, 1.0), (-0.62, 0.0)]
    if shape == "star":
        return [
            (k * math.cos(a), k * math.sin(a))
            for i in range(10)
            for a, k in [(-math.pi / 2 + i * math.pi / 5, 1.0 if i % 2 == 0 else 0.42)]
        ]
    if shape == "cross":
        w = 0.32
        return [
            (-w, -1), (w, -1), (w, -w), (1, -w), (1, w), (w, w),
            (w, 1), (-w, 1), (-w, w), (-1, w), (-1, -w), (-w, -w),
        ]  # fmt: skip
    if shape == "arrow":
        return [(-1, -0.25), (0.1, -0.25), (0.1, -0.7), (1, 0), (0.1, 0.7), (0.1, 0.25), (-1, 0.25)]
    if shape == "heart":
        ts = np.linspace(0, 2 * math.pi, 48, endpoint=False)
        x = 16 * np.sin(ts) ** 3
        y = -(13 * np.cos(ts) - 5 * np.cos(2 * ts) - 2 * np.cos(3 * ts) - np.cos(4 * ts))
        return [(float(a) / 17, float(b) / 17 + 0.1) for a, b in zip(x, y, strict=True)]
    raise ValueError(f"unknown shape {shape!r}")
