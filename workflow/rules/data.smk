"""Data stage: demo world, Multi30K fetch (sha256-verified), vocabularies, Kadar Table 1."""
