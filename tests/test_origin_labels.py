"""A table's origin label (demo world, generated data in the real layouts, real data) comes from
the data sets its results were made from: every result records the sources of those data sets
only (``mlmm.provenance.provenance(data=...)``), never every source the workflow configured.

The case that went wrong: Rajendran Tables 1 and 3 built only from runs on a real TED corpus
(``ted: {source: path}``, Multi30K and COCO left at their demo default) were headed
"[demo world]", because each result recorded every data set's source."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from mlmm.origin import ENV_CONFIGS, ENV_DATA, RECORDED, Origin
from mlmm.outcomes import decision_metrics, write_result
from mlmm.provenance import provenance
from mlmm.results.ted_tables import table1, table3

PAPER_TABLES = Path(__file__).resolve().parents[1] / "resources" / "paper_tables"  # shipped
TOPICS = ["art", "business", "science", "technology"]


def _ted_result(path: Path, source: str | None, decisions: dict, data: tuple[str, ...]) -> Path:
    """A ted-classify (source given) or ted-nb result as ted.experiment writes it: its
    decisions on the test talks beside it, its provenance naming the data sets in ``data``."""
    sets = {t: {t: {"predicted": p, "gold": g}} for t, (p, g) in decisions.items()}
    record = {"provenance": provenance({"source": source}, 1, data=data), "topics": TOPICS,
              "f1": decision_metrics(sets)}  # fmt: skip
    record |= {"source": source} if source else {}
    path.parent.mkdir(parents=True, exist_ok=True)
    write_result(path, record, "documents", {t: {t: d} for t, d in decisions.items()})
    return path


def _ted_results(root: Path, data: tuple[str, ...] = ("ted",)) -> tuple[list[Path], Path]:
    """Two Bridge CorrNet results (de, fr; each tested on both) and the NB one."""
    rng = np.random.default_rng(3)
    gold = {x: rng.random((40, len(TOPICS))) < 0.3 for x in ("de", "fr")}

    def noisy(x: str, keep: float):
        return np.where(rng.random(gold[x].shape) < keep, gold[x], ~gold[x]), gold[x]

    cldc = [_ted_result(root / f"cldc/{source}.json", source,
                        {x: noisy(x, 0.85) for x in ("de", "fr")}, data)
            for source in ("de", "fr")]  # fmt: skip
    nb = _ted_result(root / "nb.json", None, {x: noisy(x, 0.75) for x in ("de", "fr")}, data)
    return cldc, nb


def _tables(root: Path) -> dict[str, str]:
    cldc, nb = _ted_results(root)
    out = root / "tables"
    table1(cldc, str(PAPER_TABLES), out)
    table3(cldc, nb, str(PAPER_TABLES), out)
    return {stem: (out / f"{stem}.md").read_text(encoding="utf-8")
            for stem in ("rajendran2016_table1", "rajendran2016_table3")}  # fmt: skip


def _environment(monkeypatch, data: str) -> None:
    """What the Snakefile exports to every job of a workflow with these sources."""
    monkeypatch.setenv(ENV_DATA, data)
    monkeypatch.setenv(ENV_CONFIGS, "config.yaml")


def test_ted_tables_from_a_real_ted_corpus_say_real_data(tmp_path, monkeypatch):
    """Tables 1 and 3 from TED results on a real corpus, in a workflow whose Multi30K and COCO
    are the demo world's: no '[demo world]', real data, and only the TED source is named."""
    _environment(monkeypatch, "multi30k=demo,coco=demo,ted=path")
    for stem, text in _tables(tmp_path).items():
        title = text.splitlines()[0]
        assert "[demo world]" not in title and "Rajendran et al. 2016" in title, stem
        assert "DEMO WORLD" not in text and "Produced from real data (sources ted: path)" in text
        assert "multi30k" not in text and "coco" not in text, stem
        csv = pd.read_csv(tmp_path / "tables" / f"{stem}.csv", keep_default_na=False)
        assert set(csv["data"]) == {"real"}, stem


def test_ted_tables_from_the_demo_ted_corpus_say_demo_world(tmp_path, monkeypatch):
    """The mirror case: demo TED talks in a workflow on real Multi30K and COCO are demo."""
    _environment(monkeypatch, "multi30k=url,coco=files,ted=demo")
    for stem, text in _tables(tmp_path).items():
        assert "[demo world]" in text.splitlines()[0], stem
        assert "Produced from DEMO WORLD" in text and "data sources ted: demo" in text, stem
        assert "real data" not in text and "multi30k" not in text, stem


