"""A TED-like corpus for the demo, in the TED CLDC layout (see mlmm.ted.corpus), and
``ted-fetch --source demo`` (``fetch_demo``).

Talks are drawn from 15 topics with topic-dependent vocabularies; each talk is a sequence of
concepts written out in English and translated, with noise (dropped and substituted words,
inflected variants), into 11 languages whose made-up word forms are all distinct. Each pair
X-en gets its own sample of the shared train and test talk pools, as in the real corpus. The
same seed gives the same corpus. A talk's copies under the 15 topic directories are hard links
(copies where links are not possible), which keeps the demo small on disk.
"""

from __future__ import annotations

import os
from itertools import product
from pathlib import Path

import numpy as np

from mlmm.io import (
    claim_output_dir,
    copy_file,
    discard_build,
    forcing,
    mark_output_dir,
    replace_dir,
    temp_dir_beside,
    write_text,
)
from mlmm.ted import LANGUAGES, PIVOT, SPLITS, TOPICS, corpus_code
from mlmm.ted.corpus import record_root

DEMO_MARKER = ".mlmm-demo-ted.sha256"

# Each language's letters, so that word forms look different across languages.
ALPHABETS = {
    "en": ("bcdfghklmnprstw", "aeiou", ["", "s", "er", "ing", "ly"]),
    "ar": ("bdfhjklmnqrstwyz", "aiu", ["", "at", "un", "in"]),
    "de": ("bdfghklmnprstwz", "aeiou", ["", "en", "ung", "er", "lich"]),
    "es": ("bcdfglmnprstv", "aeio", ["", "os", "as", "ción", "ar"]),
    "fr": ("bcdfglmnprstv", "aeiou", ["", "eux", "ment", "é", "ier"]),
    "it": ("bcdfglmnprstvz", "aeio", ["", "i", "e", "zione", "are"]),
    "nl": ("bdfghklmnprstvwz", "aeiou", ["", "en", "heid", "ig", "ij"]),
    "pl": ("bcdghjklmnprstwz", "aeiouy", ["", "ów", "ski", "ość", "ać"]),
    "pt-br": ("bcdfglmnprstv", "aeiou", ["", "ão", "os", "ar", "ões"]),
    "ro": ("bcdfglmnprstvz", "aeiou", ["", "ul", "ilor", "ă", "ește"]),
    "ru": ("бвгдзклмнпрстф", "аеиоуы", ["", "ов", "ая", "ный", "ть"]),
    "tr": ("bcdgklmnprstyz", "aeıiouü", ["", "lar", "ler", "lık", "mek"]),
}
# English words of the paper's Table 4, given to concepts of fitting topics.
SPECIAL = {"market": ["economics", "business"], "oil": ["global", "economics"],
           "home": ["design", "culture"], "history": ["culture", "education"]}  # fmt: skip
RELATED = [("art", "arts", 20), ("biology", "science", 10), ("business", "economics", 15),
           ("design", "technology", 10), ("global", "politics", 10)]  # fmt: skip
POPULARITY = {"technology": 3, "science": 3, "global": 2.5, "culture": 2.5, "design": 2,
              "business": 2, "entertainment": 1.5, "health": 1.5, "education": 1.2,
              "politics": 1.2}  # fmt: skip


def _make_word(rng: np.random.Generator, language: str, taken: set[str]) -> str:
    consonants, vowels, endings = ALPHABETS[language]
    while True:
        syllables = int(rng.integers(2, 4))
        picks = rng.integers(0, 1 << 30, size=2 * syllables + 1)
        word = "".join(
            consonants[picks[2 * i] % len(consonants)] + vowels[picks[2 * i + 1] % len(vowels)]
            for i in range(syllables)
        )
        word += endings[picks[-1] % len(endings)]
        if word not in taken:
            taken.add(word)
            return word


