"""``mlmm eval-retrieval``, ``mlmm retrieval-tables`` and ``mlmm retrieval-figures``."""

from __future__ import annotations

from pathlib import Path

from mlmm.cli import add_data_sets, add_paper_tables, declare_output_dirs, declare_outputs
from mlmm.schema import checked_option


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "eval-retrieval",
        help="R@1/5/10, medr and meanr of image and caption embeddings (VSE++ conventions)",
        description="Row i of the image array is image i; rows k*i .. k*i+k-1 of the caption "
        "array are its k captions. Writes {'i2t': {...}, 't2i': {...}, 'provenance': ...}.",
    )
    p.add_argument("--images", required=True, type=Path, help="(n, d) .npy image embeddings")
    p.add_argument("--captions", required=True, type=Path, help="(n*k, d) .npy caption embeddings")
    checked_option(
        p,
        "--per-image",
        "$defs.cli_options.per_image",
        required=True,
        type=int,
        metavar="K",
        help="captions per image",
    )
    checked_option(
        p,
        "--folds",
        "$defs.cli_options.folds",
        type=int,
        default=1,
        help="5 = COCO 1K protocol (mean of 5 folds)",
    )
    p.add_argument("--similarity", choices=["cosine", "order"], default="cosine")
    checked_option(p, "--chunk", "$defs.cli_options.chunk", type=int, default=None,
                   help="captions per score block")
    p.add_argument("--out", required=True, type=Path, help="metrics JSON")
    declare_outputs(p, "out")
    add_data_sets(p, "the embedded images and captions")
    p.set_defaults(func=run_eval)

    p = subparsers.add_parser(
        "retrieval-tables",
        help="paper tables of the retrieval runs beside the papers' numbers",
        description="Kádár 2018 Tables 2-7, Calixto 2017 Tables 1-2, AME 2019 Tables 1, 2, 5 "
        "from per-run metrics.json files; each configured variant's paper_rows say which rows.",
    )
    _run_arguments(p)
    add_paper_tables(p)
    p.add_argument("--out", required=True, type=Path, help="directory for <paper>_table<N>.*")
    _papers_argument(p, "tables")
    declare_output_dirs(p, "out")
    p.set_defaults(func=run_tables)

    p = subparsers.add_parser(
        "retrieval-figures",
        help="Kádár 2018 Figure 3 and AME 2019 Figure 2 (PNG and PDF)",
        description="Figures from per-run metrics.json files (AME Figure 2 from 'history').",
    )
    _run_arguments(p)
    p.add_argument("--out", required=True, type=Path, help="directory for <paper>_figure<N>.*")
    _papers_argument(p, "figures")
    declare_output_dirs(p, "out")
    p.set_defaults(func=run_figures)


    p = subparsers.add_parser(
        "claims",
        help="each paper's claims tested on the retrieval runs (paired bootstrap, Holm)",
        description="For every claims registry (resources/claims/<paper>.yaml): the paper's "
        "effect, ours with a paired bootstrap interval over the runs' test images (queries.npz "
        "beside each metrics.json) and seeds at its Holm-adjusted level, the minimal detectable "
        "effect, and a verdict; writes TABLES/<paper>_claims.{csv,md,tex,html} and "
        "FIGURES/<paper>_claims.{png,pdf}.",
    )
    _run_arguments(p)
    p.add_argument(
        "--registry", required=True, nargs="+", type=Path, help="<paper>.yaml claims registries"
    )
    p.add_argument(
        "--nmt-runs",
        nargs="*",
        type=Path,
        default=[],
        help="mlmm mt-score metrics.json files (Calixto Table 3 rows; sentences.npz beside)",
    )
    p.add_argument(
        "--ted-cldc",
        nargs="*",
        type=Path,
        default=[],
        help="mlmm ted-classify result JSONs (Rajendran Tables 1, 3; *.documents.npz beside)",
    )
    p.add_argument("--ted-nb", type=Path, default=None, help="the mlmm ted-nb result JSON")
    p.add_argument(
        "--pivot-runs",
        nargs="*",
        type=Path,
        default=[],
        help="mlmm pivot-train / pivot-mt metrics.json files (Rajendran Table 5; queries.npz "
        "beside)",
    )
    add_paper_tables(p)
    p.add_argument("--tables", required=True, type=Path, help="directory for <paper>_claims.*")
    p.add_argument("--figures", required=True, type=Path, help="directory for the figures")
    p.set_defaults(func=run_claims)


def _papers_argument(p, what: str) -> None:
    p.add_argument(
        "--papers",
        nargs="+",
        choices=["kadar2018", "calixto2017", "ame2019"],
        default=None,
        help=f"write only these papers' {what} (default: every paper's)",
    )


