"""Every table and figure the catalogue lists, built by the workflow's own builders from small
generated inputs, as a paper would print it: LaTeX headers without Python tuples,
every LaTeX special escaped, the origin (data, configuration, backbone) in the caption, one
number format per column, '–' in blank cells; figures whose texts neither overlap nor leave
the canvas."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import matplotlib
import numpy as np
import pandas as pd
import pytest
import yaml

matplotlib.use("Agg")

from matplotlib.backends.backend_agg import FigureCanvasAgg  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.legend import Legend  # noqa: E402
from matplotlib.text import Text  # noqa: E402

import mlmm.results.claims  # noqa: E402
import mlmm.results.pivot_examples  # noqa: E402
import mlmm.results.ted_tables  # noqa: E402
from mlmm import catalogue  # noqa: E402
from mlmm.cells import KEYS, ROW_HEADERS, decimals  # noqa: E402
from mlmm.results import retrieval_tables as report  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
PAPER_TABLES = REPO / "resources" / "paper_tables"
ORIGIN = {"data": {"multi30k": "demo", "coco": "demo", "ted": "demo"}, "configs": ["config.yaml"]}
TED_LANGUAGES = ["de", "fr", "ar"]


def _provenance(**config) -> dict:
    return {"origin": ORIGIN, "config": config}


# ----------------------------------------------------------------------------------------
# small inputs for every builder


def _recalls(rng, medr: float) -> dict:
    r1 = float(rng.uniform(5, 60))
    return {"R@1": r1, "R@5": min(r1 + 20, 100.0), "R@10": 100.0 if r1 > 55 else r1 + 30,
            "medr": medr, "meanr": medr * 3.3}  # fmt: skip


def retrieval_outputs(root: Path, tables: Path, figures: Path) -> None:
    """A run (two seeds for every other variant) of every variant of config.yaml's retrieval
    section, with the cells, histories and provenance a real run records."""
    section = report.read_section([REPO / "config.yaml"])
    rng = np.random.default_rng(0)
    for n, variant in enumerate(section["variants"]):
        for seed in (1, 2) if n % 2 else (1,):
            languages = ("en", "de", "fr", "cs", "ja")
            metrics = {
                "variant": variant,
                "seed": seed,
                "provenance": _provenance(retrieval={"backbone": "efficientnet_lite0"}),
                # medians that are whole for one seed and halves for others (mean 4.5)
                "test": {
                    la: {"i2t": _recalls(rng, 4.0 + seed % 2), "t2i": _recalls(rng, 6.0)}
                    for la in languages
                },  # fmt: skip
                "c2c": {"en-de": _recalls(rng, 2.0), "de-en": _recalls(rng, 3.0)},
                "sts": {"2014": 0.7 + seed / 100, "2015": 1.0},
                "alignment": {"en-de": 73.1, "en-ja": 5.0},
                "history": [
                    {"step": step, "R@1_i2t": 10.0 + step, "alignment": 70.0 - step}
                    for step in (100, 200, 300)
                ],
            }
            path = root / variant / f"seed{seed}" / "metrics.json"
            path.parent.mkdir(parents=True)
            path.write_text(json.dumps(metrics))
    runs = report.load_runs([root], section)
    report.build_tables(runs, PAPER_TABLES, tables)
    report.build_figures(runs, figures)
    for paper in catalogue.CLAIM_PAPERS:  # each paper's claims table, through the same writer
        registry = REPO / "resources" / "claims" / f"{paper}.yaml"
        mlmm.results.claims.write_claims(runs, registry, PAPER_TABLES, tables, figures)


def kadar_table1(root: Path, tables: Path, figures: Path) -> None:
    from helpers.multi30k import write_tree

    from mlmm.results.corpus_table import write_kadar_table1

    write_kadar_table1(write_tree(root / "m30k"), 2, PAPER_TABLES, tables / "kadar2018_table1",
                       demo=True)  # fmt: skip


def calixto_table3(root: Path, tables: Path, figures: Path) -> None:
    """mt-score JSONs of every system of config.yaml's nmt section (the control row's label
    has a '|'), and the retrieval runs whose models gave the reranking features."""
    from mlmm.results.nmt_table import table3

    systems = yaml.safe_load((REPO / "config.yaml").read_text())["nmt"]["systems"]
    metrics = []
    for n, (name, record) in enumerate(systems.items()):
        path = root / f"{name}.json"
        scores = {"BLEU": 30.0 + n, "METEOR": 50.25, "TER": 49.0 + n / 3, "chrF": 60.0}
        path.write_text(json.dumps({
            "provenance": _provenance(system=name), "system": record["system"],
            "variant_note": record["variant_note"], "scores": scores, "meteor": "",
        }))  # fmt: skip
        metrics.append(path)
    run = root / "retrieval_metrics.json"
    run.write_text(json.dumps({"provenance": _provenance(retrieval={"backbone": "resnet50"})}))
    table3(metrics, PAPER_TABLES, tables / "calixto2017_table3", feature_runs=[run])


def ted_outputs(root: Path, tables: Path, figures: Path) -> None:
    """Rajendran Tables 1, 3 and 4 and the heatmap: classifier results of four languages
    (an F1 of exactly 1 among them), and a tiny corpus with an untrained model for Table 4."""
    from mlmm.cli import main
    from mlmm.results.ted_tables import heatmap, neighbours, table1, table3
    from mlmm.ted import PIVOT, corrnet
    from mlmm.ted.bow import Bow

    languages = ["en", *TED_LANGUAGES]
    rng = np.random.default_rng(1)
    cldc = []
    for source in languages:
        f1 = {target: float(rng.uniform(0.3, 0.9)) for target in languages}
        f1[source] = 1.0
        path = root / f"cldc_{source}.json"
        path.write_text(json.dumps({"source": source, "f1": f1, "topics": ["art", "music"],
                                    "provenance": _provenance(ted={"hidden": 8})}))  # fmt: skip
        cldc.append(path)
    nb = root / "nb.json"
    nb.write_text(json.dumps({"f1": {la: 0.5 for la in languages}, "provenance": _provenance()}))
    table1(cldc, PAPER_TABLES, tables)
    table3(cldc, nb, PAPER_TABLES, tables)
    heatmap(tables / "rajendran2016_table1.csv", figures / "rajendran2016_table1_heatmap")

    common = ["--languages", *TED_LANGUAGES]
    corpus, bow_dir = root / "corpus", root / "bow"
    fetch = ["--source", "demo", "--out-dir", corpus, "--train-docs", 10, "--test-docs", 5]
    assert main(["ted-fetch", *map(str, fetch), *common]) == 0
    from mlmm.records import write_record

    record = write_record(root / "bow.json", {"languages": TED_LANGUAGES})
    assert main(["ted-bow", "--index", str(corpus / "index.json"), "--out-dir", str(bow_dir),
                 "--config", str(record)]) == 0  # fmt: skip
    bow = Bow.load(bow_dir)
    dims = {la: len(bow.words(la)) for la in [PIVOT, *bow.languages]}
    corrnet.save(corrnet.BridgeCorrNet(dims, hidden=4), root / "model.pt")
    neighbours(root / "model.pt", bow_dir, ["market", bow.words(PIVOT)[0]], 4, tables,
               PAPER_TABLES, demo=True)  # fmt: skip


def pivot_outputs(root: Path, tables: Path, figures: Path) -> None:
    """Rajendran Table 5 from runs of every model (recalls of exactly 1 among them) and the
    pictures of Tables 6 and 7 from generated images, captions and scores."""
    from PIL import Image

    from mlmm.fingerprint import record_directory
    from mlmm.origin import Origin
    from mlmm.results.pivot_examples import COLUMNS, plot, rows_for
    from mlmm.results.pivot_table import SYSTEMS, table5

    runs = []
    for n, (model, language) in enumerate(
        [(m, la) for m in SYSTEMS if m not in ("direct", "random") for la in ("fr", "de")]
        + [("direct", None), ("random", None)]
    ):
        test = {d: {f"R@{k}": min(1.0, 0.087 * k ** 0.5 + n / 50) for k in (5, 10, 50)}
                for d in ("i2t", "t2i")}  # fmt: skip
        path = root / f"pivot{n}" / "metrics.json"
        path.parent.mkdir()
        path.write_text(json.dumps({
            "model": model, "language": language, "lambda": 1.0,
            "criteria": {"i2t": 0.5, "t2i": 0.5}, "test": test,
            "provenance": _provenance(backbone="alexnet_fc6"),
        }))  # fmt: skip
        record_directory(path.parent, "metrics.json")  # the run's record, as pivot-train's
        runs.append(path)
    table5(runs, PAPER_TABLES, tables / "rajendran2016_table5")

    rng = np.random.default_rng(2)
    images = [f"mic_{i}.jpg" for i in range(6)]
    for i, name in enumerate(images):
        colour = tuple(int(c) for c in rng.integers(0, 255, size=3))
        Image.new("RGB", (64 + 8 * i, 48), colour).save(root / name)
    words = "a man in a red shirt rides his bicycle down the long street near the old harbour"
    for table in (6, 7):
        rows = []
        for language in ("de", "fr"):
            captions = [rng.permutation(words.split()).tolist() for _ in range(5 * len(images))]
            scores = rng.normal(size=(len(images), len(captions)))
            n_items = len(images) if table == 6 else len(captions)
            queries = [(q, "seeded") for q in rng.choice(n_items, size=2, replace=False)]
            rows += rows_for(table, language, scores, queries, images, captions, 10.0)
        frame = pd.DataFrame(rows, columns=COLUMNS)
        origin = Origin(ORIGIN["data"], ORIGIN["configs"], ["alexnet_fc6"])
        plot(frame, table, root, figures / f"rajendran2016_table{table}", origin)


# Each builder (inputs directory, tables directory, figures directory) writes its tables and
# figures with the workflow's own functions; together they cover the catalogue (checked below).
BUILDERS = [retrieval_outputs, kadar_table1, calixto_table3, ted_outputs, pivot_outputs]
# the modules that save figures (mlmm.io.save_figure): each figure is kept to be checked
FIGURE_MODULES = [report, mlmm.results.ted_tables, mlmm.results.pivot_examples, mlmm.results.claims]
# the claims tables (mlmm.results.claims, written with mlmm.tables.write_table) and their figures
CLAIMS_TABLES = [f"{paper}_claims" for paper in catalogue.CLAIM_PAPERS]
LATEX_TABLES = catalogue.ALL_TABLES + CLAIMS_TABLES


# ----------------------------------------------------------------------------------------
# what each figure drew


def drawn_boxes(fig: Figure) -> list[tuple[str, object, object]]:
    """(text, artist, window extent) of every text the figure draws (titles, axis and tick
    labels, legends, annotations, footers) and of every legend's frame, after a draw."""
    drawn: list[Text] = []
    original = Text.draw

    def record(self, renderer):
        original(self, renderer)
        if self.get_visible() and self.get_text().strip():
            drawn.append(self)

    if not hasattr(fig.canvas, "get_renderer"):  # pyplot closed it: draw it as it was saved
        FigureCanvasAgg(fig)
    Text.draw = record
    try:
        fig.canvas.draw()
    finally:
        Text.draw = original
    renderer = fig.canvas.get_renderer()
    boxes = [(t.get_text(), t, t.get_window_extent(renderer)) for t in dict.fromkeys(drawn)]
    legends = list(fig.legends) + [ax.get_legend() for ax in fig.axes if ax.get_legend()]
    boxes += [("<legend>", legend, legend.get_window_extent(renderer)) for legend in legends]
    return boxes


