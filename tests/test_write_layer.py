"""The write layer (mlmm.io): no output replaces a file or directory that no mlmm command
wrote unless --force, whichever command or writer function writes it; no code under src/mlmm
writes around it."""

from __future__ import annotations

import contextlib

import numpy as np
import pytest
from helpers.cli import SUBCOMMANDS, fill_required
from helpers.one_line import message_lines
from helpers.source_lint import direct_writes

from mlmm import io
from mlmm.cli import OUTPUT_DIRS, OUTPUTS, declared_outputs, main
from mlmm.errors import InputError

USER_TEXT = "my thesis\n"


WRITING = sorted(
    name for name, p in SUBCOMMANDS.items() if p.get_default(OUTPUTS) or p.get_default(OUTPUT_DIRS)
)


@pytest.fixture(autouse=True)
def _no_force():
    io.set_force(False)
    yield
    io.set_force(False)


def test_no_direct_writes_under_src():
    """Every write, move and deletion under src/mlmm goes through mlmm.io (count: 0)."""
    assert direct_writes() == []


@pytest.mark.parametrize("command", sorted(SUBCOMMANDS))
def test_every_subcommand_takes_force(command):
    assert "--force" in SUBCOMMANDS[command]._option_string_actions


def _point(parser, argv: list[str], dest: str, path) -> None:
    """Make ``argv`` give ``path`` to the option or positional ``dest``."""
    action = next(a for a in parser._actions if a.dest == dest)
    if not action.option_strings:
        argv[[i for i, a in enumerate(argv) if a.endswith(f"in-{dest}")][0]] = str(path)
    elif action.option_strings[0] in argv:
        argv[argv.index(action.option_strings[0]) + 1] = str(path)
    else:
        argv += [action.option_strings[0], str(path)]


def _run(command: str, argv: list[str], capsys) -> tuple[int, str]:
    status = main([command, *argv])
    err = "\n".join(message_lines(capsys.readouterr().err))
    assert "Traceback" not in err, err
    if status != 0:
        assert len(err.splitlines()) == 1, err
    return status, err


@pytest.mark.parametrize("command", WRITING)
def test_every_writing_subcommand_keeps_a_users_files_at_its_outputs(command, tmp_path, capsys):
    """A user's file at every declared output file, and in every declared output directory,
    of every writing subcommand (inputs made up: small text files): at most one line, never a
    traceback, and every user's file as it was. An output file is refused
    by the write layer naming --force; with --force that refusal is gone."""
    parser = SUBCOMMANDS[command]
    argv = fill_required(parser, tmp_path)
    mine = tmp_path / "mine"
    args = parser.parse_args(argv)
    for dest, _ in parser.get_default(OUTPUTS) or []:
        _point(parser, argv, dest, mine / f"{dest}.out")
        setattr(args, dest, mine / f"{dest}.out")
    users = declared_outputs(args)
    for dest in parser.get_default(OUTPUT_DIRS) or []:
        _point(parser, argv, dest, mine / dest)
        users.append(mine / dest / "notes.txt")
    for path in users:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(USER_TEXT, encoding="utf-8")
    _, err = _run(command, argv, capsys)  # fails on the made-up inputs or the files, or succeeds
    for path in users:
        assert path.read_text(encoding="utf-8") == USER_TEXT, f"{command} replaced {path}"
    if parser.get_default(OUTPUTS):
        assert "no mlmm command wrote" in err and "--force" in err, err
        _, err = _run(command, [*argv, "--force"], capsys)
        assert "no mlmm command wrote" not in err, err


WRITING_COUNT = len(WRITING)


def test_force_reaches_the_layer_from_main(monkeypatch, capsys):
    """--force of any subcommand is in effect while it runs, and off afterwards."""
    seen = []
    monkeypatch.setattr("mlmm.cli.check_options", lambda args: seen.append(io.force_in_effect()))
    for command in ("eval-retrieval", "ted-tables", "features", "prepare-coco"):
        parser = SUBCOMMANDS[command]
        argv = [command, "--force"]
        for action in parser._actions:
            if action.required and action.option_strings:
                value = next(iter(action.choices)) if action.choices else "1"
                argv += [action.option_strings[0], str(value)]
        with contextlib.suppress(SystemExit):  # a required group of options not given
            main(argv)
        assert io.force_in_effect() is False
    assert seen and all(seen)


def _rows(path, array):
    with io.npy_rows(path, array.shape, array.dtype) as append:
        append(array)


