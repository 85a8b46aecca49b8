"""The one error boundary: every parse of a user's file goes through mlmm.io's readers, which
raise the one-line InputError naming the file and line or key; no input makes `mlmm` print a
traceback; Ctrl-C is one line and exit status 130."""

from __future__ import annotations

import numpy as np
import pytest
from helpers.cli import SUBCOMMANDS, fill_required
from helpers.one_line import message_lines
from helpers.source_lint import direct_parses

from mlmm import io
from mlmm.cli import main
from mlmm.errors import InputError


def test_no_direct_parses_under_src():
    """json/yaml/csv/np.load/torch.load ... only inside mlmm.io's readers (count: 0)."""
    assert direct_parses() == []


MALFORMED = {
    "truncated JSON": (b'{"root": "a",\n  "f1": [1,\n', "line 3"),
    "invalid UTF-8": (b"ok\n\xff\xfe broken\n", "line 2"),
    "empty": (b"", None),
}

READERS = {
    "read_json": lambda p: io.read_json(p),
    "read_json_object": lambda p: io.read_json_object(p, ("root",)),
    "read_yaml": lambda p: io.read_yaml(p),
    "read_csv": lambda p: io.read_csv(p, columns=("system",)),
    "read_npy": lambda p: io.read_npy(p),
    "read_npz": lambda p: io.read_npz(p),
    "read_torch": lambda p: io.read_torch(p, weights_only=True),
    "read_lines": lambda p: io.read_lines(p),
}


@pytest.mark.parametrize("kind", sorted(MALFORMED))
@pytest.mark.parametrize("reader", sorted(READERS))
def test_every_reader_names_the_file_of_a_malformed_input(reader, kind, tmp_path):
    data, _ = MALFORMED[kind]
    path = tmp_path / f"input-{reader}"
    path.write_bytes(data)
    try:
        READERS[reader](path)
    except InputError as exc:
        assert str(path) in str(exc) and "\n" not in str(exc)
    else:  # the reader took it: only text readers may take text
        assert reader in {"read_yaml", "read_lines"} or kind == "empty" and reader == "read_json"


@pytest.mark.parametrize(
    ("reader", "text", "place"),
    [
        ("read_json", '{"a": 1,\n "b": }\n', "line 2"),
        ("read_yaml", "a: 1\nb: [1, 2\nc: 3\n", "line"),
        ("read_csv", 'a,b\n1,2\n3,"4\n', None),
        ("read_json_object", '{"other": 1}', "key 'root'"),
    ],
)
def test_readers_name_the_line_or_key(reader, text, place, tmp_path):
    path = tmp_path / "input"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(InputError) as caught:
        READERS[reader](path)
    assert str(path) in str(caught.value)
    if place:
        assert place in str(caught.value)


def test_npy_reader_refuses_a_pickled_array(tmp_path):
    path = tmp_path / "a.npy"
    np.save(path, np.array([{"a": 1}], dtype=object), allow_pickle=True)
    with pytest.raises(InputError, match="pickled"):
        io.read_npy(path)


@pytest.mark.parametrize("kind", sorted(MALFORMED))
@pytest.mark.parametrize("command", sorted(SUBCOMMANDS))
def test_every_subcommand_turns_a_malformed_input_into_one_line(command, kind, tmp_path, capsys):
    """Every required input of every subcommand a malformed file (truncated JSON, invalid
    UTF-8, empty): at most one line on stderr, never a traceback (under pytest an unexpected
    exception propagates, so a parse outside the readers fails here)."""
    parser = SUBCOMMANDS[command]
    argv = fill_required(parser, tmp_path)
    for arg in argv:
        if arg.startswith(str(tmp_path)):
            (tmp_path / arg.rsplit("/", 1)[-1]).write_bytes(MALFORMED[kind][0])
    status = main([command, *argv])
    err = "\n".join(message_lines(capsys.readouterr().err))
    assert "Traceback" not in err
    if status != 0:
        assert len(err.splitlines()) == 1, err
        assert err.startswith(f"mlmm {command}: error: ")


def test_ctrl_c_is_one_line_and_status_130(monkeypatch, capsys):
    def interrupted(args):
        raise KeyboardInterrupt

    monkeypatch.setattr("mlmm.cli.check_options", interrupted)
    assert main(["validate-multi30k", "anywhere"]) == 130
    assert message_lines(capsys.readouterr().err) == [
        "mlmm validate-multi30k: interrupted (Ctrl-C); no output replaced"
    ]


def test_an_unexpected_error_is_one_line_for_a_user_and_a_traceback_under_tests(
    monkeypatch, capsys
):
    """A bug (not a bad input) is one line with exit status 1 for a user; under pytest or with
    MLMM_TRACEBACK=1 it keeps its traceback, so that tests do not pass over it."""

    def broken(args):
        raise ZeroDivisionError("division by zero")

    monkeypatch.setattr("mlmm.cli.check_options", broken)
    with pytest.raises(ZeroDivisionError):
        main(["validate-multi30k", "anywhere"])
    monkeypatch.delenv("PYTEST_CURRENT_TEST")
    monkeypatch.delenv("MLMM_TRACEBACK", raising=False)
    assert main(["validate-multi30k", "anywhere"]) == 1
    assert message_lines(capsys.readouterr().err) == [
        "mlmm validate-multi30k: error: internal error ZeroDivisionError: division by zero "
        "(MLMM_TRACEBACK=1 shows where)"
    ]
    monkeypatch.setenv("MLMM_TRACEBACK", "1")
    with pytest.raises(ZeroDivisionError):
        main(["validate-multi30k", "anywhere"])
