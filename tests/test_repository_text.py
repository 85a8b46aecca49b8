"""The repository speaks to its users: no tracker numbers, no commit ids of this repository, no
machine paths and no run diaries in what a user or maintainer reads (README, docs, comments,
config, profiles, tests). History belongs in CHANGELOG.md (per release) and in git."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TEXT_SUFFIXES = {
    ".md",
    ".py",
    ".smk",
    ".yaml",
    ".yml",
    ".rst",
    ".toml",
    ".cfg",
    ".sh",
    ".c",
    ".txt",
}
TEXT_NAMES = {"Snakefile", "Makefile", "Dockerfile", "run"}

# What a reader of the repository cannot follow: the tracker's numbers, this machine's paths,
# and the diary of one session's work.
FORBIDDEN = {
    "an issue number": re.compile(r"\bissues?\s*#?\s*\d+", re.IGNORECASE),
    "a machine path": re.compile(r"(?<![\w.])/(?:work|root|home/\w+|tmp/bash_jobs)/"),
    "a run diary": re.compile(r"\bthis stop\b|\bthe previous stop\b|\bstop \d+\b", re.IGNORECASE),
    # what a value or page used to say: the CHANGELOG's and git's to tell, not the page's
    "a change history": re.compile(r"\((?:was|previously) |[;] was |\bearlier versions of this\b"),
}
HISTORY_FILES = {"CHANGELOG.md"}  # where history belongs
HEX = re.compile(r"(?<![0-9A-Za-z_/.-])[0-9a-f]{7,40}(?![0-9A-Za-z_])")


def _git(*args: str) -> list[str]:
    done = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        pytest.skip(f"git {' '.join(args)} failed here: {done.stderr.strip()}")
    return done.stdout.split()


def _tracked_text() -> list[Path]:
    return [
        ROOT / name
        for name in _git("ls-files")
        if Path(name).suffix in TEXT_SUFFIXES or Path(name).name in TEXT_NAMES
    ]


def _findings(path: Path, commits: set[str], root: Path = ROOT) -> list[str]:
    found = []
    name = path.relative_to(root)
    text = path.read_text(encoding="utf-8", errors="replace")
    for number, line in enumerate(text.splitlines(), 1):
        for what, pattern in FORBIDDEN.items():
            if what == "a change history" and name.name in HISTORY_FILES:
                continue
            if match := pattern.search(line):
                found.append(f"{name}:{number}: {what}: {match.group(0)!r}")
        for token in HEX.findall(line):
            if any(commit.startswith(token) for commit in commits):
                found.append(f"{name}:{number}: a commit of this repository: {token}")
    return found


def test_no_issue_numbers_commit_ids_machine_paths_or_diaries():
    commits = set(_git("rev-list", "--all"))
    if len(commits) < 2:
        pytest.skip("a shallow clone: this repository's commits are not known here")
    findings = [
        line for path in _tracked_text() if path.is_file() for line in _findings(path, commits)
    ]
    assert not findings, "\n".join(findings)


def test_the_check_finds_each_kind(tmp_path):
    commit = _git("rev-parse", "HEAD")[0]
    sample = tmp_path / "sample.md"
    sample.write_text(
        # the forbidden phrases assembled here, so that this file itself stays clean
        f"see {'issue'} 12\nbuilt at {commit[:7]}\nin /{'work'}/main/results\n"
        f"measured this {'stop'}\n"
        f"`epochs: 200` ({'was'} 15)\n"
        "clean: fastText at 58e186f, sha256 of the file\n",
        encoding="utf-8",
    )
    kinds = [line.split(": ")[1] for line in _findings(sample, {commit}, tmp_path)]
    assert kinds == [
        "an issue number",
        "a commit of this repository",
        "a machine path",
        "a run diary",
        "a change history",
    ]


def _documented_snakemake_commands() -> list[tuple[str, str]]:
    """(file, command) for every `snakemake ...` line of the README and docs, continuation
    lines joined."""
    commands = []
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        text = path.read_text(encoding="utf-8").replace("\\\n", " ")
        for line in text.splitlines():
            line = line.strip()
            if line.startswith("snakemake "):
                commands.append((path.name, line))
    return commands


def test_documented_snakemake_commands_give_config_files_to_configfile_only():
    """`--configfile` takes every word after it: a target written after it is read as a config
    file, and Snakemake stops with a traceback. Every documented command, parsed with
    Snakemake's own parser, gives `--configfile` only YAML or JSON files."""
    import shlex

    from snakemake.cli import get_argument_parser

    commands = _documented_snakemake_commands()
    assert len(commands) > 10
    parser = get_argument_parser()
    for name, command in commands:
        words = [w for w in shlex.split(command, comments=True)[1:] if not w.startswith("<")]
        for i, word in enumerate(words[:-1]):  # `--apptainer-args "--nv"`: a dashed value
            if word.endswith("-args"):
                words[i : i + 2] = [f"{word}={words[i + 1]}"]
        args, _ = parser.parse_known_args(words)
        for configfile in args.configfile or []:
            assert Path(configfile).suffix in {".yaml", ".yml", ".json"}, (name, command)