def _inside(artist, legend) -> bool:
    return isinstance(legend, Legend) and artist in legend.texts + [legend.get_title()]


def text_problems(fig: Figure) -> list[str]:
    """Pairs of drawn texts whose boxes overlap, and texts that leave the canvas."""
    boxes = drawn_boxes(fig)
    canvas = fig.bbox
    problems = []
    for text, _, box in boxes:
        if (
            box.x0 < canvas.x0 - 1
            or box.y0 < canvas.y0 - 1
            or box.x1 > canvas.x1 + 1
            or (box.y1 > canvas.y1 + 1)
        ):
            problems.append(f"outside the canvas: {text[:60]!r} {box.bounds} of {canvas.bounds}")
    for i, (text_a, a, box_a) in enumerate(boxes):
        for text_b, b, box_b in boxes[i + 1 :]:
            if _inside(a, b) or _inside(b, a):
                continue
            width = min(box_a.x1, box_b.x1) - max(box_a.x0, box_b.x0)
            height = min(box_a.y1, box_b.y1) - max(box_a.y0, box_b.y0)
            if width > 1 and height > 1:
                problems.append(f"overlap: {text_a[:50]!r} and {text_b[:50]!r}")
    return problems


@pytest.fixture(scope="module")
def outputs(tmp_path_factory) -> tuple[Path, dict[str, Figure]]:
    """Every builder run once; the figures they saved, by file stem."""
    root = tmp_path_factory.mktemp("printable")
    tables, figures = root / "tables", root / "figures"
    tables.mkdir()
    figures.mkdir()
    saved: dict[str, Figure] = {}
    patch = pytest.MonkeyPatch()

    def save(fig, stem):  # kept to be checked, not written: PNG and PDF take seconds
        saved[Path(stem).name] = fig
        return []

    for module in FIGURE_MODULES:
        patch.setattr(module, "save_figure", save)
    # the origin the Snakefile exports to every job (tables of runs say their runs' instead)
    patch.setenv("MLMM_DATA", ",".join(f"{k}={v}" for k, v in ORIGIN["data"].items()))
    patch.setenv("MLMM_CONFIGS", ",".join(ORIGIN["configs"]))
    try:
        for n, build in enumerate(BUILDERS):
            work = root / f"inputs{n}"
            work.mkdir()
            build(work, tables, figures)
    finally:
        patch.undo()
    return tables, saved


