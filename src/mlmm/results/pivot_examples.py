"""Rajendran et al. 2016 Tables 6 and 7: nearest captions of images, nearest images of captions.

Section 6.1 shows, from the Bridge CorrNet common space and by Euclidean distance, four MIC
images with their top-5 German (two) and French (two) captions (Table 6), and two German and two
French MIC captions with their top-5 MIC images (Table 7). The paper does not say how its
queries were picked. We take each query the paper prints when it is found in the MIC copy (a
Table 7 caption, or a Table 6 image named by one of its own captions; `paper_queries`), and fill
the rest with a seeded draw over the MIC test set, so that the same seed gives the same queries.

The ranking comes from each Bridge CorrNet run's `test_ranking.npz` (mlmm.pivot.experiment):
the lambda of Table 5's row, chosen on validation data per direction
(mlmm.results.pivot_table.choose): image-to-caption for Table 6, caption-to-image for Table 7.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import numpy as np
import pandas as pd

from mlmm.data.coco import tokenise_mic
from mlmm.data.multi30k import image_list
from mlmm.errors import InputError
from mlmm.figures import figure_size, paper_style
from mlmm.fingerprint import check_directory
from mlmm.io import atomic_path, read_npz, save_figure
from mlmm.origin import Origin, stamp_figure
from mlmm.pivot.data import CAPTIONS_PER_IMAGE, TEST_SPLIT, read_captions
from mlmm.pivot.experiment import RANKING_FILE
from mlmm.pivot.models import distance_scores
from mlmm.results.pivot_table import PAPER, choose, read_runs

TOP = 5
TABLES = {6: "i2t", 7: "t2i"}  # the direction whose lambda each table uses
LANGUAGE_NAMES = {"de": "German", "fr": "French"}
COLUMNS = [
    "table",
    "language",
    "query_number",
    "query_choice",
    "query_image",
    "query_caption",
    "query_text",
    "lambda",
    "rank",
    "image",
    "caption",
    "text",
    "distance",
    "relevant",
]


def top_k(scores: np.ndarray, k: int = TOP) -> np.ndarray:
    """Indices of the k highest scores of a row, best first; ties go to the lower index."""
    return np.argsort(-np.asarray(scores), kind="stable")[:k]


def ranking_scores(path: str | Path) -> tuple[np.ndarray, np.ndarray]:
    """(i2t, t2i) score matrices (images x captions; higher is nearer) of a test_ranking.npz."""
    path = Path(path)
    if not path.is_file():
        raise InputError(path, f"the {RANKING_FILE} of mlmm pivot-train", "no such file")
    # the run's own ranking, not another's
    check_directory(path.parent, "metrics.json", "pivot-train or pivot-mt for this run")
    saved = read_npz(path, f"the {RANKING_FILE} of mlmm pivot-train")
    if "image_codes" in saved:
        scores = distance_scores(saved["image_codes"], saved["caption_codes"])
        return scores, scores
    if "i2t_scores" in saved:
        i2t = saved["i2t_scores"]
        return i2t, saved.get("t2i_scores", i2t)
    raise InputError(path, "image_codes/caption_codes or i2t_scores", "neither")


def find_caption(captions: list[list[str]], text: str, language: str) -> int | None:
    """First caption whose tokens equal those of `text` tokenised as the MIC captions are."""
    tokens = tokenise_mic(text, language)
    return next((c for c, caption in enumerate(captions) if caption == tokens), None)


def choose_queries(
    n_items: int, wanted: list[int | None], count: int, rng: np.random.Generator
) -> list[tuple[int, str]]:
    """`count` distinct items: the found paper queries first (in their order), then a seeded
    draw from the others. Returns [(item, "paper" | "seeded")]."""
    picked = [(item, "paper") for item in dict.fromkeys(w for w in wanted if w is not None)]
    picked = picked[:count]
    taken = {item for item, _ in picked}
    rest = [i for i in rng.permutation(n_items).tolist() if i not in taken]
    picked += [(item, "seeded") for item in rest[: count - len(picked)]]
    return picked


def rows_for(
    table: int,
    language: str,
    scores: np.ndarray,
    queries: list[tuple[int, str]],
    images: list[str],
    captions: list[list[str]],
    lam: float,
) -> list[dict]:
    """CSV rows of one table and language: each query with its top-5 (rank 1 = nearest)."""
    rows = []
    for number, (query, choice) in enumerate(queries, start=1):
        if table == 6:  # an image and its nearest captions
            row_scores = scores[query]
            query_image, query_caption, query_text = query, None, ""
        else:  # a caption and its nearest images
            row_scores = scores[:, query]
            query_image = query // CAPTIONS_PER_IMAGE
            query_caption, query_text = query, " ".join(captions[query])
        for rank, hit in enumerate(top_k(row_scores), start=1):
            image = int(hit) if table == 7 else int(hit) // CAPTIONS_PER_IMAGE
            rows.append(
                {
                    "table": table,
                    "language": language,
                    "query_number": number,
                    "query_choice": choice,
                    "query_image": images[query_image],
                    "query_caption": query_caption,
                    "query_text": query_text,
                    "lambda": lam,
                    "rank": rank,
                    "image": images[image],
                    "caption": int(hit) if table == 6 else None,
                    "text": " ".join(captions[hit]) if table == 6 else "",
                    "distance": float(-row_scores[hit]),
                    "relevant": image == query_image,
                }
            )
    return rows


def _thumbnail(ax, path: Path, size: int = 192) -> None:
    from PIL import Image

    with Image.open(path) as image:
        image = image.convert("RGB")
        image.thumbnail((size, size))
        ax.imshow(np.asarray(image))
    ax.set_xticks([])
    ax.set_yticks([])


def _wrap(text: str, width: int) -> str:
    return "\n".join(textwrap.wrap(text, width)) or "(empty caption)"


def plot(
    frame: pd.DataFrame, table: int, images_root: Path, stem: Path, origin: Origin | None = None
) -> list[Path]:
    """Table 6: one row per query image, its thumbnail and top-5 captions (* = one of its own);
    Table 7: one row per query caption and its top-5 image thumbnails (green frame = its image)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    with paper_style():
        queries = list(frame.groupby(["language", "query_number"], sort=False))
        if table == 6:
            fig, axes = plt.subplots(
                len(queries), 2, figsize=figure_size(2, 1.5 * len(queries)),
                width_ratios=[1, 3.4], squeeze=False, layout="constrained",
            )  # fmt: skip
            for (key, group), (left, right) in zip(queries, axes, strict=True):
                _thumbnail(left, images_root / group["query_image"].iloc[0])
                choice = group["query_choice"].iloc[0]
                left.set_title(f"{LANGUAGE_NAMES[key[0]]}, {choice}", fontsize=7)
                lines = [
                    f"{r.rank}. {'* ' if r.relevant else ''}{_wrap(r.text, 64)}"
                    for r in group.itertuples()
                ]
                right.text(0, 0.5, "\n".join(lines), va="center", ha="left", fontsize=7, wrap=True)
                right.axis("off")
            title = "Images and their top-5 nearest captions (* = one of the image's own captions)"
        else:
            fig, axes = plt.subplots(
                len(queries), TOP + 1, figsize=figure_size(2, 1.4 * len(queries)), squeeze=False,
                width_ratios=[1.3] + [1] * TOP, layout="constrained",
            )  # fmt: skip
            for (key, group), row in zip(queries, axes, strict=True):
                row[0].text(
                    0,
                    0.5,
                    f"{LANGUAGE_NAMES[key[0]]} ({group['query_choice'].iloc[0]}):\n"
                    + _wrap(group["query_text"].iloc[0], 18),
                    va="center",
                    ha="left",
                    fontsize=7,
                )
                row[0].axis("off")
                hits = list(group.itertuples())  # fewer than TOP when the test set is smaller
                for ax in row[1 + len(hits) :]:
                    ax.axis("off")
                for ax, r in zip(row[1:], hits, strict=False):
                    _thumbnail(ax, images_root / r.image)
                    ax.set_title(f"{r.rank}{' (its image)' if r.relevant else ''}", fontsize=7)
                    if r.relevant:
                        for spine in ax.spines.values():
                            spine.set_edgecolor("green")
                            spine.set_linewidth(3)
            title = (
                "Captions and their top-5 nearest images (green frame = the caption's own image)"
            )
        lam = ", ".join(
            f"{LANGUAGE_NAMES[lang]} lambda {value:g}"
            for lang, value in frame.groupby("language", sort=False)["lambda"].first().items()
        )
        fig.suptitle(f"Rajendran et al. 2016, Table {table}: Bridge CorrNet. {title}; {lam}")
    # demo world or real data, config, backbone: the runs' (not given: unrecorded)
    stamp_figure(fig, origin or Origin())
    paths = save_figure(fig, stem)
    plt.close(fig)
    return paths


