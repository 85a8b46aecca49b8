"""The one path every results table takes from the runs' cells to the frame it writes: our cells
summarised over seeds, placed beside the paper's, put in the table's order and given their
95 % intervals from the runs' per-query outcomes. The builders differ only in what they read,
the paper cells they compare with, the order of their rows and their notes."""

from __future__ import annotations

from collections.abc import Callable

import pandas as pd

from mlmm.results.intervals import add_intervals
from mlmm.tables import beside_paper, summarise_runs

Frame = pd.DataFrame


def paper_table(
    ours: Frame,
    paper: Frame | None,
    runs: list | None,
    paper_name: str,
    number: int,
    order: Callable[[Frame], Frame] | None = None,
    place: Callable[[Frame, Frame | None], Frame] | None = None,
) -> Frame:
    """The cells of one paper table: ``ours`` (one row per run and cell: the table keys and
    ``value``) summarised over seeds and joined to the paper's cells (``place``; by default
    ``beside_paper(summarise_runs(ours), paper)``), in the table's ``order``, then the 95 %
    interval of every cell of ours from ``runs`` (``add_intervals``; ``runs`` None: a table
    of counts with no per-query outcomes, no interval columns)."""
    frame = (place or beside)(ours, paper)
    if order is not None:
        frame = order(frame)
    if runs is None:
        return frame
    return add_intervals(frame, runs, paper_name, number)


def beside(ours: Frame, paper: Frame | None) -> Frame:
    """``ours`` summarised over seeds (mean, std, count per cell) beside the paper's cells."""
    return beside_paper(summarise_runs(ours), paper)