# ----------------------------------------------------------------------------------------
# the checks


def test_every_catalogued_table_and_figure_is_built(outputs):
    tables, figures = outputs
    for stem in catalogue.ALL_TABLES:
        for suffix in (".csv", ".md", ".tex", ".html"):
            assert (tables / stem).with_suffix(suffix).is_file(), f"{stem}{suffix}"
    for stem in CLAIMS_TABLES:
        assert (tables / stem).with_suffix(".tex").is_file(), stem
    assert set(figures) == set(catalogue.ALL_FIGURES) | set(CLAIMS_TABLES)


@pytest.mark.parametrize("stem", catalogue.ALL_FIGURES)
def test_figure_texts_neither_overlap_nor_leave_the_canvas(outputs, stem):
    fig = outputs[1][stem]
    assert not text_problems(fig), "\n".join(text_problems(fig))


def figure_level_texts(fig: Figure) -> list[str]:
    """Texts drawn in the image outside the axes and legends: a title, a footer, a note (the
    axes' own texts, their titles as panel labels, ticks, labels and legends are allowed)."""
    drawn = drawn_boxes(fig)  # first: drawing makes the ticks that the axes show
    allowed = set()
    for ax in fig.axes:
        allowed |= {ax.title, ax._left_title, ax._right_title, ax.xaxis.label, ax.yaxis.label}
        allowed |= set(ax.texts)
        allowed |= {t for t in ax.get_xticklabels() + ax.get_yticklabels()}
        allowed |= {t for t in ax.xaxis.get_ticklabels(minor=True)}
        allowed |= {t for t in ax.yaxis.get_ticklabels(minor=True)}
        allowed.add(ax.xaxis.get_offset_text())
        allowed.add(ax.yaxis.get_offset_text())
    legends = list(fig.legends) + [ax.get_legend() for ax in fig.axes if ax.get_legend()]
    for legend in legends:
        allowed |= set(legend.texts) | {legend.get_title()}
    return [text for text, artist, _ in drawn
            if text != "<legend>" and artist not in allowed]  # fmt: skip


