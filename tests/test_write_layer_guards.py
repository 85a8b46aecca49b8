"""The write layer while a command runs: one writer per output (a lock), the command's inputs
never written over, a record that names the file through an interrupted write, digests read
once, and an unexpected error that names the file it met."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

from mlmm import io
from mlmm.cli import main
from mlmm.errors import InputError

HOLD = """
import sys, time
from mlmm import io
with io.command():
    io.guard_outputs([sys.argv[1]], [])
    io.write_text(sys.argv[1], "first")
    print("locked", flush=True)
    time.sleep(60)
"""


def _holder(out):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    argv = [sys.executable, "-c", HOLD, str(out)]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, env=env, text=True)
    assert proc.stdout.readline().strip() == "locked"
    return proc


def test_a_second_writer_of_the_same_output_is_refused(tmp_path):
    out = tmp_path / "metrics.json"
    proc = _holder(out)
    try:
        with io.command(), pytest.raises(InputError, match="being written by another mlmm"):
            io.guard_outputs([out], [])
        with io.command():  # another output beside it is free
            io.guard_outputs([tmp_path / "other.json"], [])
    finally:
        proc.kill()
        proc.wait()
    with io.command():  # a killed holder's lock file holds nothing
        io.guard_outputs([out], [])
        io.write_json(out, {"a": 1})
        assert (tmp_path / ".metrics.json.mlmm-lock").exists()
    assert not (tmp_path / ".metrics.json.mlmm-lock").exists()  # removed when it ends
    assert io.foreign_file(tmp_path) is None


def test_outputs_not_there_yet_are_locked_when_written(tmp_path):
    run, table = tmp_path / "run" / "seed1", tmp_path / "tables" / "t.csv"
    with io.command():
        io.guard_outputs([run, table, tmp_path / "shared"], [])
        io.lock_output_dir(run)  # a training run's own directory
        assert not (tmp_path / "run").exists()  # nothing created before the first write
        io.write_text(run / "a.txt", "a\n")
        io.write_text(table, "x\n")
        io.write_text(tmp_path / "shared" / "b.txt", "b\n")
        assert (tmp_path / "run" / ".seed1.mlmm-lock").exists()
        assert (tmp_path / "tables" / ".t.csv.mlmm-lock").exists()
        # a directory several commands write files into is not locked as a whole
        assert not (tmp_path / ".shared.mlmm-lock").exists()
    assert not (tmp_path / "run" / ".seed1.mlmm-lock").exists()


def test_two_commands_write_files_into_one_directory(tmp_path):
    shared = tmp_path / "tables"
    shared.mkdir()
    proc = _holder(shared / "a.csv")
    try:
        with io.command():
            io.guard_outputs([shared], [])
            io.write_text(shared / "b.csv", "b\n")
            with pytest.raises(InputError, match="being written by another mlmm"):
                io.guard_outputs([shared / "a.csv"], [])
    finally:
        proc.kill()
        proc.wait()


def test_the_commands_inputs_are_never_written_over_even_with_force(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    reference = data / "ref.txt"
    io.write_text(reference, "ours\n")  # written by mlmm, but an input of this command
    with io.command(), io.forcing(True):
        io.guard_outputs([tmp_path / "out.json"], [reference])
        with pytest.raises(InputError, match="apart from the command's inputs, found one of them"):
            io.write_text(reference, "replaced\n")
        with pytest.raises(InputError, match="a directory holding its input"):
            io.discard(data)
        with pytest.raises(InputError, match="a directory holding its input"):
            io.temp_dir_beside(data)
    assert reference.read_text() == "ours\n"
    io.write_text(reference, "replaced\n")  # outside that command, its own file is replaceable


def test_a_stop_between_record_and_rename_leaves_the_file_ours(tmp_path, monkeypatch):
    target = tmp_path / "model.npy"
    io.write_npy(target, np.zeros(3))
    real_replace = os.replace

    def stop(source, destination):
        if str(destination) == str(target):
            raise KeyboardInterrupt
        real_replace(source, destination)

    monkeypatch.setattr(io.os, "replace", stop)
    with pytest.raises(KeyboardInterrupt):
        io.write_npy(target, np.ones(3))
    monkeypatch.setattr(io.os, "replace", real_replace)
    assert np.load(target).tolist() == [0.0, 0.0, 0.0]
    assert io.foreign_file(target) is None  # the old file is still known as ours
    io.write_npy(target, np.ones(3))  # and a rerun replaces it without --force
    assert len(io._record_entries(target)) == 1


def test_a_recorded_file_is_not_read_again_for_its_digest(tmp_path, monkeypatch):
    target = tmp_path / "features.npy"
    io.write_npy(target, np.arange(1000, dtype=np.float32))
    expected = io.hashlib.sha256(target.read_bytes()).hexdigest()

    def no_hashing(*args):
        raise AssertionError("hashed again")

    monkeypatch.setattr(io.hashlib, "sha256", no_hashing)
    assert io.sha256_file(target) == expected
    io.claim(target)  # replacing it: known as ours from its record
    monkeypatch.undo()
    with open(target, "r+b") as handle:  # an edit (new size and time) is read again
        handle.seek(0, 2)
        handle.write(b"x")
    assert io.sha256_file(target) != expected
    with pytest.raises(InputError, match="an edited file"):
        io.claim(target)


def test_an_internal_error_names_the_file_being_written(tmp_path):
    target = tmp_path / "table.csv"
    with io.command(), pytest.raises(ZeroDivisionError), io.atomic_path(target):
        raise ZeroDivisionError("bug")
    assert io.error_place() == f"while writing {target}"
    assert not target.exists()


def test_main_names_the_last_file_read_in_an_internal_error(tmp_path, monkeypatch, capsys):
    rng = np.random.default_rng(0)
    np.save(tmp_path / "i.npy", rng.normal(size=(4, 3)))
    np.save(tmp_path / "c.npy", rng.normal(size=(4, 3)))

    def bug(*args, **kwargs):
        raise ZeroDivisionError("division by zero")

    monkeypatch.setattr("mlmm.evaluation.retrieval_metrics", bug)
    monkeypatch.delenv("PYTEST_CURRENT_TEST", raising=False)
    monkeypatch.delenv("MLMM_TRACEBACK", raising=False)
    files = ["--images", str(tmp_path / "i.npy"), "--captions", str(tmp_path / "c.npy")]
    argv = ["eval-retrieval", *files, "--per-image", "1", "--out", str(tmp_path / "m.json")]
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert "internal error ZeroDivisionError" in err
    assert f"after reading {tmp_path / 'c.npy'}" in err
    assert not (tmp_path / ".m.json.mlmm-lock").exists()
    assert "Traceback" not in err


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_an_array_written_in_rows_records_the_digest_of_its_bytes_without_reading_them(
    dtype, tmp_path, monkeypatch
):
    """``npy_rows`` hashes the bytes as it writes them: the file is not read again for its
    record, which names exactly the sha256 of the file on disk; the file is what ``np.save``
    writes. The digest cannot be handed in from outside: the layer takes it itself."""
    array = np.random.default_rng(0).standard_normal((37, 5)).astype(dtype)
    target = tmp_path / "train.npy"

    def no_reading(*args):
        raise AssertionError("read again for its digest")

    monkeypatch.setattr(io, "_hash", no_reading)
    with io.npy_rows(target, array.shape, dtype) as append:
        for start in range(0, 37, 10):
            append(array[start : start + 10])
    monkeypatch.undo()
    np.save(tmp_path / "plain.npy", array)
    assert target.read_bytes() == (tmp_path / "plain.npy").read_bytes()
    on_disk = io.hashlib.sha256(target.read_bytes()).hexdigest()
    assert [entry[0] for entry in io._record_entries(target)] == [on_disk]
    assert io.sha256_file(target) == on_disk and io.foreign_file(target) is None


def test_an_array_short_of_its_rows_is_not_put_in_place(tmp_path):
    target = tmp_path / "train.npy"
    io.write_npy(target, np.zeros((2, 3), dtype=np.float32))
    with (
        pytest.raises(InputError, match="expected 4 rows written, found 3"),
        io.npy_rows(target, (4, 3), "float32") as append,
    ):
        append(np.ones((3, 3)))
    with (
        pytest.raises(ValueError, match="expected rows"),
        io.npy_rows(target, (4, 3), "float32") as append,
    ):
        append(np.ones((5, 3)))
    assert np.load(target).tolist() == np.zeros((2, 3)).tolist()  # the old array is kept
    assert sorted(p.name for p in tmp_path.iterdir()) == [".train.npy.mlmm-written", "train.npy"]
