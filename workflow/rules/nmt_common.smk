"""Variables and input functions of nmt.smk (kept apart: Snakemake's linter wants rules and
functions in different files)."""

from snakemake.exceptions import WorkflowError

NMT = config["nmt"]
NMT_DIR = RESULTS / "nmt"
NMT_SPLITS = ["val", "test_2016_flickr"]
NMT_TOK = MULTI30K_ROOT / "data/task1/tok"
NMT_BASE_FEATURES = ["NMT", "WordPenalty"]
NMT_TABLE = RESULTS / "tables/calixto2017_table3"

for _name, _spec in NMT["embedding_features"].items():
    if _spec["variant"] not in RETRIEVAL_RECORDS:
        raise WorkflowError(
            f"config nmt.embedding_features.{_name}: variant {_spec['variant']!r} is not "
            "trained; add it to retrieval.run"
        )
for _key, _record in NMT["systems"].items():
    _unknown = (
        set(_record["features"])
        - set(NMT_BASE_FEATURES)
        - set(NMT["embedding_features"])
    )
    if _unknown:
        raise WorkflowError(
            f"config nmt.systems.{_key}.features: {sorted(_unknown)} are neither "
            f"{NMT_BASE_FEATURES} nor names in nmt.embedding_features"
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
        options.append(f"--feature {name}={spec['kind']}:{input[name]}")
        if spec["kind"] == "image":
            options.append(f"--images {name}={input[f'{name}_images']}")
    return " ".join(options)


def nmt_weights(wildcards):
    if NMT["systems"][wildcards.system]["features"]:
        return {"weights": NMT_DIR / f"systems/{wildcards.system}/weights.txt"}
    return {}