@pytest.mark.parametrize("stem", catalogue.ALL_FIGURES + CLAIMS_TABLES)
def test_figures_draw_no_title_or_provenance_in_the_image(outputs, stem):
    """Title and origin are kept for the file's metadata and caption, not drawn."""
    from mlmm.origin import figure_caption

    fig = outputs[1][stem]
    assert not figure_level_texts(fig), figure_level_texts(fig)
    caption = figure_caption(fig)
    assert caption.get("title") and "Produced from DEMO WORLD" in caption.get("origin", "")
    assert fig.get_figwidth() <= 6.3 + 1e-6, "wider than a two-column page"


def test_saved_figures_carry_their_caption_in_metadata_and_a_file(tmp_path):
    from PIL import Image

    from mlmm.figures import figure_size, paper_style
    from mlmm.io import save_figure
    from mlmm.origin import Origin, stamp_figure

    with paper_style():
        fig = Figure(figsize=figure_size(1, 2.0))
        ax = fig.subplots()
        ax.plot([0, 1], [1, 2])
        fig.suptitle("A figure")
    assert figure_level_texts(fig) == ["A figure"]  # what the check finds
    stamp_figure(fig, Origin({"multi30k": "demo"}, ["config.yaml"]), "Bars: sd over seeds.")
    png, pdf = save_figure(fig, tmp_path / "figure")
    info = Image.open(png).text
    assert info["Title"] == "A figure [demo world]" and "DEMO WORLD" in info["Description"]
    assert b"/Title (A figure [demo world])" in pdf.read_bytes()
    caption = (tmp_path / "figure.caption.txt").read_text(encoding="utf-8")
    assert caption.startswith("A figure [demo world]") and "Bars: sd over seeds." in caption
    assert not figure_level_texts(fig)


def _tabular(tex: str) -> tuple[list[list[str]], list[list[str]]]:
    """(header rows, body rows) of the first tabular of a .tex file, split into cells."""
    table = tex.split("\\toprule", 1)[1].split("\\bottomrule", 1)[0]
    rules = ("\\cline", "\\toprule", "\\bottomrule")

    def rows(text: str) -> list[list[str]]:
        return [
            [c.strip() for c in re.split(r"(?<!\\)&", line.rstrip().removesuffix("\\\\"))]
            for line in text.splitlines()
            if line.strip() and not line.strip().startswith(rules)
        ]

    header, body = table.split("\\midrule", 1)
    return rows(header), rows(body.replace("\\midrule", ""))


# A LaTeX special left as it is (outside the symbols latex_text writes: $\pm$, $-$, ...)
UNESCAPED = re.compile(r"(?<!\\)[%#_^~|<>$]|[±−→∩≥≤×Δλ…–]")
SYMBOLS = re.compile(r"\$\\[a-zA-Z]+\$|\$-\$")


def _comment_block(tex: str) -> str:
    return "\n".join(line for line in tex.splitlines() if line.startswith("%"))


