"""Pivot image-caption retrieval (Rajendran et al. 2016, Section 6 and Table 5).

Z1 = COCO training images with English captions, Z2 = English-French (or -German) TED talks;
English is the pivot. Models: Bridge CorrNet on Z1 + Z2, the En-Image CorrNet on Z1 alone
(the upper reference, tested with English captions), 2-CorrNet (image-en and en-X CorrNets
chained through the nearest English training caption), Bridge MAE (Ngiam et al. 2011) and a
random ranking. Test: the MIC set, images with five French and five German captions each;
Recall@5/10/50 by Euclidean distance in the common space, as fractions of 1.

CorrNet + MT (mlmm.pivot.mt): the MIC captions translated to English by the project's NMT
trained X -> en on Z2 (the paper: Moses), ranked by the En-Image CorrNet.

Stages: `mlmm pivot-train` (one model, language and lambda per job) and `mlmm pivot-table`
(lambda chosen per direction on validation data, never on image-French/German pairs).
"""

IMAGE = "image"
PIVOT = "en"
LANGUAGES = ("fr", "de")
MODELS = ("bridge", "mae", "two", "direct", "random")
KS = (5, 10, 50)


def nmt_records(config: dict) -> dict[str, dict]:
    """{X: the record of the X -> en NMT of the CorrNet + MT rows} for every pivot language.

    One NMT recipe for the project: `nmt.model` and `nmt.train` (Calixto Table 3's NMT), with
    what `pivot.mt.model` / `pivot.mt.train` change; direction X -> en, data = Z2's sentences.
    One length cut, `pivot.mt.max_length` (Moses's 100 words, the paper's MT): the data step
    drops the longer training pairs and the trainer gets the same cut (`nmt.train.max_length`,
    Nematus's 50, would drop more).
    """
    pivot, nmt = config["pivot"], config["nmt"]
    mt = pivot["mt"]
    return {
        x: {
            "src": x,
            "tgt": PIVOT,
            "data": "z2",
            "model": {**nmt["model"], **mt.get("model", {})},
            "train": {**nmt["train"], **mt.get("train", {}), "max_length": mt["max_length"]},
            "max_length": mt["max_length"],
            "beam": mt["beam"],
        }
        for x in pivot["languages"]
    }
