"""Which configuration, data and backbone produced a table or figure: said on every one of them.

Demo-world numbers printed beside the papers' look like a reproduction unless the output says
otherwise. So the Snakefile exports the data sources and config files of the run
(`MLMM_DATA`, `MLMM_CONFIGS`), `mlmm.provenance.provenance` records in every result the sources
of the data sets that result was made from (`provenance.origin`: a TED result names only `ted`,
never the Multi30K or COCO sources the workflow also configured), and the table and figure
writers state the origin of the runs they read: demo, generated or real data, the config files,
and the image backbone(s) the runs really used (their recorded config), never the paper's row
labels. Runs that recorded no origin are said to be of unrecorded origin: a table never borrows
the label of the job that writes it.

Generated data in the real layouts (`mlmm demo-paper-layouts`: the paper configuration in
miniature) have real-data sources (url, path, files), so the sources alone would say "real data":
the layouts writer leaves `GENERATED_MARKER` in the working directory, and every source is then
recorded as `<source>:generated`.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field

ENV_DATA = "MLMM_DATA"  # "multi30k=demo,coco=demo,ted=demo": each data set's source
ENV_CONFIGS = "MLMM_CONFIGS"  # "config.yaml,config/paper.yaml": the config files, in order
DATA_SETS = ("multi30k", "coco", "ted")  # config sections whose `source` says demo or real
FEATURES = "features"  # the data set of the published image features (config features.published)
RECORDED = (*DATA_SETS, FEATURES)  # what a result can name as made from (provenance's `data`)

BACKBONE_NAMES = {
    "efficientnet_lite0": "EfficientNet-Lite0",
    "resnet50": "ResNet-50",
    "resnet152": "ResNet-152",
    "vgg19": "VGG-19",
    "vgg16": "VGG-16",
    "alexnet_fc6": "AlexNet fc6",
}
DEMO_LABEL = "DEMO WORLD (synthetic data): not a reproduction of the papers' numbers"
GENERATED_LABEL = (
    "GENERATED DATA in the real layouts (synthetic, mlmm demo-paper-layouts): not a "
    "reproduction of the papers' numbers"
)
# The `features` data source when the Multi30K ResNet-50 features are the release's own arrays
# (config features.published, mlmm.features.published), and how the notes name them
PUBLISHED = "published"
PUBLISHED_NAMES = {"resnet50": "ResNet-50 average pool, published features"}
# Written by mlmm.demo.paper_layouts into the working directory it makes
GENERATED_MARKER = "GENERATED_DATA"


def environment(
    config: dict, basedir: str, configfiles: list[str], command_line_config: bool
) -> dict[str, str]:
    """The variables the Snakefile exports: data sources, and config files (relative to the
    checkout where inside it, '--config' when the command line set values)."""
    names = [
        os.path.relpath(path, basedir)
        if os.path.abspath(path).startswith(os.path.abspath(basedir) + os.sep)
        else str(path)
        for path in configfiles
    ]
    generated = ":generated" if os.path.isfile(GENERATED_MARKER) else ""  # in the working dir
    data = [f"{name}={config[name]['source']}{generated}" for name in DATA_SETS if name in config]
    if (config.get("features") or {}).get("published"):
        data.append(f"{FEATURES}={PUBLISHED}{generated}")
    return {
        ENV_DATA: ",".join(data),
        ENV_CONFIGS: ",".join(names + (["--config"] if command_line_config else [])),
    }


def backbone_name(key: str) -> str:
    return BACKBONE_NAMES.get(key, key)


@dataclass
class Origin:
    """Data sources (data set -> source: demo, mirror, url, path), config files, backbones."""

    data: dict[str, str] = field(default_factory=dict)
    configs: list[str] = field(default_factory=list)
    backbones: list[str] = field(default_factory=list)
    code: list[str] = field(default_factory=list)  # mlmm.provenance.code_version of the runs

    @classmethod
    def current(cls, data: Iterable[str]) -> Origin:
        """The origin the Snakefile exported to this job (empty outside Snakemake), of the data
        sets ``data`` only (names of `RECORDED`): what one result was made from, not every
        source the workflow configured."""
        data = check_data_sets(data)
        sources = {}
        for item in filter(None, os.environ.get(ENV_DATA, "").split(",")):
            name, _, source = item.partition("=")
            if name in data:
                sources[name] = source
        configs = [c for c in os.environ.get(ENV_CONFIGS, "").split(",") if c]
        return cls(sources, configs)

    def as_dict(self) -> dict:
        return {"data": dict(self.data), "configs": list(self.configs)}

    @classmethod
    def of_runs(cls, metrics: Iterable[dict]) -> Origin:
        """The union of what the runs' results recorded: `provenance.origin`, every
        `backbone` of their recorded config and the code that ran (`provenance.code`). Runs
        that recorded no origin add none: a table of such runs only is of unrecorded origin
        (never this job's environment's)."""
        data: dict[str, str] = {}
        configs: list[str] = []
        backbones: list[str] = []
        code: list[str] = []
        for run in metrics:
            provenance = run.get("provenance") or {}
            origin = provenance.get("origin") or {}
            for name, source in (origin.get("data") or {}).items():
                if data.get(name, source) != source:
                    source = f"{data[name]}+{source}"
                data[name] = source
            configs += [c for c in origin.get("configs") or [] if c not in configs]
            backbones += [b for b in _backbones(provenance.get("config")) if b not in backbones]
            if provenance.get("code") and provenance["code"] not in code:
                code.append(provenance["code"])
        return cls(data, configs, backbones, code)

    @classmethod
    def of_table(cls, frame) -> Origin:
        """The origin a tidy table CSV states in its `data`, `configs`, `backbone`, `code`
        columns (a figure drawn from the table); unrecorded when it has none."""
        if "data" not in frame.columns or frame.empty:
            return cls()
        first = frame.iloc[0]

        def split(column: str) -> list[str]:
            value = first.get(column)
            return [v for v in str(value).split(" + ") if v] if isinstance(value, str) else []

        data = {} if first["data"] == "unknown" else {"runs": str(first["data"])}
        return cls(data, split("configs"), split("backbone"), split("code"))

    def with_backbones(self, backbones: Iterable[str]) -> Origin:
        extra = [b for b in backbones if b and b not in self.backbones]
        return Origin(dict(self.data), list(self.configs), [*self.backbones, *extra], self.code)

    @property
    def known(self) -> bool:
        return bool(self.data)

    @property
    def demo(self) -> bool:
        return any("demo" in source for source in self.data.values())

    @property
    def generated(self) -> bool:
        return any("generated" in source for source in self.data.values())

    def title(self, title: str) -> str:
        if self.generated:
            return f"{title} [generated data]"
        return f"{title} [demo world]" if self.demo else title

    def note(self) -> str:
        """One sentence: data, configuration, backbones, the code that ran (mlmm's version
        and a digest of its source: two of them mean runs of different code)."""
        if not self.known:
            data = "data of unrecorded origin (not run through the workflow)"
        else:
            sources = ", ".join(f"{name}: {source}" for name, source in self.data.items())
            if self.generated:
                data = f"{GENERATED_LABEL}; data sources {sources}"
            elif self.demo:
                data = f"{DEMO_LABEL}; data sources {sources}"
            else:
                data = f"real data (sources {sources})"
        parts = [f"Produced from {data}"]
        if self.configs:
            parts.append(f"configuration {' + '.join(self.configs)}")
        if self.backbones:
            published = PUBLISHED in self.data.get("features", "")
            parts.append(
                "image features that ran: "
                + ", ".join(
                    PUBLISHED_NAMES.get(b, backbone_name(b)) if published else backbone_name(b)
                    for b in self.backbones
                )
            )
        if self.code:
            parts.append(f"code mlmm {' + '.join(self.code)}")
        return "; ".join(parts) + "."

    @property
    def kind(self) -> str:
        """generated, demo or real."""
        return "generated" if self.generated else "demo" if self.demo else "real"

    def columns(self) -> dict[str, str]:
        """Constant columns for a tidy CSV: a program reading it sees the origin too."""
        return {
            "data": self.kind if self.known else "unknown",
            "configs": " + ".join(self.configs),
            "backbone": " + ".join(self.backbones),
            "code": " + ".join(self.code),
        }


def check_data_sets(data: Iterable[str]) -> tuple[str, ...]:
    """``data`` as a tuple of data set names, each one of `RECORDED` (a caller's mistake, not
    the user's: a string or an unknown name is a programming error)."""
    if isinstance(data, str):
        raise TypeError(f"data: an iterable of data set names, not the string {data!r}")
    data = tuple(data)
    unknown = [name for name in data if name not in RECORDED]
    if unknown:
        raise ValueError(f"data: names among {', '.join(RECORDED)}; found {', '.join(unknown)}")
    return data


def _backbones(config) -> list[str]:
    """Every `backbone` value in a recorded config, depth first."""
    found: list[str] = []
    if isinstance(config, dict):
        for key, value in config.items():
            if key == "backbone" and isinstance(value, str):
                found.append(value)
            else:
                found += _backbones(value)
    elif isinstance(config, list):
        for value in config:
            found += _backbones(value)
    return found


def stamp_figure(fig, origin: Origin, note: str = "") -> None:
    """Say where a figure comes from without drawing it: the figure's title (its suptitle,
    '[demo world]' added) is taken out of the image, and the title, ``note`` (how to read the
    figure) and the origin sentence are kept as ``fig.mlmm_caption``, which
    ``mlmm.io.save_figure`` writes into the PNG's text chunks and the PDF's metadata and into a
    caption file beside them. A paper's figure carries no title or provenance in the image."""
    title = ""
    if fig._suptitle is not None:
        title = origin.title(fig._suptitle.get_text())
        fig._suptitle.remove()
        fig._suptitle = None
    fig.mlmm_caption = {"title": title, "note": note, "origin": origin.note()}


def figure_caption(fig) -> dict[str, str]:
    """What ``stamp_figure`` kept of a figure ({} for a figure it did not see)."""
    return dict(getattr(fig, "mlmm_caption", None) or {})


def caption_text(caption: dict[str, str]) -> str:
    """The caption file's text: title, how to read the figure, where it comes from."""
    parts = [caption.get("title", ""), caption.get("note", ""), caption.get("origin", "")]
    return "\n\n".join(p for p in parts if p) + "\n"