@pytest.mark.parametrize("stem", LATEX_TABLES)
def test_latex_is_escaped_headed_and_captioned(outputs, stem):
    """The caption is the title; the origin (data, configuration, backbones) and the run
    notes are in the comment block on top and in the notes file, not in the typeset table."""
    from mlmm.origin import backbone_name

    tex = (outputs[0] / stem).with_suffix(".tex").read_text(encoding="utf-8")
    assert not re.search(r"\('[^']*',?\)", tex), "a Python tuple printed as a header"
    header, body = _tabular(tex)
    assert {len(row) for row in body} == {len(header[-1])}, "cells per row (an unescaped &?)"
    caption = re.search(r"\\caption\{(.*)\}\n", tex)
    assert caption and "Produced from" not in caption.group(1), "provenance in the caption"
    assert "demo world" in caption.group(1), "the demo marker left the caption"
    comments = _comment_block(tex)
    notes = (outputs[0] / stem).with_suffix(".notes.txt").read_text(encoding="utf-8")
    assert "Produced from DEMO WORLD" in comments and "Produced from DEMO WORLD" in notes
    tidy = pd.read_csv((outputs[0] / stem).with_suffix(".csv"), keep_default_na=False)
    for backbone in {b for b in tidy["backbone"] if b}:  # the backbones that ran, by name
        assert backbone_name(backbone) in comments, backbone
    for line in tex.splitlines():
        if not line.startswith(("%", "\\begin{tabular}", "\\label{")):
            assert not UNESCAPED.search(SYMBOLS.sub("", line)), f"unescaped: {line!r}"


@pytest.mark.parametrize("stem", catalogue.ALL_TABLES)
def test_latex_cells_are_compact(outputs, stem):
    """A cell of the LaTeX table holds one number (ours ± sd, or the paper's), never the
    paper's number, the difference and the interval together; no row label is a sentence."""
    tex = (outputs[0] / stem).with_suffix(".tex").read_text(encoding="utf-8")
    header, body = _tabular(tex)
    for row in body:
        for cell in row:
            assert not re.search(r"\(\s*(\$-\$)?\d", cell), f"{stem}: {cell!r}"
            assert "$\\approx$" not in cell and "$\\neq$" not in cell, f"{stem}: {cell!r}"
            assert len(cell) <= 40, f"{stem}: a long cell {cell!r}"


def latex_name(text: str) -> str:
    from mlmm.cells import latex_text

    return latex_text(text)


def _markdown_table(path: Path) -> pd.DataFrame:
    lines = [line for line in path.read_text(encoding="utf-8").splitlines() if line.startswith("|")]
    split = [[c.strip() for c in re.split(r"(?<!\\)\|", line)[1:-1]] for line in lines]
    return pd.DataFrame(split[2:], columns=split[0])


ROW_KEYS = {*KEYS, *ROW_HEADERS.values(), "dataset"}
NUMBER = re.compile(r"^[−+-]?\d+(?:\.(\d+))?")


@pytest.mark.parametrize("stem", catalogue.ALL_TABLES)
def test_one_number_format_per_column_and_dashes_in_blanks(outputs, stem):
    """Every number of a column (ours, the paper's, the difference) with the column's decimals
    (the metric's, mlmm.cells.decimals), and '–' where a cell has no number."""
    table = _markdown_table((outputs[0] / stem).with_suffix(".md"))
    tidy = pd.read_csv((outputs[0] / stem).with_suffix(".csv"), keep_default_na=False)
    metrics = set(tidy["metric"]) if "metric" in tidy else set()
    for column in table.columns:
        cells = table[column]
        if column in ROW_KEYS and metrics:
            continue  # a row's label (no variant note is an empty label), not a cell
        assert (cells != "").all(), f"{column}: a blank cell without '–'"
        numbers = [c for c in cells if NUMBER.match(c)]
        if not numbers or not metrics:
            places = {len(NUMBER.match(c).group(1) or "") for c in numbers}
            assert len(places) <= 1, f"{column}: {sorted(set(numbers))[:6]}"
            continue
        metric = next((m for m in metrics if column.endswith(m)), None)
        if metric is None:
            metric = next(iter(metrics)) if len(metrics) == 1 else None
        if metric is None:
            continue  # a row-key column (languages, labels)
        want = decimals(metric, stem)
        for cell in numbers:
            values = re.findall(r"(?<![\w@])[−+-]?\d+(?:\.\d+)?", cell.split("±")[0])
            values += re.findall(r"\(([^,)]*)", cell) + re.findall(r", ([−+][^)]*)\)", cell)
            for value in values:
                found = len(value.split(".")[1]) if "." in value else 0
                assert found == want, f"{stem} {column}: {cell!r} ({metric}: {want} decimals)"


def test_every_table_metric_has_its_format(outputs):
    """A metric without an entry in the format map would fall back to a default: name it."""
    from mlmm.cells import DECIMALS

    for stem in catalogue.ALL_TABLES:
        tidy = pd.read_csv((outputs[0] / stem).with_suffix(".csv"), keep_default_na=False)
        if "metric" in tidy:
            assert set(tidy["metric"]) - {""} <= set(DECIMALS), stem