def make_pair_dirs(out: Path, code: str) -> None:
    """Every topic directory of both sides of pair `code`-en, even one without positive talks."""
    for pair_dir in (f"{code}-{PIVOT}", f"{PIVOT}-{code}"):
        for split, topic, polarity in product(SPLITS, TOPICS, ("positive", "negative")):
            (out / pair_dir / split / topic / polarity).mkdir(parents=True, exist_ok=True)


def write_everywhere(base: Path, topics: set[int], name: str, text: str) -> None:
    """The talk under every topic directory: written once, hard-linked into the others."""
    first = None
    for t, topic in enumerate(TOPICS):
        folder = os.path.join(base, topic, "positive" if t in topics else "negative")
        os.makedirs(folder, exist_ok=True)
        target = os.path.join(folder, name)
        if first is None:
            write_text(target, text)
            first = target
        else:
            try:
                os.link(first, target)
            except OSError:
                copy_file(first, target)


def generate(
    out: str | Path,
    seed: int = 1,
    train_docs: int = 200,
    test_docs: int = 50,
    general_words: int = 400,
    topic_words: int = 40,
    codes: dict[str, str] | None = None,
    languages: list[str] | None = None,
) -> Path:
    """Write the demo corpus under `out` (the ted-cldc root); returns `out`.

    `codes` names the language directories as the real corpus does (default pt-br -> pb);
    `languages` (default all 11) are the ones paired with English."""
    codes = {"pt-br": "pb"} if codes is None else codes
    paired = LANGUAGES if languages is None else languages
    rng = np.random.default_rng(seed)
    out = Path(out)
    languages = [PIVOT, *LANGUAGES]  # word forms of every language, whichever are written
    n_topics = len(TOPICS)
    # Concepts: general ones first, then each topic's own.
    topic_concepts = []
    next_id = general_words
    for _ in TOPICS:
        topic_concepts.append(list(range(next_id, next_id + topic_words)))
        next_id += topic_words
    for first, second, shared in RELATED:
        a, b = TOPICS.index(first), TOPICS.index(second)
        topic_concepts[b][-shared:] = topic_concepts[a][:shared]
    n_concepts = next_id
    special_ids = {}
    for word, topics in SPECIAL.items():
        concept = topic_concepts[TOPICS.index(topics[0])][0]
        special_ids[concept] = word
        other = topic_concepts[TOPICS.index(topics[1])]
        other[1:] = [concept, *[c for c in other[1:] if c != concept]][: len(other) - 1]
    taken: set[str] = set(SPECIAL)
    forms: dict[str, list[list[str]]] = {}
    for language in languages:
        table = []
        for concept in range(n_concepts):
            if language == PIVOT:
                table.append([special_ids.get(concept) or _make_word(rng, language, taken)])
            else:
                variants = 2 if rng.random() < 0.3 else 1
                table.append([_make_word(rng, language, taken) for _ in range(variants)])
        forms[language] = table

    def zipf(n: int) -> np.ndarray:
        weights = 1.0 / np.arange(1, n + 1)
        return weights / weights.sum()

    general_p, topic_p = zipf(general_words), zipf(topic_words)
    popularity = np.array([POPULARITY.get(t, 1.0) for t in TOPICS])
    popularity /= popularity.sum()

    def talk() -> tuple[set[int], list[int]]:
        count = rng.choice([1, 2, 3], p=[0.45, 0.4, 0.15])
        topics = set(rng.choice(n_topics, size=count, replace=False, p=popularity).tolist())
        if TOPICS.index("art") in topics and rng.random() < 0.5:
            topics.add(TOPICS.index("arts"))
        own = np.array(sorted(topics))
        length = int(rng.integers(120, 260))
        u = rng.random(length)
        picked_topic = np.where(u < 0.4, own[rng.integers(len(own), size=length)],
                                rng.integers(n_topics, size=length))  # fmt: skip
        rank = rng.choice(topic_words, size=length, p=topic_p)
        general = rng.choice(general_words, size=length, p=general_p)
        concepts = [int(topic_concepts[t][r]) if x < 0.43 else int(g)
                    for x, t, r, g in zip(u, picked_topic, rank, general, strict=True)]  # fmt: skip
        return topics, concepts

    pool = {split: [talk() for _ in range(int(size * 2.2))]
            for split, size in (("train", train_docs), ("test", test_docs))}  # fmt: skip
    offset = {"train": 0, "test": len(pool["train"])}

    def sentences(concepts: list[int]) -> list[tuple[int, int]]:
        """Sentence spans (8-18 concepts) of one talk, the same in every language: the real
        corpus's talks are sentence-aligned translations, one sentence a line (the CorrNet + MT
        rows of Table 5 train on line pairs). Drawn from the talk's own generator, so every
        language of the talk gets the same spans whatever order the talks are rendered in."""
        local = np.random.default_rng([seed, len(concepts), *concepts[:4]])
        spans, start = [], 0
        while start < len(concepts):
            stop = start + int(local.integers(8, 19))
            spans.append((start, min(stop, len(concepts))))
            start = stop
        return spans

    def render(language: str, concepts: list[int]) -> str:
        code = corpus_code(language, codes)
        n = len(concepts)
        u, variant = rng.random(n), rng.random(n)
        substitute = rng.choice(general_words, size=n, p=general_p)
        words: list[str | None] = []
        for i, concept in enumerate(concepts):
            if language != PIVOT:
                if u[i] < 0.08:
                    words.append(None)  # a word the translation leaves out
                    continue
                if u[i] < 0.16:
                    concept = int(substitute[i])
            variants = forms[language][concept]
            words.append(variants[0 if len(variants) == 1 or variant[i] < 0.7 else 1])
        lines = [
            " ".join(f"{w}_{code}" for w in words[start:stop] if w is not None)
            for start, stop in sentences(concepts)
        ]
        return "\n".join(lines) + "\n"

    for language in paired:
        make_pair_dirs(out, corpus_code(language, codes))
    english = {}  # one English text per talk, shared by every pair, as in the real corpus
    for language in paired:
        code = corpus_code(language, codes)
        for split, size in (("train", train_docs), ("test", test_docs)):
            chosen = sorted(rng.choice(len(pool[split]), size=size, replace=False).tolist())
            for index in chosen:
                topics, concepts = pool[split][index]
                doc_id = str(offset[split] + index)
                key = (split, index)
                if key not in english:
                    english[key] = render(PIVOT, concepts)
                texts = {f"{code}-{PIVOT}": render(language, concepts),
                         f"{PIVOT}-{code}": english[key]}  # fmt: skip
                for pair_dir, text in texts.items():
                    write_everywhere(out / pair_dir / split, topics, f"{doc_id}.ted", text)
    return out


