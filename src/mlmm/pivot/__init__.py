"""Pivot image-caption retrieval (Rajendran et al. 2016, Section 6 and Table 5).

Z1 = COCO training images with English captions, Z2 = English-French (or -German) TED talks;
English is the pivot. Models: Bridge CorrNet on Z1 + Z2, the En-Image CorrNet on Z1 alone
(the upper reference, tested with English captions), 2-CorrNet (image-en and en-X CorrNets
chained through the nearest English training caption), Bridge MAE (Ngiam et al. 2011) and a
random ranking. Test: the MIC set, images with five French and five German captions each;
Recall@5/10/50 by Euclidean distance in the common space, as fractions of 1.

Stages: `mlmm pivot-train` (one model, language and lambda per job) and `mlmm pivot-table`
(lambda chosen per direction on validation data, never on image-French/German pairs).
"""

IMAGE = "image"
PIVOT = "en"
LANGUAGES = ("fr", "de")
MODELS = ("bridge", "mae", "two", "direct", "random")
KS = (5, 10, 50)