def test_a_table_reads_its_runs_not_the_environment_of_its_job(tmp_path, monkeypatch):
    """The results recorded real TED data; the table job runs in a demo environment: the
    label is the results', whatever the job's environment says."""
    _environment(monkeypatch, "multi30k=demo,coco=demo,ted=path")
    cldc, nb = _ted_results(tmp_path)
    _environment(monkeypatch, "multi30k=demo,coco=demo,ted=demo")
    table3(cldc, nb, str(PAPER_TABLES), tmp_path / "tables")
    text = (tmp_path / "tables/rajendran2016_table3.md").read_text(encoding="utf-8")
    assert "[demo world]" not in text and "real data (sources ted: path)" in text


def test_claims_on_ted_results_carry_the_results_label(tmp_path, monkeypatch):
    """The claims table reads the runs' provenance too: the runs the TED readers hand to the
    claims (``ted_runs``) keep their results' provenance, so Rajendran's claims say what the
    TED tables say, not "unrecorded"."""
    from mlmm.results.claims import write_claims
    from mlmm.results.ted_tables import ted_runs

    _environment(monkeypatch, "multi30k=demo,coco=demo,ted=path")
    cldc, nb = _ted_results(tmp_path)
    runs = ted_runs(cldc, nb)
    assert runs and all(run.metrics["provenance"]["origin"]["data"] == {"ted": "path"}
                        for run in runs)  # fmt: skip
    registry = Path(__file__).resolve().parents[1] / "resources/claims/rajendran2016.yaml"
    write_claims(runs, registry, PAPER_TABLES, tmp_path / "tables", tmp_path / "figures")
    text = (tmp_path / "tables/rajendran2016_claims.md").read_text(encoding="utf-8")
    assert "Produced from real data (sources ted: path)" in text, text[-800:]


def test_results_without_a_recorded_origin_are_unrecorded_not_the_jobs(tmp_path, monkeypatch):
    """Results that name no data set (run outside the workflow) give a table of unrecorded
    origin, never the label of the environment the table job runs in."""
    monkeypatch.delenv(ENV_DATA, raising=False)
    cldc, nb = _ted_results(tmp_path, data=())
    _environment(monkeypatch, "multi30k=demo,coco=demo,ted=demo")
    table3(cldc, nb, str(PAPER_TABLES), tmp_path / "tables")
    text = (tmp_path / "tables/rajendran2016_table3.md").read_text(encoding="utf-8")
    assert "data of unrecorded origin" in text
    assert "[demo world]" not in text and "DEMO WORLD" not in text
    assert not Origin.of_runs([{"provenance": {"config": {}}}]).known
    assert not Origin.of_table(pd.DataFrame({"x": [1]})).known


def test_provenance_names_the_data_sets_a_result_was_made_from(monkeypatch):
    """`data` is required (no caller can forget it) and keeps only the named data sets'
    sources; a string or an unknown name is a programming error."""
    _environment(monkeypatch, "multi30k=url,coco=demo,ted=path,features=published")
    with pytest.raises(TypeError):
        provenance({}, 1)  # type: ignore[call-arg]
    assert provenance({}, 1, data=("ted",))["origin"] == {
        "data": {"ted": "path"}, "configs": ["config.yaml"]}  # fmt: skip
    assert provenance({}, 1, data=["multi30k", "features"])["origin"]["data"] == {
        "multi30k": "url", "features": "published"}  # fmt: skip
    assert provenance({}, 1, data=())["origin"]["data"] == {}
    assert Origin.current(RECORDED).data == {
        "multi30k": "url", "coco": "demo", "ted": "path", "features": "published"}  # fmt: skip
    assert Origin.current(["coco", "coco"]).data == {"coco": "demo"}
    with pytest.raises(TypeError):
        Origin.current("ted")
    with pytest.raises(ValueError, match="found flickr"):
        Origin.current(["ted", "flickr"])