def tables6_7(
    runs: list[str | Path],
    coco_root: str | Path,
    images_root: str | Path,
    per_language: int,
    seed: int,
    paper_queries: dict | None,
    figures_dir: str | Path,
    tables_dir: str | Path,
) -> dict[int, pd.DataFrame]:
    """Write `figures_dir`/rajendran2016_table{6,7}.png/.pdf and `tables_dir`/....csv.

    `runs`: Bridge CorrNet metrics.json files (every lambda of every language to show);
    `paper_queries`: {"table6": {lang: [caption of the image]}, "table7": {lang: [caption]}}.
    """
    records = [r for r in read_runs(runs) if r["model"] == "bridge"]
    if not records:
        raise InputError("--runs", "metrics.json of Bridge CorrNet runs (--model bridge)", "none")
    chosen = choose(records)
    images = image_list(coco_root, TEST_SPLIT)
    paper_queries = paper_queries or {}
    languages = sorted({r["language"] for r in records}, key=["de", "fr"].index)
    frames = {}
    for table, direction in TABLES.items():
        rows = []
        wanted = paper_queries.get(f"table{table}", {})
        for number, language in enumerate(languages):
            run = chosen["bridge", language, direction]
            i2t, t2i = ranking_scores(Path(run["path"]).parent / RANKING_FILE)
            scores = i2t if direction == "i2t" else t2i
            captions = read_captions(coco_root, TEST_SPLIT, language)
            if scores.shape != (len(images), len(captions)):
                raise InputError(
                    Path(run["path"]).parent / RANKING_FILE,
                    f"scores of {len(images)} MIC images x {len(captions)} captions",
                    f"shape {scores.shape}",
                )
            found = [find_caption(captions, text, language) for text in wanted.get(language, [])]
            if table == 6:
                found = [None if c is None else c // CAPTIONS_PER_IMAGE for c in found]
            rng = np.random.default_rng([seed, table, number])
            n_items = len(images) if table == 6 else len(captions)
            queries = choose_queries(n_items, found, per_language, rng)
            rows += rows_for(table, language, scores, queries, images, captions, run["lambda"])
        frames[table] = pd.DataFrame(rows, columns=COLUMNS)
    shown = pd.concat([f[["query_image", "image"]] for f in frames.values()]).to_numpy().ravel()
    for name in dict.fromkeys(shown):  # every thumbnail there before anything is written
        if not (Path(images_root) / name).is_file():
            raise InputError(Path(images_root) / name, "a MIC image (--images)", "no such file")
    origin = Origin.of_runs(records)
    for table, frame in frames.items():
        with atomic_path(Path(tables_dir) / f"{PAPER}_table{table}.csv") as tmp:
            frame.assign(**origin.columns()).to_csv(tmp, index=False)
        plot(frame, table, Path(images_root), Path(figures_dir) / f"{PAPER}_table{table}", origin)
    return frames