OVERFULL = re.compile(r"Overfull \\hbox \(([\d.]+)pt too wide\)")


def compile_problems(tex: Path, work: Path, engine: str = "pdflatex") -> list[str]:
    """What is wrong with ``tex`` \\input in the documented preamble (mlmm.latex) on an ACL
    page (16 cm text width, 0.6 cm between the columns): errors, overfull boxes over 1 pt,
    missing glyphs, a float taller than the page."""
    from mlmm.latex import LUALATEX_PREAMBLE, PREAMBLE

    preamble = PREAMBLE if engine == "pdflatex" else LUALATEX_PREAMBLE
    name = tex.name.replace(".", "_")
    (work / f"{name}.tex").write_text(
        f"{preamble}\n\\setlength{{\\textwidth}}{{16cm}}\\setlength{{\\columnsep}}{{0.6cm}}"
        "\\setlength{\\textheight}{24.7cm}\\setlength{\\topmargin}{-1.5cm}\n"
        f"\\tracinglostchars=3\n\\begin{{document}}\n\\input{{{tex}}}\n\\end{{document}}\n",
        encoding="utf-8",
    )
    run = subprocess.run(
        [engine, "-interaction=nonstopmode", "-halt-on-error", f"{name}.tex"],
        cwd=work, capture_output=True, encoding="utf-8", errors="replace", timeout=300,
    )  # fmt: skip
    log = (work / f"{name}.log").read_text(encoding="utf-8", errors="replace")
    problems = [f"{tex.name}: {line}" for line in re.findall(r"^! .*", log, re.M)]
    problems += [f"{tex.name}: {m}" for m in re.findall(r"Missing character.*", log)]
    problems += [f"{tex.name}: {m}" for m in re.findall(r"Float too large for page.*", log)]
    problems += [
        f"{tex.name}: overfull by {width} pt" for width in OVERFULL.findall(log)
        if float(width) > 1.0
    ]  # fmt: skip
    if run.returncode and not problems:
        problems.append(f"{tex.name}: {engine} exit {run.returncode}: {run.stdout[-800:]}")
    return problems


@pytest.mark.skipif(shutil.which("pdflatex") is None, reason="no pdflatex on this machine")
@pytest.mark.parametrize("stem", LATEX_TABLES)
def test_every_latex_table_compiles_and_fits_both_layouts(outputs, stem, tmp_path):
    """The paper-sized table* within the text width, the one-column version within the
    column width, and the intervals companion where there is one: no error, no overfull box
    over 1 pt, no missing glyph."""
    files = [
        (outputs[0] / stem).with_suffix(suffix)
        for suffix in (".tex", ".column.tex", ".intervals.tex")
    ]
    files = [path for path in files if path.is_file()]
    assert len(files) >= 2, "a layout is missing"
    problems = [p for tex in files for p in compile_problems(tex, tmp_path)]
    assert not problems, "\n".join(problems)


def _wide_table() -> pd.DataFrame:
    """A paper table as wide as the widest of the papers' (two languages x two directions x
    four metrics), with long row labels, Cyrillic and accented words, and 95 % intervals."""
    rng = np.random.default_rng(3)
    records = []
    systems = [
        ("Monolingual", "trained on the English captions only, as in the paper's first row"),
        ("Bilingual + c2c (рынок, café, Kraków)", "both languages, caption-caption ranking"),
        ("Multilingual", ""),
    ]
    for system, note in systems:
        for language in ("en", "de"):
            for direction in ("i2t", "t2i"):
                for metric in ("R@1", "R@5", "R@10", "medr"):
                    ours = float(rng.uniform(10, 90))
                    records.append(dict(
                        system=system, variant_note=note, language=language,
                        direction=direction, metric=metric, paper=ours + 1.5, ours=ours,
                        ours_std=1.25, runs=3.0, diff=-1.5, ours_low=ours - 8.0,
                        ours_high=ours + 8.0, within_noise=True,
                    ))  # fmt: skip
    return pd.DataFrame.from_records(records)


@pytest.mark.skipif(shutil.which("pdflatex") is None, reason="no pdflatex on this machine")
def test_a_wide_table_with_long_labels_and_cyrillic_fits_both_layouts(tmp_path):
    from mlmm.tables import write_table

    write_table(_wide_table(), tmp_path / "kadar2018_table4", "A wide table", ["n"])
    tex = sorted(tmp_path.glob("*.tex"))
    assert {p.name for p in tex} == {
        "kadar2018_table4.tex", "kadar2018_table4.column.tex", "kadar2018_table4.intervals.tex",
    }  # fmt: skip
    text = (tmp_path / "kadar2018_table4.tex").read_text(encoding="utf-8")
    assert "\\foreignlanguage{russian}{рынок}" in text and "\\begin{table*}" in text
    notes = (tmp_path / "kadar2018_table4.notes.txt").read_text(encoding="utf-8")
    assert "as in the paper's first row" in notes and "as in the paper" not in text.split(
        "\\begin{table*}")[1].split("\\begin{minipage}")[0]  # a long label: a numbered note
    work = tmp_path / "tex"
    work.mkdir()
    problems = [p for path in tex for p in compile_problems(path, work)]
    assert not problems, "\n".join(problems)