def test_a_retrieval_run_names_its_data_set_and_published_features(tmp_path, monkeypatch):
    """A retrieval run records its record's data set, and the published features only when
    the arrays it read are a release's (their sidecar names the published file)."""
    from mlmm.retrieval.train import Paths, Run

    _environment(monkeypatch, "multi30k=url,coco=demo,ted=demo,features=published")
    features = tmp_path / "features"
    (features / "resnet50").mkdir(parents=True)
    run = Run.__new__(Run)  # only what data_sets reads
    run.record = {"dataset": "multi30k", "backbone": "resnet50"}
    run.paths = Paths(tmp_path / "data", features)
    assert run.data_sets() == ("multi30k",)
    sidecar = features / "resnet50" / "train.json"
    sidecar.write_text('{"published_file": "train-resnet50-avgpool.npy"}', encoding="utf-8")
    assert run.data_sets() == ("multi30k", "features")
    assert Origin.current(run.data_sets()).data == {"multi30k": "url", "features": "published"}
    sidecar.write_text('{"backbone": "resnet50"}', encoding="utf-8")  # extracted here
    assert run.data_sets() == ("multi30k",)
    run.record = {"dataset": "coco", "backbone": "resnet50"}
    assert Origin.current(run.data_sets()).data == {"coco": "demo"}


def test_a_run_handed_to_tables_and_claims_carries_its_provenance():
    """Every reader of results builds its runs through ``Run``, which refuses metrics without
    the result's provenance: no reader can drop the origin its tables and claims are
    labelled with."""
    from mlmm.results.intervals import Run

    with pytest.raises(ValueError, match="no provenance"):
        Run("v", 1, {"f1": 0.5}, [], [], None)
    assert Run("v", 1, {"provenance": {}}, [], [], None).metrics == {"provenance": {}}


@pytest.mark.parametrize(
    "reader, record",
    [
        ("retrieval", {"variant": "v", "seed": 1, "test": {}}),
        ("nmt", {"system": "s", "variant_note": "n", "scores": {}}),
        ("ted", {"source": "en", "f1": {"de": 0.5}}),
        ("pivot", {"model": "direct", "language": None, "lambda": 1.0, "criteria": {},
                   "test": {}}),
    ],
)  # fmt: skip
def test_each_reader_of_stage_results_refuses_a_result_without_provenance(
    tmp_path, reader, record
):
    """The results a table or claim reads (retrieval, MT, TED, pivot) are refused with one line
    naming the file and the key when they carry no provenance: a result written by hand or by
    an older mlmm is not labelled "unrecorded origin" in silence."""
    import json

    from mlmm.errors import InputError
    from mlmm.results.nmt_table import nmt_runs
    from mlmm.results.pivot_table import read_runs
    from mlmm.results.retrieval_tables import load_runs
    from mlmm.results.ted_tables import ted_runs

    read = {
        "retrieval": lambda paths: load_runs(paths, {}),
        "nmt": nmt_runs,
        "ted": ted_runs,
        "pivot": read_runs,
    }[reader]
    from mlmm.fingerprint import record_directory

    path = tmp_path / "metrics.json"
    path.write_text(json.dumps(record))
    if reader == "pivot":  # a pivot run's directory record, as pivot-train writes it
        record_directory(tmp_path, "metrics.json")
    with pytest.raises(InputError, match=f"{path}, key 'provenance'"):
        read([path])


def test_a_table_says_the_code_its_runs_were_made_by(tmp_path, monkeypatch):
    """Every result records the code that ran (mlmm's version and a digest of its source); a
    table names it in its notes and its CSV, and names both when its runs come from two
    versions of the code (an edit between runs), so a pasted table says what produced it."""
    from mlmm.provenance import code_version

    _environment(monkeypatch, "multi30k=demo,coco=demo,ted=path")
    text = _tables(tmp_path)["rajendran2016_table3"]
    assert f"code mlmm {code_version()}" in text
    csv = pd.read_csv(tmp_path / "tables/rajendran2016_table3.csv", keep_default_na=False)
    assert set(csv["code"]) == {code_version()} and Origin.of_table(csv).code == [code_version()]
    runs = [{"provenance": {"code": version, "origin": {"data": {"ted": "path"}}}}
            for version in ("0.4.0+aaaa", "0.4.0+bbbb", "0.4.0+aaaa")]  # fmt: skip
    assert "code mlmm 0.4.0+aaaa + 0.4.0+bbbb" in Origin.of_runs(runs).note()
