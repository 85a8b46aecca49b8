"""Variables and input functions of nmt.smk (kept apart: Snakemake's linter wants rules and
functions in different files)."""

import sys

from snakemake.exceptions import WorkflowError

from mlmm.nmt import nbest_record, train_record
from mlmm.nmt.selection import select as select_nmt

NMT_DIR = RESULTS / "nmt"
NMT_SPLITS = ["val", "test_2016_flickr"]
NMT_TOK = MULTI30K_ROOT / "data/task1/tok"
NMT_TABLE = RESULTS / "tables/calixto2017_table3"

# Rows whose retrieval variants are not in retrieval.run are left out with a warning.
try:
    _features, _systems, _warnings = select_nmt(config["nmt"], RETRIEVAL_RECORDS)
except ValueError as _error:
    raise WorkflowError(str(_error)) from None
for _warning in _warnings:
    print(f"warning: {_warning}", file=sys.stderr)
NMT = dict(config["nmt"], embedding_features=_features, systems=_systems)
# every system's scores and sentences.npz (written by mt_score), read by Table 3 and the claims
NMT_SCORE_FILES = expand(
    NMT_DIR / "systems/{system}/metrics.json", system=list(NMT["systems"])
)
NMT_SENTENCE_FILES = expand(
    NMT_DIR / "systems/{system}/sentences.npz", system=list(NMT["systems"])
)
# A METEOR 1.5 distribution named by path (the paper config: with its paraphrase table) must be
# there at planning, like the other local data sets; the pycocoevalcap jar and null are not
# local data.
if NMT["meteor_jar"] not in (None, "pycocoevalcap"):
    require_local_data(
        "nmt.meteor_jar",
        Path(NMT["meteor_jar"]).parent,
        "the unpacked METEOR 1.5 distribution",
        local_data.meteor_expected(
            NMT["meteor_jar"], NMT["tgt"], NMT["meteor_paraphrase"] == "required"
        ),
    )


def nmt_text(split, language):
    return NMT_TOK / f"{split}.lc.norm.tok.{language}"


def retrieval_model(feature):
    spec = NMT["embedding_features"][feature]
    return RESULTS / "retrieval" / spec["variant"] / f"seed{spec['seed']}" / "model.pt"


def nmt_feature_inputs(wildcards):
    """Each feature's retrieval model and, for image features, the image features of the
    backbone that model was trained on."""
    inputs = {}
    for name, spec in NMT["embedding_features"].items():
        inputs[name] = retrieval_model(name)
        if spec["kind"] == "image":
            backbone = RETRIEVAL_RECORDS[spec["variant"]]["backbone"]
            inputs[f"{name}_images"] = feature_file(backbone, wildcards.split)
    return inputs


def nmt_feature_options(wildcards, input):
    options = []
    for name, spec in NMT["embedding_features"].items():
        options.append(
            f"--feature {quote('{}={}:{}'.format(name, spec['kind'], input[name]))}"
        )
        if spec["kind"] == "image":
            options.append(
                f"--images {quote('{}={}'.format(name, input[name + '_images']))}"
            )
    return " ".join(options)


def nmt_image_feature_runs(wildcards):
    """The metrics.json of the retrieval runs whose models give the image features of the
    reranking: Table 3 names the backbone they recorded."""
    runs = {
        retrieval_model(name).parent / "metrics.json"
        for name, spec in NMT["embedding_features"].items()
        if spec["kind"] == "image"
    }
    return sorted(runs)


def nmt_weights(wildcards):
    if NMT["systems"][wildcards.system]["features"]:
        return {"weights": NMT_DIR / f"systems/{wildcards.system}/weights.txt"}
    return {}
