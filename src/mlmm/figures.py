"""Figure sizes and type for a paper: one column or two columns of an ACL/EMNLP page.

A figure is drawn at the width it will be printed at, so that its fonts are read at their
size (8 pt labels, 7 pt ticks and legends) instead of being scaled down with the image. It
carries no title or provenance in the image (``mlmm.origin.stamp_figure``): those go into its
metadata and its caption file.
"""

from __future__ import annotations

ONE_COLUMN = 3.0  # inches: \columnwidth of an ACL page (7.7 cm)
TWO_COLUMN = 6.3  # inches: \textwidth (16 cm)

PAPER_RC = {
    "font.size": 8,
    "axes.titlesize": 8,
    "axes.labelsize": 8,
    "xtick.labelsize": 7,
    "ytick.labelsize": 7,
    "legend.fontsize": 7,
    "legend.title_fontsize": 7,
    "figure.titlesize": 8,
    "pdf.fonttype": 42,  # TrueType in the PDF: text a journal's checker can read
}


def paper_style():
    """A context in which figures are drawn with the paper's type sizes."""
    import matplotlib

    return matplotlib.rc_context(PAPER_RC)


def figure_size(columns: int, height: float) -> tuple[float, float]:
    """(width, height) in inches of a figure one or two columns wide."""
    if columns not in (1, 2):
        raise ValueError(f"a figure is 1 or 2 columns wide, not {columns}")
    return (ONE_COLUMN if columns == 1 else TWO_COLUMN, height)
