"""What is built from the stages' results: the tables beside the papers' numbers, their intervals,
the claims' verdicts and the figures. Every module here reads the files the stages write (per-run
metrics, per-query outcomes and their records) and the shipped paper tables; no stage imports
this package (tests/test_import_layering.py)."""
