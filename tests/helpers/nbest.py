"""A well-formed n-best list (Moses format) that the bad-input cases damage."""

from __future__ import annotations

GOOD_NBEST = [
    "0 ||| ein hund ||| NMT= -1.0 WordPenalty= -2 ||| -1.0",
    "0 ||| ein hund läuft ||| NMT= -2.0 WordPenalty= -3 ||| -2.0",
    "1 ||| zwei katzen ||| NMT= -0.5 WordPenalty= -2 ||| -0.5",
    "2 ||| ein mann ||| NMT= -0.7 WordPenalty= -2 ||| -0.7",
]
