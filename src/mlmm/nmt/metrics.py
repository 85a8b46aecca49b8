"""Corpus metrics of 1-best outputs: BLEU, TER, chrF (sacrebleu) and METEOR 1.5 (Java).

All text is already tokenised and lowercased Multi30K, so sacrebleu runs with tokenize="none"
and corpus BLEU is unsmoothed. METEOR needs Java and the METEOR 1.5 jar; the jar that the PyPI
package pycocoevalcap ships has no German paraphrase table, so for German it runs with the exact
and stem modules only (weights 1.0 0.8) and the result says so.
"""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import sacrebleu
from sacrebleu.metrics import BLEU

from mlmm.degenerate import parallel_text
from mlmm.errors import InputError
from mlmm.io import write_text

# The reported and the validation BLEU (sacrebleu; MIRA keeps its own statistics, rerank.py):
# the text is tokenised and lowercased already, so no further tokenisation ("13a" would re-split
# it and move BLEU), unsmoothed corpus BLEU. A protocol value: the fidelity registry pins it
# (code.nmt.bleu).
BLEU_SETTINGS = {"tokenize": "none", "smooth_method": "none"}
# TER (Snover et al. 2006, Calixto & Liu Table 3): sacrebleu's tercom settings, spelled out so
# that the registry holds them (code.nmt.ter): shifts on, no normalisation or punctuation
# removal, case-insensitive (the Multi30K text is lowercased already).
TER_SETTINGS = {
    "normalized": False,
    "no_punct": False,
    "asian_support": False,
    "case_sensitive": False,
}


def resolve_meteor_jar(setting: str | None) -> tuple[Path | None, str]:
    """The jar to use, or None with the reason METEOR is not computed.

    ``setting`` is a path, "pycocoevalcap" (the jar inside that installed package) or None.
    """
    if setting is None:
        return None, "METEOR not computed: nmt.meteor_jar is null"
    if shutil.which("java") is None:
        return None, "METEOR not computed: no java on PATH"
    if setting == "pycocoevalcap":
        spec = importlib.util.find_spec("pycocoevalcap")
        if spec is None or not spec.submodule_search_locations:
            return None, "METEOR not computed: pycocoevalcap is not installed"
        path = Path(list(spec.submodule_search_locations)[0]) / "meteor" / "meteor-1.5.jar"
    else:
        path = Path(setting)
    if not path.is_file():
        return None, f"METEOR not computed: no jar at {path}"
    return path, f"METEOR 1.5 ({path.name})"


def meteor_modules(jar: Path, language: str) -> tuple[list[str], str]:
    """Extra METEOR arguments and a note: without the language's paraphrase table (the
    pycocoevalcap jar has English only) the paraphrase module is left out."""
    if (jar.parent / "data" / f"paraphrase-{language}.gz").is_file():
        return [], f"METEOR 1.5, -l {language}, modules exact stem paraphrase"
    note = f"METEOR 1.5, -l {language}, modules exact stem (no paraphrase-{language}.gz)"
    return ["-m", "exact stem", "-w", "1.0 0.8"], note


def meteor(
    hypotheses: Sequence[str], references: Sequence[str], jar: Path, language: str
) -> tuple[float, str]:
    """Corpus METEOR (0-100) and a note on the modules used."""
    extra, note = meteor_modules(jar, language)
    command = ["java", "-Xmx2G", "-jar", str(jar), "HYP", "REF", "-l", language, "-lower", "-q"]
    command += extra
    with tempfile.TemporaryDirectory() as tmp:
        hyp, ref = Path(tmp) / "hyp", Path(tmp) / "ref"
        write_text(hyp, "".join(h + "\n" for h in hypotheses))
        write_text(ref, "".join(r + "\n" for r in references))
        command[command.index("HYP")], command[command.index("REF")] = str(hyp), str(ref)
        run = subprocess.run(command, capture_output=True, text=True)
    lines = run.stdout.strip().splitlines()
    if run.returncode != 0 or not lines:
        raise InputError(jar, "a working METEOR 1.5 jar", run.stderr.strip()[-300:] or "no output")
    return 100.0 * float(lines[-1]), note


def mt_metrics(
    hypotheses: Sequence[str],
    references: Sequence[str],
    language: str,
    meteor_jar: Path | None = None,
    where: tuple[str | Path, str | Path] = ("hypotheses", "references"),
) -> dict[str, float]:
    """BLEU, TER, chrF (and METEOR when a jar is given) of tokenised 1-best output, 0-100;
    ``where`` names the hypothesis and reference files for the refusal of degenerate input
    (``mlmm.degenerate.parallel_text``: line counts that differ, no line; text compared NFC)."""
    hyps, references = parallel_text(hypotheses, references, *where)
    refs = [references]
    bleu = BLEU(**BLEU_SETTINGS, force=True)  # force: the text is tokenised
    scores = {
        "BLEU": bleu.corpus_score(hyps, refs).score,
        "TER": sacrebleu.corpus_ter(hyps, refs, **TER_SETTINGS).score,
        "chrF": sacrebleu.corpus_chrf(hyps, refs).score,
    }
    if meteor_jar is not None:
        scores["METEOR"] = meteor(hyps, references, meteor_jar, language)[0]
    return scores


# Corpus metrics whose per-sentence sufficient statistics are kept (``sentence_statistics``):
# summed over any set of sentences they give that set's corpus score exactly, so the bootstrap
# resamples sentences as sacrebleu's paired bootstrap does.
SENTENCE_METRICS = ("BLEU", "TER", "chrF")


def _sacrebleu_metric(name: str):
    from sacrebleu.metrics import BLEU, CHRF, TER

    if name == "BLEU":
        return BLEU(**BLEU_SETTINGS, force=True)  # as mt_metrics
    if name == "TER":
        return TER(**TER_SETTINGS)
    return CHRF()


def sentence_statistics(hypotheses: Sequence[str], references: Sequence[str]) -> dict:
    """Per-sentence sufficient statistics of BLEU, TER and chrF (sacrebleu's own), one
    ``(sentences, k)`` array each."""
    hyps, refs = list(hypotheses), [list(references)]
    return {
        name: np.asarray(_sacrebleu_metric(name)._extract_corpus_statistics(hyps, refs))
        for name in SENTENCE_METRICS
    }


def corpus_score(name: str, statistics: np.ndarray) -> float:
    """The corpus score of ``name`` from per-sentence statistics (summed, as sacrebleu does)."""
    metric = _sacrebleu_metric(name)
    return float(metric._compute_score_from_stats(np.sum(statistics, axis=0).tolist()).score)


def corpus_statistic(name: str):
    """``mlmm.uncertainty`` statistic: the corpus score of each replicate's drawn sentences,
    from their statistics, shape (replicates, sentences, k)."""
    metric = _sacrebleu_metric(name)

    def score(drawn: np.ndarray) -> np.ndarray:
        sums = drawn.sum(axis=1)
        return np.array([metric._compute_score_from_stats(row.tolist()).score for row in sums])

    return score
