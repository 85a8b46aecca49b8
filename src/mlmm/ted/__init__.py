"""TED cross-lingual document classification (Rajendran et al. 2016, Tables 1, 3 and 4).

Stages: corpus (demo, local copy or download) -> bag-of-words per language -> Bridge CorrNet
trained on every English-X pair at once -> lambda tuned per source language -> averaged
perceptron per topic, trained in one language and tested in every other -> tables and figure.
"""

PIVOT = "en"
LANGUAGES = ["ar", "de", "es", "fr", "it", "nl", "pl", "pt-br", "ro", "ru", "tr"]
TOPICS = [
    "art",
    "arts",
    "biology",
    "business",
    "creativity",
    "culture",
    "design",
    "economics",
    "education",
    "entertainment",
    "global",
    "health",
    "politics",
    "science",
    "technology",
]
SPLITS = ["train", "test"]


def corpus_code(language: str, codes: dict[str, str] | None) -> str:
    """The corpus's name of ``language`` (``ted.corpus_codes``, e.g. pt-br -> pb): shared by
    the corpus reader and the demo corpus generator."""
    return (codes or {}).get(language, language)
