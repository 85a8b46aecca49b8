"""Helpers shared by the test modules: small generated worlds, the one-line error checker, the
paper configuration as a run sees it, the SLURM stub. No test module imports another test
module (tests/test_suite_layout.py keeps it so); what two of them share lives here."""
