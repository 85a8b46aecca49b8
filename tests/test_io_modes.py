"""Outputs get the mode the umask gives: collaborators on a shared project directory
read every table, figure and model, as with any file a plain ``open`` creates."""

from __future__ import annotations

import os
import stat

import numpy as np
import pytest

from mlmm.io import temp_dir_beside, write_json, write_npy, write_text


@pytest.fixture
def umask():
    def set_umask(value: int) -> None:
        os.umask(value)

    old = os.umask(0o022)
    yield set_umask
    os.umask(old)


@pytest.mark.parametrize("mask", [0o022, 0o002, 0o077])
def test_atomic_writes_honour_the_umask(umask, tmp_path, mask):
    umask(mask)
    write_text(tmp_path / "t.md", "x\n")
    write_json(tmp_path / "m.json", {"a": 1})
    write_npy(tmp_path / "f.npy", np.zeros(2, dtype=np.float32))
    for name in ("t.md", "m.json", "f.npy"):
        assert stat.S_IMODE((tmp_path / name).stat().st_mode) == 0o666 & ~mask, name


@pytest.mark.parametrize("mask", [0o022, 0o077])
def test_directories_built_beside_their_target_honour_the_umask(umask, tmp_path, mask):
    umask(mask)
    built = temp_dir_beside(tmp_path / "out")
    assert built.parent == tmp_path and built.name.startswith(".out.")
    assert stat.S_IMODE(built.stat().st_mode) == 0o777 & ~mask
