"""Every table and figure of the four papers that the workflow regenerates, as plain data.

The rules files read this module while Snakemake parses them, so it imports nothing beyond the
standard library (a Snakemake installed by conda or pipx has no numpy or pandas of its own).
Each table also names its shape for people: which columns of the tidy table become rows and
which become the paper's columns (``mlmm.tables.paper_shape``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

RECALLS = ("R@1", "R@5", "R@10")


@dataclass(frozen=True)
class Layout:
    """The paper's shape of a tidy table: ``rows`` and ``columns`` are tidy column names;
    a level with one value in the whole table is left out of the header (``system`` stays)."""

    rows: tuple[str, ...] = ("system", "variant_note")
    columns: tuple[str, ...] = ("dataset", "language", "direction", "metric")


# Shapes that differ from the default (one row per system, the paper's columns)
LAYOUTS: dict[str, Layout] = {
    # a row per language pair or language set; Jaccard and the vocabulary sizes as columns
    "kadar2018_table1": Layout(rows=("variant_note", "language"), columns=("metric",)),
    # the retrieval directions with their recalls and median rank, then the alignment ratio
    **{
        f"ame2019_table{n}": Layout(columns=("direction", "metric"))
        for n in (1, 2, 3, 4)
    },
    # the 11 x 11 grid: training language down, test language across
    "rajendran2016_table1": Layout(rows=("system", "language"), columns=("variant_note",)),
    "rajendran2016_table3": Layout(rows=("system",), columns=("language",)),
    # systems grouped by caption language, I to C and C to I recalls across
    "rajendran2016_table5": Layout(rows=("language", "system"), columns=("direction", "metric")),
}


def layout(stem: str) -> Layout:
    return LAYOUTS.get(stem, Layout())


@dataclass(frozen=True)
class TableSpec:
    """Which cells of a retrieval run a paper table shows."""

    paper: str
    table: int
    title: str
    languages: tuple[str, ...]
    directions: tuple[str, ...]
    metrics: tuple[str, ...]
    extra: tuple[tuple[str, str, str], ...] = field(default=())  # (language, direction, metric)

    @property
    def stem(self) -> str:
        return f"{self.paper}_table{self.table}"

    def cells(self) -> set[tuple[str, str, str]]:
        grid = {(la, d, m) for la in self.languages for d in self.directions for m in self.metrics}
        return grid | set(self.extra)


_ALIGNMENT = (("en-de", "", "alignment"),)
_ALIGNMENT_JA = (("en-ja", "", "alignment"),)
# The retrieval tables (rule retrieval_tables, mlmm.results.retrieval_tables)
TABLES = [
    TableSpec(
        "kadar2018", 2, "Kádár et al. 2018, Table 2: English image-sentence ranking",
        ("en",), ("i2t", "t2i"), RECALLS,
    ),
    TableSpec(
        "kadar2018", 3, "Kádár et al. 2018, Table 3: German image-sentence ranking",
        ("de",), ("i2t", "t2i"), RECALLS,
    ),
    TableSpec(
        "kadar2018", 4, "Kádár et al. 2018, Table 4: translation vs comparable (R@10)",
        ("en", "de"), ("i2t", "t2i"), ("R@10",),
    ),
    TableSpec(
        "kadar2018", 5, "Kádár et al. 2018, Table 5: overlapping vs disjoint images (R@10)",
        ("en", "de"), ("i2t", "t2i"), ("R@10",),
    ),
    TableSpec(
        "kadar2018", 6, "Kádár et al. 2018, Table 6: four languages (T2I R@10)",
        ("en", "de", "fr", "cs"), ("t2i",), ("R@10",),
    ),
    TableSpec(
        "kadar2018", 7, "Kádár et al. 2018, Table 7: high-to-low resource transfer (T2I R@10)",
        ("fr", "cs"), ("t2i",), ("R@10",),
    ),
    TableSpec(
        "calixto2017", 1, "Calixto & Liu 2017, Table 1: image-sentence ranking",
        ("en", "de"), ("t2i", "i2t"), (*RECALLS, "medr"),
    ),
    TableSpec(
        "calixto2017", 2, "Calixto & Liu 2017, Table 2: STS Pearson r (SemEval images)",
        ("en",), ("sts",), ("pearson",),
    ),
    TableSpec(
        "ame2019", 1, "Mohammadshahi et al. 2019, Table 1: Multi30k English",
        ("en",), ("i2t", "t2i"), (*RECALLS, "medr"), _ALIGNMENT,
    ),
    TableSpec(
        "ame2019", 2, "Mohammadshahi et al. 2019, Table 2: Multi30k German",
        ("de",), ("i2t", "t2i"), (*RECALLS, "medr"), _ALIGNMENT,
    ),
    TableSpec(
        "ame2019", 3,
        "Mohammadshahi et al. 2019, Table 3: MS-COCO English (1K test images, 5 folds)",
        ("en",), ("i2t", "t2i"), (*RECALLS, "medr"), _ALIGNMENT_JA,
    ),
    TableSpec(
        "ame2019", 4,
        "Mohammadshahi et al. 2019, Table 4: MS-COCO Japanese (1K test images, 5 folds)",
        ("ja",), ("i2t", "t2i"), (*RECALLS, "medr"), _ALIGNMENT_JA,
    ),
    TableSpec(
        "ame2019", 5, "Mohammadshahi et al. 2019, Table 5: caption-caption retrieval",
        ("en-de",), ("t2t_en2de", "t2t_de2en"), RECALLS,
    ),
]
# Every file a table is written as (mlmm.tables.write_table), each the stem with one suffix: the
# tidy CSV; Markdown, LaTeX (table*, two-column page) and HTML in the paper's shape; the LaTeX
# for one column and its intervals companion; the notes the LaTeX leaves out (mlmm.latex). Every
# table has all of them (a table without intervals gets a companion saying so), so they are the
# declared outputs of each table rule (workflow/rules/common.smk, table_files) and command.
TABLE_SUFFIXES = (".csv", ".md", ".tex", ".html", ".column.tex", ".intervals.tex", ".notes.txt")

# The retrieval figures (rule retrieval_figures): paper -> figure number
FIGURES = {"kadar2018": 3, "ame2019": 2}

# The papers with a claims registry (resources/claims/<paper>.yaml; rule claims,
# mlmm.results.claims):
# results/tables/<paper>_claims.* and results/figures/<paper>_claims.*
CLAIM_PAPERS = ["kadar2018", "calixto2017", "ame2019", "rajendran2016"]

# Every table and figure of the four papers the workflow writes (stem under results/tables or
# results/figures), in the papers' order; the report shows each with workflow/report/<stem>.rst.
OTHER_TABLES = [
    "kadar2018_table1",
    "calixto2017_table3",
    "rajendran2016_table1",
    "rajendran2016_table3",
    "rajendran2016_table4",
    "rajendran2016_table5",
]
ALL_TABLES = sorted(
    [spec.stem for spec in TABLES] + OTHER_TABLES,
    key=lambda stem: (stem.split("_")[0], int(stem.rsplit("table", 1)[1])),
)
# Rajendran Tables 6 and 7 are pictures (images with captions), so figures (rule pivot_examples)
ALL_FIGURES = [f"{paper}_figure{number}" for paper, number in FIGURES.items()] + [
    "rajendran2016_table1_heatmap",
    "rajendran2016_table6",
    "rajendran2016_table7",
]


# The language pair of the one table the NMT stage fills (Calixto & Liu 2017 Table 3): here,
# in a standard-library module, so that the config check at planning time can name it.
NMT_TABLE_LANGUAGE = "en-de"