def generate_demo(
    root: Path, languages: list[str], codes: dict[str, str] | None, demo: dict, force: bool
) -> None:
    """Write the demo corpus to `root` atomically; an existing `root` is replaced only when it
    is an unedited demo corpus of ours (DEMO_MARKER lists its files) or `force` is given."""
    claim_output_dir(root, "TED demo corpus", DEMO_MARKER, force=force)
    with forcing(force):
        partial = temp_dir_beside(root)
        try:
            generate(partial, codes=codes, languages=languages, **demo)
            mark_output_dir(partial, DEMO_MARKER)
            replace_dir(partial, root)
        finally:
            discard_build(partial)


def fetch_demo(
    out_dir: Path,
    languages: list[str],
    codes: dict[str, str] | None,
    demo: dict | None = None,
    force: bool = False,
) -> Path:
    """``ted-fetch --source demo``: generate the corpus under `out_dir/ted-cldc` and write
    `out_dir/index.json` naming it (as mlmm.ted.corpus.fetch does for a copy or a download)."""
    out_dir = Path(out_dir)
    root = out_dir / "ted-cldc"
    with forcing(force):  # ``force``: what the write layer would refuse is replaced, too
        generate_demo(root, languages, codes, demo or {}, force)
        return record_root(out_dir, "demo", root, languages, codes)