def _luatexja() -> bool:
    if shutil.which("lualatex") is None or shutil.which("kpsewhich") is None:
        return False
    found = subprocess.run(["kpsewhich", "luatexja.sty", "luaotfload.sty"], capture_output=True)
    return len(found.stdout.split()) == 2


@pytest.mark.skipif(not _luatexja(), reason="no LuaLaTeX with luatexja on this machine")
def test_japanese_text_compiles_with_the_lualatex_preamble(tmp_path):
    from mlmm.tables import write_table

    frame = pd.DataFrame({"word": ["市場", "рынок", "marché"], "rank": [1.0, 2.0, 3.0]})
    write_table(frame, tmp_path / "words", "Nearest words", [])
    work = tmp_path / "tex"
    work.mkdir()
    problems = compile_problems(tmp_path / "words.tex", work, engine="lualatex")
    assert not problems, "\n".join(problems)


def test_greek_and_unset_letters_are_written_as_text_the_pdflatex_preamble_sets():
    from mlmm.cells import latex_text, pdflatex_sets

    assert latex_text("β = 0.5, Δ") == r"$\beta$ = 0.5, $\Delta$"
    assert latex_text("λφεΩΑ") == r"$\lambda$$\varphi$$\varepsilon$$\Omega$A"
    assert latex_text("ά") == r"$\alpha$"  # an accented letter: its base letter
    assert latex_text("a\u2009b ﬀ") == "a b ff"  # compatibility forms the fonts have
    assert latex_text("Ħ") == "[U+0126]"  # a letter T1 lacks, named
    assert latex_text("市場 рынок") == r"市場 \foreignlanguage{russian}{рынок}"  # LuaLaTeX's
    assert all(pdflatex_sets(c) for c in "café Kraków ŁŻ рынок “q” – €")
    assert not any(pdflatex_sets(c) for c in "βΔ市Ħ")


def _declared_characters() -> set[int]:
    """The characters inputenc's utf8 sets up for the preamble's encodings (T1, TS1, T2A)
    and for every encoding (utf8enc.dfu)."""
    names = ["t1enc.dfu", "ts1enc.dfu", "t2aenc.dfu", "utf8enc.dfu"]
    found = subprocess.run(["kpsewhich", *names],
                           capture_output=True, encoding="utf-8")  # fmt: skip
    declared = set()
    for path in found.stdout.split():
        text = Path(path).read_text(encoding="utf-8", errors="replace")
        codes = re.findall(r"DeclareUnicodeCharacter\{([0-9A-F]+)\}", text)
        declared |= {int(c, 16) for c in codes}
    return declared


@pytest.mark.skipif(shutil.which("kpsewhich") is None, reason="no TeX on this machine")
def test_every_character_written_as_it_is_is_set_up_by_the_pdflatex_preamble():
    from mlmm.cells import pdflatex_sets

    declared = _declared_characters()
    assert declared, "no encoding definitions found"
    passed = [c for c in range(0xA0, 0x2200) if pdflatex_sets(chr(c)) and c not in declared]
    assert not passed, [hex(c) for c in passed]


@pytest.mark.skipif(shutil.which("pdflatex") is None, reason="no pdflatex on this machine")
def test_greek_text_in_cells_labels_and_captions_compiles(tmp_path):
    from mlmm.tables import write_table

    frame = pd.DataFrame({
        "setting": ["β = 0.5", "λ = 1 (Σ over ά)", "Ħ, ﬀ and µ"], "α": [0.1, 0.2, 0.3],
    })  # fmt: skip
    write_table(frame, tmp_path / "greek", "Margins β and λ", ["γ"])
    work = tmp_path / "tex"
    work.mkdir()
    problems = [p for suffix in (".tex", ".column.tex")
                for p in compile_problems(tmp_path / f"greek{suffix}", work)]  # fmt: skip
    assert not problems, "\n".join(problems)


def _long_table(rows: int) -> pd.DataFrame:
    return pd.DataFrame({
        "item": [f"row_{n:03d}" + (" with a label that wraps" if n % 3 == 0 else "")
                 + (" and is so long that it becomes a numbered note" if n % 7 == 0 else "")
                 for n in range(rows)],
        "score": np.linspace(0.1, 0.9, rows), "count": np.arange(rows, dtype=float),
        "note": ["a" * 12] * rows,
    })  # fmt: skip