WRITERS = {
    "write_text": lambda p: io.write_text(p, "new\n"),
    "write_bytes": lambda p: io.write_bytes(p, b"new\n"),
    "write_json": lambda p: io.write_json(p, {"a": 1}),
    "write_npy": lambda p: io.write_npy(p, np.zeros(2)),
    "write_npz": lambda p: io.write_npz(p, {"a": np.zeros(2)}),
    "npy_rows": lambda p: _rows(p, np.zeros((2, 3))),
    "copy_file": lambda p: io.copy_file(__file__, p),
    "discard": io.discard,
    "mark_output_dir": None,
}
del WRITERS["mark_output_dir"]


@pytest.mark.parametrize("writer", sorted(WRITERS))
def test_every_writer_refuses_a_users_file_and_accepts_force(writer, tmp_path):
    path = tmp_path / "thesis.txt"
    path.write_text(USER_TEXT, encoding="utf-8")
    with pytest.raises(InputError, match="no mlmm command wrote.*--force"):
        WRITERS[writer](path)
    assert path.read_text(encoding="utf-8") == USER_TEXT
    io.set_force(True)
    WRITERS[writer](path)
    assert not path.exists() or path.read_text(encoding="utf-8", errors="replace") != USER_TEXT


@pytest.mark.parametrize("writer", sorted(set(WRITERS) - {"discard"}))
def test_every_writer_replaces_its_own_output_but_not_an_edited_one(writer, tmp_path):
    path = tmp_path / "out.bin"
    WRITERS[writer](path)
    WRITERS[writer](path)  # a rerun replaces what mlmm wrote
    path.write_bytes(b"edited by hand")
    with pytest.raises(InputError, match="an edited file.*--force"):
        WRITERS[writer](path)


def test_save_figure_refuses_a_users_file_beside_it(tmp_path):
    """The PDF beside a figure's PNG is an output too: a user's one is kept."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig = plt.figure()
    (tmp_path / "fig.pdf").write_text(USER_TEXT, encoding="utf-8")
    with pytest.raises(InputError, match="fig.pdf.*--force"):
        io.save_figure(fig, tmp_path / "fig")
    assert (tmp_path / "fig.pdf").read_text(encoding="utf-8") == USER_TEXT
    plt.close(fig)


def _build(out, name="a.txt"):
    tmp = io.temp_dir_beside(out)
    try:
        io.write_text(tmp / name, "built\n")
        io.replace_dir(tmp, out)
    finally:
        io.discard_build(tmp)


def test_directory_builder_refuses_a_directory_with_a_users_file(tmp_path):
    out = tmp_path / "mycoco"
    out.mkdir()
    (out / "notes.txt").write_text(USER_TEXT, encoding="utf-8")
    with pytest.raises(InputError, match="notes.txt; pass --force"):
        _build(out)
    assert (out / "notes.txt").read_text(encoding="utf-8") == USER_TEXT
    assert [p.name for p in tmp_path.iterdir()] == ["mycoco"]  # no leftover
    io.set_force(True)
    _build(out)
    assert not (out / "notes.txt").exists()


def test_directory_builder_replaces_its_own_directory_and_files_inside_it(tmp_path):
    out = tmp_path / "built"
    _build(out)
    _build(out)  # a rerun replaces the unedited directory of ours
    io.write_text(out / "a.txt", "rewritten by a later command\n")  # a file inside it is ours
    (out / "added.txt").write_text(USER_TEXT, encoding="utf-8")
    with pytest.raises(InputError, match="added.txt"):
        _build(out)


def test_a_failed_write_leaves_nothing_that_blocks_its_rerun(tmp_path):
    path = tmp_path / "out.txt"
    with pytest.raises(RuntimeError), io.atomic_path(path) as tmp:
        tmp.write_text("half", encoding="utf-8")
        raise RuntimeError("killed")
    assert list(tmp_path.iterdir()) == []
    out = tmp_path / "dir"
    with pytest.raises(RuntimeError):
        tmp = io.temp_dir_beside(out)
        try:
            io.write_text(tmp / "a", "x")
            raise RuntimeError("killed")
        finally:
            io.discard_build(tmp)
    _build(out)  # the rerun


def test_snakemake_style_rerun_after_outputs_deleted(tmp_path):
    """Snakemake deletes outputs before a job: the stale record left beside is no obstacle."""
    path = tmp_path / "table.csv"
    io.write_text(path, "a\n")
    path.unlink()
    io.write_text(path, "b\n")
    io.write_text(path, "c\n")
    assert path.read_text(encoding="utf-8") == "c\n"