def _run_arguments(p) -> None:
    p.add_argument(
        "--config",
        type=Path,
        action="append",
        required=True,
        help="config YAML or JSON with retrieval.variants (repeatable; later files override "
        "earlier; the workflow passes its record of the retrieval section)",
    )
    p.add_argument(
        "--runs",
        required=True,
        nargs="*",
        type=Path,
        help="metrics.json files or directories of them (none: paper numbers only)",
    )


def run_eval(args) -> None:
    import numpy as np

    from mlmm.errors import InputError
    from mlmm.evaluation import check_finite, retrieval_metrics
    from mlmm.io import read_npy, refuse_overwrite, write_json
    from mlmm.provenance import Timer, provenance

    refuse_overwrite(args.out, [args.images, args.captions], args.force)
    arrays = {}
    for name in ("images", "captions"):
        path = getattr(args, name)
        arrays[name] = read_npy(path, f"a .npy array of {name[:-1]} embeddings")
        shape = arrays[name].shape
        if arrays[name].ndim != 2 or shape[0] == 0:
            raise InputError(path, "a 2-d array with at least one row", f"shape {shape}")
        check_finite(arrays[name], str(path))
    # float32 and float64 arrays (a float64 export) are compared in the wider of the two types
    common = np.result_type(arrays["images"].dtype, arrays["captions"].dtype, np.float32)
    arrays = {name: array.astype(common, copy=False) for name, array in arrays.items()}
    n, m = arrays["images"].shape[0], arrays["captions"].shape[0]
    if args.per_image < 1 or m != n * args.per_image:
        raise InputError(args.captions, f"{n} x {args.per_image} rows", f"{m} rows")
    if arrays["images"].shape[1] != arrays["captions"].shape[1]:
        raise InputError(
            args.captions, f"{arrays['images'].shape[1]} columns", f"{arrays['captions'].shape[1]}"
        )
    if args.folds < 1 or n % args.folds:
        raise InputError(args.images, f"a row count divisible by {args.folds} folds", str(n))
    timer = Timer()
    with timer("evaluate"):
        metrics = retrieval_metrics(
            arrays["images"],
            arrays["captions"],
            args.per_image,
            args.similarity,
            args.folds,
            args.chunk,
        )
    settings = {
        k: str(v) if isinstance(v, Path) else v
        for k, v in vars(args).items()
        if k not in ("func", "command")
    }
    made_from = provenance(settings, data=args.data_sets)
    write_json(args.out, {**metrics, "provenance": made_from, "timings": timer.seconds})
    for direction in ("i2t", "t2i"):
        shown = " ".join(f"{k}={v:.1f}" for k, v in metrics[direction].items())
        print(f"{direction}: {shown}")


def _runs(args):
    from mlmm.results.retrieval_tables import load_runs, read_section

    return load_runs(args.runs, read_section(args.config), " + ".join(map(str, args.config)))


def run_tables(args) -> None:
    from mlmm.io import table_outputs
    from mlmm.results.retrieval_tables import build_tables
    from mlmm.tables import check_paper_tables, paper_tables_option, paper_tables_paths

    paper_tables = paper_tables_option(args.paper_tables)
    table_outputs(args.out, [*args.runs, *paper_tables_paths(paper_tables)])
    check_paper_tables(paper_tables)
    runs = _runs(args)
    for path in build_tables(runs, paper_tables, args.out, args.papers):
        print(path)


def run_figures(args) -> None:
    from mlmm.io import guard_outputs
    from mlmm.results.retrieval_tables import build_figures

    guard_outputs([args.out], args.runs)
    runs = _runs(args)
    for path in build_figures(runs, args.out, args.papers):
        print(path)


def run_claims(args) -> None:
    from mlmm.io import table_outputs
    from mlmm.results.claims import write_claims
    from mlmm.results.nmt_table import nmt_runs
    from mlmm.results.pivot_table import pivot_runs, read_runs
    from mlmm.results.ted_tables import ted_runs
    from mlmm.tables import check_paper_tables, paper_tables_option, paper_tables_paths

    paper_tables = paper_tables_option(args.paper_tables)
    inputs = [*args.runs, *args.nmt_runs, *args.ted_cldc, args.ted_nb, *args.pivot_runs,
              *paper_tables_paths(paper_tables), *args.registry]  # fmt: skip
    table_outputs(args.tables, inputs)
    table_outputs(args.figures, inputs)
    check_paper_tables(paper_tables)
    runs = _runs(args) + nmt_runs(args.nmt_runs) + ted_runs(args.ted_cldc, args.ted_nb)
    runs += pivot_runs(read_runs(args.pivot_runs))
    for registry in args.registry:
        for path in write_claims(runs, registry, paper_tables, args.tables, args.figures):
            print(path)