@pytest.mark.skipif(shutil.which("pdflatex") is None, reason="no pdflatex on this machine")
def test_a_table_taller_than_a_page_is_split_by_rows_into_continued_floats(tmp_path):
    """Both layouts: every row once, in parts captioned 'part n of m', each within a page
    and with the numbered notes its rows refer to."""
    from mlmm.tables import write_table

    write_table(_long_table(150), tmp_path / "long", "A long table", [])
    work = tmp_path / "tex"
    work.mkdir()
    for suffix, float_env in ((".tex", "table*"), (".column.tex", "table")):
        tex = (tmp_path / f"long{suffix}").read_text(encoding="utf-8")
        parts = re.findall(r"\(part (\d+) of (\d+)\)", tex)
        assert len(parts) >= 2 and {m for _, m in parts} == {str(len(parts))}, suffix
        assert tex.count(f"\\begin{{{float_env}}}") == len(parts)
        rows = re.findall(r"^(?:row\\_\\allowbreak\{\}(\d{3})[^&]*|\{\}\[(\d+)\]) &", tex, re.M)
        notes = {text.split(": ")[0] for text in re.findall(r"^\[\d+\] (.*)", (
            tmp_path / "long.notes.txt").read_text(encoding="utf-8"), re.M)}  # fmt: skip
        panels = tex.count("\\begin{tabular}") // len(parts)
        assert len(rows) == 150 * panels and len(notes) == len(range(0, 150, 7)), suffix
        for part in tex.split(f"\\end{{{float_env}}}")[:-1]:
            body, _, below = part.partition("\\bottomrule")
            referred = set(re.findall(r"\[(\d+)\]", body))
            assert referred == set(re.findall(r"\[(\d+)\]\\enspace", below)), suffix
        problems = compile_problems(tmp_path / f"long{suffix}", work)
        assert not problems, "\n".join(problems)


def test_a_builder_chooses_the_latex_columns_and_the_others_go_to_the_notes_file(tmp_path):
    from mlmm.tables import write_table

    frame = pd.DataFrame({
        "claim": ["first_claim", "second_claim"], "verdict": ["reproduced", "not run"],
        "effect": [1.25, np.nan], "low": [0.5, np.nan], "high": [2.0, np.nan],
        "quote": ["a long quotation from the paper, " * 3, "another quotation"],
    })  # fmt: skip
    columns = {"claim": "claim", "verdict": "verdict", "effect": "ours",
               "low": ("interval", "low"), "high": ("interval", "high")}  # fmt: skip
    write_table(frame, tmp_path / "c", "Claims", [], latex_columns=columns)
    assert list(pd.read_csv(tmp_path / "c.csv"))[:6] == list(frame)
    assert "another quotation" in (tmp_path / "c.md").read_text(encoding="utf-8")
    assert "another quotation" in (tmp_path / "c.html").read_text(encoding="utf-8")
    for suffix in (".tex", ".column.tex"):
        tex = (tmp_path / f"c{suffix}").read_text(encoding="utf-8")
        body = tex.split("\\begin{table", 1)[1]
        assert "quotation" not in body and "\\multicolumn{2}{c}{interval}" in body
        assert "claim[1] & verdict & ours & low & high" in body
        assert "not here: quote" in body  # the numbered note says where the rest is
        assert tex.count("\\begin{table") == 1, "one float: no slices by the interval level"
    notes = (tmp_path / "c.notes.txt").read_text(encoding="utf-8")
    assert "- second_claim\n  quote: another quotation" in notes
    with pytest.raises(ValueError, match="missing"):
        write_table(frame, tmp_path / "d", "Claims", [], latex_columns={"missing": "x"})


@pytest.mark.parametrize("stem", CLAIMS_TABLES)
def test_claims_latex_shows_the_verdicts_numbers_and_the_notes_file_their_texts(outputs, stem):
    """The claims table in LaTeX is paste-able: the claim, its verdict and numbers; the
    quote, finding, reason and compared rows are in the notes file, every column in the CSV."""
    tables = outputs[0]
    tex = (tables / stem).with_suffix(".tex").read_text(encoding="utf-8")
    header, _ = _tabular(tex)
    assert [re.sub(r"\[\d+\]", "", cell) for cell in header[-1]] == [
        "claim", "verdict", "paper", "ours", "low", "high", "MDE", "Holm p", "seeds", "compares",
    ]  # fmt: skip
    tidy = pd.read_csv((tables / stem).with_suffix(".csv"), keep_default_na=False)
    assert {"quote", "finding", "reason", "better", "than", "section"} <= set(tidy)
    notes = (tables / stem).with_suffix(".notes.txt").read_text(encoding="utf-8")
    typeset = "\n".join(line for line in tex.splitlines() if not line.startswith("%"))
    for claim, quote in zip(tidy["claim"], tidy["quote"], strict=True):
        assert f"- {claim}\n" in notes and f"  quote: {quote}\n" in notes, claim
        assert latex_name(quote) not in typeset, claim
