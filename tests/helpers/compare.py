"""Exact comparison of two runs' records: the resume and determinism tests."""

from __future__ import annotations

import numpy as np
import torch

# Keys whose values differ between runs by nature (clock, resume bookkeeping).
VOLATILE = ("time", "timing", "second", "provenance", "resumed", "extracted_rows", "elapsed",
            "per_s", "tokens_per", "speed", "date")  # fmt: skip


def assert_same(a, b, where: str = "") -> None:
    """Equal values, recursively, tensors and arrays exactly; volatile keys skipped."""
    if isinstance(a, dict):
        assert isinstance(b, dict) and set(a) == set(b), where
        for key in a:
            if not any(word in str(key).lower() for word in VOLATILE):
                assert_same(a[key], b[key], f"{where}.{key}")
    elif isinstance(a, list | tuple):
        assert len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            assert_same(x, y, f"{where}[{i}]")
    elif isinstance(a, torch.Tensor):
        assert torch.equal(a, b), where
    elif isinstance(a, np.ndarray):
        np.testing.assert_array_equal(a, b, err_msg=where)
    else:
        assert a == b or (a != a and b != b), f"{where}: {a!r} != {b!r}"  # NaN == NaN
