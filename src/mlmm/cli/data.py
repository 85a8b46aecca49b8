"""Data-stage commands: fetch and validate Multi30K, build vocabularies, Kádár Table 1."""

from __future__ import annotations

from pathlib import Path

from mlmm.catalogue import TABLE_SUFFIXES
from mlmm.cli import add_paper_tables, declare_output_dirs, declare_outputs
from mlmm.schema import checked_option


def register(subparsers) -> None:
    d = subparsers.add_parser(
        "download",
        help="download one URL to a file (retries, resumed, atomic, optional sha256)",
        description="The download half of a heavy rule on a cluster: the submitting host, which "
        "reaches the internet, fetches the file; a compute job then reads it (COCO's image "
        "archives, fastText's crawl vectors). Written under a temporary name, renamed when "
        "complete (and, with --sha256, matching).",
    )
    d.add_argument("url", help="http(s) URL")
    d.add_argument("--out", required=True, type=Path, help="file to write")
    d.add_argument("--sha256", help="expected 64-digit hex digest")
    checked_option(
        d, "--retries", "multi30k.retries", type=int, help="download retries"
    )
    d.set_defaults(func=run_download)

    p = subparsers.add_parser(
        "fetch-multi30k",
        help="copy or download Multi30K files listed in a sha256 manifest, verified",
        description="Copy (--mirror) or download (--url BASE; BASE/<path> per file) every file of "
        "a sha256 manifest to OUT/<path>, atomically, with retries; verify each hash; validate "
        "the copy; write OUT/MANIFEST.sha256 last. Files already present and verified are kept.",
    )
    p.add_argument("--manifest", required=True, type=Path, help="'<sha256>  <path>' per line")
    source = p.add_mutually_exclusive_group(required=True)
    source.add_argument("--mirror", type=Path, help="local directory holding the manifest paths")
    source.add_argument("--url", help="base URL, e.g. the upstream repository's raw-file URL")
    p.add_argument("--out", required=True, type=Path, help="directory to write the copy into")
    declare_output_dirs(p, "out")
    checked_option(
        p, "--retries", "multi30k.retries", type=int, help="download retries per file"
    )
    p.add_argument(
        "--force",
        action="store_true",
        help="replace a copy of another manifest or files that differ from it in OUT "
        "(refused otherwise)",
    )
    p.add_argument(
        "--no-validate",
        dest="validate",
        action="store_false",
        help="only verify hashes (for manifests that are not a Multi30K copy)",
    )
    p.set_defaults(func=run_fetch)

    p = subparsers.add_parser(
        "validate-multi30k",
        help="check a Multi30K copy: files, gzip, UTF-8, empty captions, line counts",
        description="Check every caption file (raw .gz and tok) of a Multi30K copy against its "
        "split's image list; the first problem is reported with its file and line.",
    )
    p.add_argument("root", type=Path, help="directory holding data/task1 and data/task2")
    p.set_defaults(func=run_validate)

    p = subparsers.add_parser(
        "multi30k-manifest",
        help="write the sha256 manifest of the Multi30K files the pipeline uses",
        description="Hash the Multi30K files the pipeline uses (task1 raw+tok en/de/fr/cs, "
        "task2 raw+tok en/de, image lists; train/val/test_2016) under ROOT.",
    )
    p.add_argument("root", type=Path, help="directory holding data/task1 and data/task2")
    p.add_argument("--out", required=True, type=Path, help="manifest file to write")
    declare_outputs(p, "out")
    p.set_defaults(func=run_manifest)

    p = subparsers.add_parser(
        "multi30k-vocab",
        help="per-language and union vocabularies of a Multi30K copy",
        description="Count words of the training split (tok files) and keep those seen at least "
        "--min-count times: OUT/<portion>.<lang>.tsv, OUT/<portion>.union.tsv, OUT/all.union.tsv.",
    )
    p.add_argument("--root", required=True, type=Path, help="the verified Multi30K copy")
    p.add_argument("--out", required=True, type=Path, help="vocabulary directory")
    declare_output_dirs(p, "out")
    checked_option(
        p, "--min-count", "vocab.min_count", type=int, help="keep words seen >= N times"
    )
    p.set_defaults(func=run_vocab)

    p = subparsers.add_parser(
        "kadar-table1",
        help="Kádár et al. 2018 Table 1 (vocabulary overlaps and sizes) beside the paper",
        description="Jaccard overlaps of the en/de/fr/cs vocabularies of the translation portion "
        "and the vocabulary sizes of Section 4, written as STEM.csv/.md/.tex.",
    )
    p.add_argument("--root", required=True, type=Path, help="the verified Multi30K copy")
    checked_option(
        p, "--min-count", "vocab.min_count", type=int, help="keep words seen >= N times"
    )
    add_paper_tables(p)
    p.add_argument("--out", required=True, type=Path, help="output stem (no suffix)")
    p.add_argument(
        "--demo", action="store_true", help="the copy is the demo world: say so in the notes"
    )
    declare_outputs(p, "out", suffixes=TABLE_SUFFIXES)
    p.set_defaults(func=run_table)


def run_fetch(args) -> None:
    from mlmm.data.fetch import fetch
    from mlmm.data.prepare import check_fetch_target, validate
    from mlmm.io import guard_outputs

    guard_outputs([args.out], [args.manifest, args.mirror])
    if check_fetch_target(args.out, args.manifest, args.force):
        print(f"{args.out}: already a verified copy of {args.manifest}; nothing fetched")
        return
    counts = fetch(
        args.manifest,
        args.out,
        mirror=args.mirror,
        url=args.url,
        retries=args.retries,
        validate=validate if args.validate else None,
    )
    print(f"{counts['fetched']} files fetched, {counts['present']} already present; all verified")


def run_validate(args) -> None:
    from mlmm.data.prepare import validate

    sizes = validate(args.root)
    print(", ".join(f"{split}: {n} images" for split, n in sizes.items()) + "; all files valid")


def run_manifest(args) -> None:
    from mlmm.data.fetch import make_manifest
    from mlmm.data.prepare import expected_files
    from mlmm.io import refuse_overwrite, write_text

    refuse_overwrite(args.out, [args.root / rel for rel in expected_files()], args.force)
    write_text(args.out, make_manifest(args.root, expected_files()))


def run_vocab(args) -> None:
    from mlmm.data.prepare import expected_files, write_vocabularies
    from mlmm.io import guard_outputs

    guard_outputs([args.out], [args.root / rel for rel in expected_files()])
    for path in write_vocabularies(args.root, args.out, args.min_count):
        print(path)


def run_table(args) -> None:
    from mlmm.io import table_outputs
    from mlmm.results.corpus_table import write_kadar_table1
    from mlmm.tables import check_paper_tables, paper_tables_option, paper_tables_paths

    paper_tables = paper_tables_option(args.paper_tables)
    inputs = [args.root, *paper_tables_paths(paper_tables)]
    table_outputs(args.out, inputs, stem=True, force=args.force)
    check_paper_tables(paper_tables)
    for path in write_kadar_table1(args.root, args.min_count, paper_tables, args.out, args.demo):
        print(path)


def run_download(args) -> None:
    from mlmm.data.fetch import download
    from mlmm.io import guard_outputs

    guard_outputs([args.out], [])
    download(args.url, args.out, sha256=args.sha256, retries=args.retries)
