"""Writes docs/workflow.md's per-paper sizing section, between its SIZING markers: for each
paper, the jobs of a dry run of config/paper.yaml with that paper's tables and figures as
targets (stand-in files for its local data sets, so nothing is read), per rule: jobs, GPU jobs,
the memory and runtime each job requests (the rules' own resources), and the runtime requested
in all; then, when benchmarks/gpu_hours.py has written results/benchmarks/gpu_hours.csv, the
measured GPU-hours of the stages that belong to one paper only (an estimate from measured step
rates). `--check` exits 1 when the section in docs/workflow.md differs (tests run it).
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

import pandas as pd
import yaml

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs/workflow.md"
START, END = "<!-- SIZING: start (benchmarks/sizing_page.py) -->", "<!-- SIZING: end -->"
PAPERS = {
    "kadar2018": "Kádár et al. 2018",
    "calixto2017": "Calixto & Liu 2017",
    "ame2019": "Mohammadshahi et al. 2019 (AME)",
    "rajendran2016": "Rajendran et al. 2016",
}
# gpu_hours.csv stages that belong to one paper only: their backbone or model is that paper's
STAGE_PAPER = {
    "features resnet50": "kadar2018", "features vgg19": "calixto2017",
    "features resnet152": "ame2019", "features alexnet_fc6": "rajendran2016",
    "nmt training": "calixto2017", "ted bridge corrnet": "rajendran2016",
    "pivot bridge corrnet": "rajendran2016",
}  # fmt: skip


def _stand_ins(workdir: Path) -> None:
    """An empty file at each file the planning expects in the paper config's local data sets."""
    from mlmm import local_data

    ted = yaml.safe_load((ROOT / "config.yaml").read_text(encoding="utf-8"))["ted"]
    jar = "meteor-1.5/meteor-1.5.jar"
    sets = {
        "mic-test": local_data.MIC, "flickr30k-images": local_data.MULTI30K_IMAGES,
        "semeval-sts": local_data.STS,
        "ted-cldc": local_data.ted_expected(ted["languages"], ted["corpus_codes"]),
        str(Path(jar).parent): local_data.meteor_expected(jar, "de", True),
    }  # fmt: skip
    for directory, patterns in sets.items():
        for pattern in patterns:
            path = workdir / directory / pattern.removeprefix("**/").replace("*", "x")
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(b"")


def plan(paper: str) -> dict[str, dict]:
    """rule -> jobs, GPU jobs, the largest mem_mb and runtime (min) a job requests, and the
    runtime its jobs request in all."""
    from mlmm.catalogue import ALL_FIGURES, ALL_TABLES

    targets = [f"results/tables/{s}.md" for s in ALL_TABLES if s.startswith(paper)]
    targets += [f"results/figures/{s}.png" for s in ALL_FIGURES if s.startswith(paper)]
    with tempfile.TemporaryDirectory() as tmp:
        _stand_ins(Path(tmp))
        proc = subprocess.run(
            [sys.executable, "-m", "snakemake", "-s", str(ROOT / "Snakefile"), "-d", tmp, "-n",
             "--forceall", "--configfile", str(ROOT / "config/paper.yaml"), "--", *targets],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, check=False,
        )  # fmt: skip
    if proc.returncode != 0:
        raise SystemExit(f"dry run of {paper} failed:\n{proc.stdout[-2000:]}")
    rules: dict[str, dict] = defaultdict(lambda: {"jobs": 0, "gpu": 0, "mem_mb": 0,
                                                 "runtime": 0, "total_runtime": 0})  # fmt: skip
    rule = None
    for line in proc.stdout.splitlines():
        match = re.match(r"^(?:local)?rule (\w+):$", line)
        if match:
            rule = match.group(1)
            rules[rule]["jobs"] += 1
        elif rule and line.strip().startswith("resources:"):
            values = dict(re.findall(r"(\w+)=([^,]+)", line))
            entry = rules[rule]
            entry["gpu"] += int(values.get("gpu", 0)) > 0
            entry["mem_mb"] = max(entry["mem_mb"], int(values.get("mem_mb", 0)))
            entry["runtime"] = max(entry["runtime"], int(values.get("runtime", 0)))
            entry["total_runtime"] += int(values.get("runtime", 0))
    rules.pop("all", None)
    return dict(rules)


def gpu_hours(csv: Path) -> dict[str, list[tuple[str, float, str]]]:
    """paper -> (stage, hours, device) of the stages that are that paper's alone."""
    if not csv.is_file():
        return {}
    out: dict[str, list] = defaultdict(list)
    for row in pd.read_csv(csv).itertuples():
        paper = STAGE_PAPER.get(str(row.stage))
        if paper:
            out[paper].append((str(row.stage), float(row.hours), str(row.device)))
    return out


def section(csv: Path) -> str:
    hours = gpu_hours(csv)
    lines = [START, "", "### Sizing per paper (generated: `python benchmarks/sizing_page.py`)", "",
             "Per paper, the jobs of `snakemake -n --configfile config/paper.yaml` with that "
             "paper's tables and figures as targets, and what each rule's jobs request (their "
             "`resources:`; profiles/slurm submits them): the largest memory and runtime a job "
             "asks for, and the runtime the rule's jobs ask for in all (an upper bound, not a "
             "measurement). GPU jobs are those of the GPU rules.", ""]  # fmt: skip
    for paper, name in PAPERS.items():
        rules = plan(paper)
        jobs = sum(r["jobs"] for r in rules.values())
        gpus = sum(r["gpu"] for r in rules.values())
        lines += [f"#### {name}: {jobs} jobs, {gpus} on a GPU", "",
                  "| rule | jobs | GPU jobs | memory a job requests (MB) | runtime a job "
                  "requests (min) | runtime requested in all (h) |",
                  "|---|---:|---:|---:|---:|---:|"]  # fmt: skip
        for rule, r in sorted(rules.items(), key=lambda item: (-item[1]["total_runtime"], item[0])):
            mem, runtime = (r[key] or "-" for key in ("mem_mb", "runtime"))
            lines.append(f"| {rule} | {r['jobs']} | {r['gpu']} | {mem} | {runtime}"
                         f" | {r['total_runtime'] / 60:.1f} |")  # fmt: skip
        if hours.get(paper):
            measured = "; ".join(f"{stage} {h:.1f} h ({device})" for stage, h, device in
                                 hours[paper])  # fmt: skip
            lines += ["", f"GPU-hours, estimated from measured step rates "
                      f"(results/benchmarks/gpu_hours.csv): {measured}."]  # fmt: skip
        lines.append("")
    if not hours:
        lines += ["GPU-hours per paper: not measured here (run `benchmarks/gpu_hours.py` on the "
                  "GPU, then this script).", ""]  # fmt: skip
    return "\n".join([*lines, END])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--csv", type=Path, default=ROOT / "results/benchmarks/gpu_hours.csv")
    parser.add_argument("--check", action="store_true", help="exit 1 if the section is stale")
    args = parser.parse_args()
    text = DOC.read_text(encoding="utf-8")
    new = section(args.csv)
    if START in text:
        current = text[text.index(START) : text.index(END) + len(END)]
        updated = text.replace(current, new)
    else:
        current, updated = None, text.rstrip("\n") + "\n\n" + new + "\n"
    if args.check:
        if current != new:
            raise SystemExit("docs/workflow.md: the sizing section is stale: run "
                             "python benchmarks/sizing_page.py")  # fmt: skip
        return
    DOC.write_text(updated, encoding="utf-8")
    print(f"wrote the sizing section of {DOC}")


if __name__ == "__main__":
    main()
