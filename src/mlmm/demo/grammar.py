"""What an annotator says about a scene, and how each language says it.

An annotator first decides *what* to mention (``Content``: a template, a few objects with some
of their attributes, maybe the place); a realiser per language then says it with real words and
real grammar: English; German with gender, case and adjective declension (ein roter Kreis /
es gibt einen roten Kreis / neben dem roten Kreis); French with the colour after the noun, size
before it, gender agreement and de + article contraction (à côté du carré bleu, de l'étoile);
Czech without articles, with adjective agreement and the case each preposition governs (vedle
modrého čtverce, nad modrým čtvercem, s červenou hvězdou); Japanese verb-final with particles
and counters, written without spaces (青い星の隣に赤い丸がある, 赤い丸を含む図形が三つある).
The Multi30K world uses ``LANGUAGES``; Japanese is for the COCO world's STAIR captions.

Translations share one ``Content``; independent annotators draw their own.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from mlmm.demo.scenes import Scene

LANGUAGES = ("en", "de", "fr", "cs")
TEMPLATES = ("exist", "list", "relation", "count")
_TEMPLATE_P = (0.25, 0.35, 0.28, 0.12)
# Slots of Content.style: one independent word/form choice each, read the same by every language.
FORM, SYN, PICTURE, DEFINITE = range(4)


@dataclass(frozen=True)
class Mention:
    """One object as an annotator mentions it; None = attribute left unsaid."""

    shape: str
    colour: str | None = None
    size: str | None = None
    position: str | None = None  # 'top left', 'top', 'left', 'centre', ... (see Obj.position)


@dataclass(frozen=True)
class Content:
    template: str  # one of TEMPLATES
    mentions: tuple[Mention, ...]
    place: str | None = None
    relation: str | None = None  # 'next', 'above' or 'below': mentions[0] relative to [1]
    count: int | None = None  # objects in the scene (template 'count': all or some mentioned)
    style: tuple[int, ...] = (0, 0, 0, 0)


def sample_content(scene: Scene, rng: np.random.Generator) -> Content:
    """What one annotator mentions: part of the scene, salient (big) objects more often."""
    objs = scene.objects
    n = len(objs)
    template = str(rng.choice(TEMPLATES, p=_TEMPLATE_P))
    k = {"exist": 1, "relation": 2}.get(template) or int(rng.integers(1, min(3, n) + 1))
    weights = np.array([2.0 if o.size == "big" else 1.0 for o in objs])
    picks = rng.choice(n, size=k, replace=False, p=weights / weights.sum())
    p_colour, p_size, p_pos = {
        "exist": (0.85, 0.4, 0.55),
        "list": (0.75, 0.35, 0.25),
        "relation": (0.85, 0.3, 0.15),
        "count": (0.7, 0.25, 0.0),
    }[template]
    mentions = []
    for i in picks:
        o = objs[int(i)]
        position = None
        if rng.random() < p_pos:
            parts = o.position.split()
            position = (
                o.position if len(parts) == 1 or rng.random() < 0.5 else str(rng.choice(parts))
            )
        mentions.append(
            Mention(
                o.shape,
                o.colour if rng.random() < p_colour else None,
                o.size if rng.random() < p_size else None,
                position,
            )
        )
    if template in ("list", "count"):  # "a diamond and a diamond": say it once
        mentions = list(dict.fromkeys(mentions))
    relation = None
    if template == "relation":
        a, b = (objs[int(i)] for i in picks)
        relation = "above" if a.row < b.row else "below" if a.row > b.row else "next"
    return Content(
        template=template,
        mentions=tuple(mentions),
        place=scene.place if rng.random() < 0.45 else None,
        relation=relation,
        count=n if template == "count" else None,
        style=tuple(int(x) for x in rng.integers(0, 1 << 16, size=4)),
    )


def _pick(options: tuple[str, ...] | str, content: Content, slot: int) -> str:
    if isinstance(options, str):
        return options
    return options[content.style[slot] % len(options)]


def _join(items: list[str], conjunction: str) -> str:
    """'a', 'a and b', 'a , b and c'."""
    if len(items) == 1:
        return items[0]
    return " , ".join(items[:-1]) + f" {conjunction} " + items[-1]


def _tail(*parts: str | None) -> str:
    return "".join(f" {p}" for p in parts if p)


NUMBERS = {
    "en": ("two", "three", "four", "five", "six"),
    "de": ("zwei", "drei", "vier", "fünf", "sechs"),
    "fr": ("deux", "trois", "quatre", "cinq", "six"),
    "cs": ("dva", "tři", "čtyři", "pět", "šest"),
    "ja": ("二", "三", "四", "五", "六"),
}

# --------------------------------------------------------------------------------- English
EN_SIZE = {"small": ("small", "little"), "big": ("big", "large")}
EN_POS = {
    "top left": "at the top left",
    "top": "at the top",
    "top right": "at the top right",
    "left": "on the left",
    "centre": ("in the centre", "in the middle"),
    "right": "on the right",
    "bottom left": "at the bottom left",
    "bottom": "at the bottom",
    "bottom right": "at the bottom right",
}
EN_PLACE = {
    "grass": "on the grass",
    "sand": "on the sand",
    "snow": "in the snow",
    "water": "on the water",
    "road": "on the road",
}
EN_REL = {"next": ("next to", "beside"), "above": ("above", "over"), "below": ("below", "under")}
EN_PICTURE = ("a picture of", "an image of", "a photo of")


def _en_np(m: Mention, c: Content, definite: bool = False) -> str:
    words = [_pick(EN_SIZE[m.size], c, SYN)] if m.size else []
    words += [m.colour] if m.colour else []
    words.append(m.shape)
    article = "the" if definite else "an" if words[0][0] in "aeiou" else "a"
    return " ".join([article, *words]) + _tail(m.position and _pick(EN_POS[m.position], c, SYN))


def english(c: Content) -> str:
    place = c.place and EN_PLACE[c.place]
    v = c.style[FORM] % 2
    if c.template == "exist":
        return ("there is " if v == 0 else "") + _en_np(c.mentions[0], c) + _tail(place)
    if c.template == "list":
        items = _join([_en_np(m, c) for m in c.mentions], "and")
        return (_pick(EN_PICTURE, c, PICTURE) + " " if v else "") + items + _tail(place)
    if c.template == "relation":
        first, second = c.mentions
        rel = _pick(EN_REL[c.relation], c, SYN)
        other = _en_np(second, c, definite=c.style[DEFINITE] % 2 == 1)
        return _en_np(first, c) + (" is" if v else "") + f" {rel} {other}" + _tail(place)
    number = NUMBERS["en"][c.count - 2]
    items = _join([_en_np(m, c) for m in c.mentions], "and")
    if len(c.mentions) == c.count:
        return f"{number} shapes{_tail(place)} : {items}"
    return f"{number} shapes{_tail(place)} , including {items}"


# --------------------------------------------------------------------------------- German
DE_NOUN = {
    "circle": ("Kreis", "m"),
    "square": ("Quadrat", "n"),
    "triangle": ("Dreieck", "n"),
    "star": ("Stern", "m"),
    "heart": ("Herz", "n"),
    "cross": ("Kreuz", "n"),
    "diamond": ("Raute", "f"),
    "arrow": ("Pfeil", "m"),
    "cloud": ("Wolke", "f"),
}
DE_DATIVE = {"Herz": "Herzen"}  # the one irregular singular we use
DE_ADJ = {
    "red": "rot",
    "blue": "blau",
    "green": "grün",
    "yellow": "gelb",
    "black": "schwarz",
    "white": "weiß",
    "orange": "orangefarben",
    "purple": "violett",
    "small": "klein",
    "big": "groß",
}
# case -> gender -> (article, adjective ending): mixed declension after ein, weak after der
DE_INDEFINITE = {
    "nom": {"m": ("ein", "er"), "f": ("eine", "e"), "n": ("ein", "es")},
    "acc": {"m": ("einen", "en"), "f": ("eine", "e"), "n": ("ein", "es")},
    "dat": {"m": ("einem", "en"), "f": ("einer", "en"), "n": ("einem", "en")},
}
DE_DEFINITE = {
    "nom": {"m": ("der", "e"), "f": ("die", "e"), "n": ("das", "e")},
    "acc": {"m": ("den", "en"), "f": ("die", "e"), "n": ("das", "e")},
    "dat": {"m": ("dem", "en"), "f": ("der", "en"), "n": ("dem", "en")},
}
DE_POS = {
    "top left": "oben links",
    "top": "oben",
    "top right": "oben rechts",
    "left": "links",
    "centre": "in der Mitte",
    "right": "rechts",
    "bottom left": "unten links",
    "bottom": "unten",
    "bottom right": "unten rechts",
}
DE_PLACE = {
    "grass": "auf dem Gras",
    "sand": "auf dem Sand",
    "snow": "im Schnee",
    "water": "auf dem Wasser",
    "road": "auf der Straße",
}
DE_REL = {"next": "neben", "above": "über", "below": "unter"}
DE_PICTURE = ("ein Bild", "ein Bild", "ein Foto")


def _de_np(m: Mention, c: Content, case: str, definite: bool = False) -> str:
    noun, gender = DE_NOUN[m.shape]
    article, ending = (DE_DEFINITE if definite else DE_INDEFINITE)[case][gender]
    adjectives = [DE_ADJ[a] + ending for a in (m.size, m.colour) if a]
    noun = DE_DATIVE.get(noun, noun) if case == "dat" else noun
    return " ".join([article, *adjectives, noun]) + _tail(m.position and DE_POS[m.position])


def german(c: Content) -> str:
    place = c.place and DE_PLACE[c.place]
    v = c.style[FORM] % 2
    if c.template == "exist":
        if v == 0:
            return "es gibt " + _de_np(c.mentions[0], c, "acc") + _tail(place)
        return _de_np(c.mentions[0], c, "nom") + _tail(place)
    if c.template == "list":
        if v == 0:
            return _join([_de_np(m, c, "nom") for m in c.mentions], "und") + _tail(place)
        items = _join([_de_np(m, c, "dat") for m in c.mentions], "und")
        return f"{_pick(DE_PICTURE, c, PICTURE)} mit {items}" + _tail(place)
    if c.template == "relation":
        first, second = c.mentions
        other = _de_np(second, c, "dat", definite=c.style[DEFINITE] % 2 == 1)
        verb = " ist" if v else ""
        return _de_np(first, c, "nom") + verb + f" {DE_REL[c.relation]} {other}" + _tail(place)
    number = NUMBERS["de"][c.count - 2]
    items = _join([_de_np(m, c, "nom") for m in c.mentions], "und")
    if len(c.mentions) == c.count:
        return f"{number} Formen{_tail(place)} : {items}"
    return f"{number} Formen{_tail(place)} , darunter {items}"


# --------------------------------------------------------------------------------- French
FR_NOUN = {
    "circle": ("cercle", "m"),
    "square": ("carré", "m"),
    "triangle": ("triangle", "m"),
    "star": ("étoile", "f"),
    "heart": ("cœur", "m"),
    "cross": ("croix", "f"),
    "diamond": ("losange", "m"),
    "arrow": ("flèche", "f"),
    "cloud": ("nuage", "m"),
}
# (masculine, feminine); colours follow the noun, size adjectives precede it
FR_ADJ = {
    "red": ("rouge", "rouge"),
    "blue": ("bleu", "bleue"),
    "green": ("vert", "verte"),
    "yellow": ("jaune", "jaune"),
    "black": ("noir", "noire"),
    "white": ("blanc", "blanche"),
    "orange": ("orange", "orange"),
    "purple": ("violet", "violette"),
    "small": ("petit", "petite"),
    "big": ("grand", "grande"),
}
FR_POS = {
    "top left": "en haut à gauche",
    "top": "en haut",
    "top right": "en haut à droite",
    "left": "à gauche",
    "centre": ("au centre", "au milieu"),
    "right": "à droite",
    "bottom left": "en bas à gauche",
    "bottom": "en bas",
    "bottom right": "en bas à droite",
}
FR_PLACE = {
    "grass": "sur l'herbe",
    "sand": "sur le sable",
    "snow": "dans la neige",
    "water": "sur l'eau",
    "road": "sur la route",
}
# relation -> (preposition, whether it ends in 'de' that contracts with the article)
FR_REL = {"next": ("à côté", True), "above": ("au-dessus", True), "below": ("sous", False)}
FR_PICTURE = ("une image", "une image", "une photo")


def _fr_np(m: Mention, c: Content, definite: bool = False, de: bool = False) -> str:
    """Noun phrase; ``de``: preceded by the preposition de (du, de la, de l', d'un, d'une)."""
    noun, gender = FR_NOUN[m.shape]
    g = 0 if gender == "m" else 1
    words = [FR_ADJ[m.size][g]] if m.size else []
    words.append(noun)
    words += [FR_ADJ[m.colour][g]] if m.colour else []
    if definite:
        if words[0][0] in "aeiouéèê":
            article = "de l'" if de else "l'"
        else:
            article = {(0, False): "le", (1, False): "la", (0, True): "du", (1, True): "de la"}[
                (g, de)
            ]
    else:
        article = ("d'" if de else "") + ("un" if g == 0 else "une")
    head = article + ("" if article.endswith("'") else " ") + " ".join(words)
    return head + _tail(m.position and _pick(FR_POS[m.position], c, SYN))


def french(c: Content) -> str:
    place = c.place and FR_PLACE[c.place]
    v = c.style[FORM] % 2
    if c.template == "exist":
        return ("il y a " if v == 0 else "") + _fr_np(c.mentions[0], c) + _tail(place)
    if c.template == "list":
        items = _join([_fr_np(m, c) for m in c.mentions], "et")
        return (f"{_pick(FR_PICTURE, c, PICTURE)} avec " if v else "") + items + _tail(place)
    if c.template == "relation":
        first, second = c.mentions
        preposition, de = FR_REL[c.relation]
        other = _fr_np(second, c, definite=c.style[DEFINITE] % 2 == 1, de=de)
        verb = " est" if v else ""
        return _fr_np(first, c) + verb + f" {preposition} {other}" + _tail(place)
    number = NUMBERS["fr"][c.count - 2]
    items = _join([_fr_np(m, c) for m in c.mentions], "et")
    if len(c.mentions) == c.count:
        return f"{number} formes{_tail(place)} : {items}"
    return f"{number} formes{_tail(place)} , dont {items}"


# --------------------------------------------------------------------------------- Czech
# shape -> (gender, {case: form}); masculine inanimate and neuter accusative = nominative
CS_NOUN = {
    "circle": ("m", {"nom": "kruh", "gen": "kruhu", "ins": "kruhem"}),
    "square": ("m", {"nom": "čtverec", "gen": "čtverce", "ins": "čtvercem"}),
    "triangle": ("m", {"nom": "trojúhelník", "gen": "trojúhelníku", "ins": "trojúhelníkem"}),
    "star": ("f", {"nom": "hvězda", "acc": "hvězdu", "gen": "hvězdy", "ins": "hvězdou"}),
    "heart": ("n", {"nom": "srdce", "gen": "srdce", "ins": "srdcem"}),
    "cross": ("m", {"nom": "kříž", "gen": "kříže", "ins": "křížem"}),
    "diamond": ("m", {"nom": "kosočtverec", "gen": "kosočtverce", "ins": "kosočtvercem"}),
    "arrow": ("f", {"nom": "šipka", "acc": "šipku", "gen": "šipky", "ins": "šipkou"}),
    "cloud": ("m", {"nom": "mrak", "gen": "mraku", "ins": "mrakem"}),
}
CS_ADJ = {
    "red": "červen",
    "blue": "modr",
    "green": "zelen",
    "yellow": "žlut",
    "black": "čern",
    "white": "bíl",
    "orange": "oranžov",
    "purple": "fialov",
    "small": "mal",
    "big": "velk",
}
CS_ENDING = {  # hard adjective declension
    "m": {"nom": "ý", "acc": "ý", "gen": "ého", "ins": "ým"},
    "f": {"nom": "á", "acc": "ou", "gen": "é", "ins": "ou"},
    "n": {"nom": "é", "acc": "é", "gen": "ého", "ins": "ým"},
}
CS_POS = {
    "top left": "vlevo nahoře",
    "top": "nahoře",
    "top right": "vpravo nahoře",
    "left": "vlevo",
    "centre": "uprostřed",
    "right": "vpravo",
    "bottom left": "vlevo dole",
    "bottom": "dole",
    "bottom right": "vpravo dole",
}
CS_PLACE = {
    "grass": "na trávě",
    "sand": "na písku",
    "snow": "ve sněhu",
    "water": "na vodě",
    "road": "na silnici",
}
CS_REL = {"next": ("vedle", "gen"), "above": ("nad", "ins"), "below": ("pod", "ins")}
CS_PICTURE = ("obrázek", "obrázek", "fotka")


def _cs_np(m: Mention, c: Content, case: str) -> str:
    gender, forms = CS_NOUN[m.shape]
    noun = forms.get(case) or forms["nom"]  # accusative = nominative unless listed
    adjectives = [CS_ADJ[a] + CS_ENDING[gender][case] for a in (m.size, m.colour) if a]
    return " ".join([*adjectives, noun]) + _tail(m.position and CS_POS[m.position])


def _cs_with(phrase: str) -> str:
    """The preposition s (with) is 'se' before s, z, š, ž."""
    return ("se " if phrase[0] in "szšž" else "s ") + phrase


def czech(c: Content) -> str:
    place = c.place and CS_PLACE[c.place]
    v = c.style[FORM] % 2
    if c.template == "exist":
        if v == 0:
            return (place or "na obrázku") + " je " + _cs_np(c.mentions[0], c, "nom")
        return _cs_np(c.mentions[0], c, "nom") + _tail(place)
    if c.template == "list":
        if v == 0:
            return _join([_cs_np(m, c, "nom") for m in c.mentions], "a") + _tail(place)
        items = _cs_with(_join([_cs_np(m, c, "ins") for m in c.mentions], "a"))
        return f"{_pick(CS_PICTURE, c, PICTURE)} {items}" + _tail(place)
    if c.template == "relation":
        first, second = c.mentions
        preposition, case = CS_REL[c.relation]
        verb = " je" if v else ""
        other = _cs_np(second, c, case)
        return _cs_np(first, c, "nom") + verb + f" {preposition} {other}" + _tail(place)
    number = NUMBERS["cs"][c.count - 2]
    noun = "tvarů" if c.count >= 5 else "tvary"  # five and more take the genitive plural
    if len(c.mentions) == c.count:
        items = _join([_cs_np(m, c, "nom") for m in c.mentions], "a")
        return f"{number} {noun}{_tail(place)} : {items}"
    items = _join([_cs_np(m, c, "gen") for m in c.mentions], "a")  # včetně takes the genitive
    return f"{number} {noun}{_tail(place)} , včetně {items}"


# --------------------------------------------------------------------------------- Japanese
# Built as a list of words segmented as MeCab (unidic-lite) segments them, written without
# spaces. Verb-final, particles after their noun phrase (が subject, は topic, を object, の
# attributive, に location, と 'and'), modifiers before the noun, counters after numbers.
JA_NOUN = {
    "circle": ("丸", "円"),
    "square": "四角",
    "triangle": "三角",
    "star": "星",
    "heart": "ハート",
    "cross": "十字",
    "diamond": "ひし形",
    "arrow": "矢印",
    "cloud": "雲",
}
# colour/size -> its words before a noun: i-adjectives, or a noun + の
JA_ADJ = {
    "red": ("赤い",),
    "blue": ("青い",),
    "green": ("緑", "の"),
    "yellow": ("黄色い",),
    "black": ("黒い",),
    "white": ("白い",),
    "orange": ("オレンジ", "色", "の"),
    "purple": ("紫", "の"),
}
JA_SIZE = {"small": ("小さい", "小さな"), "big": ("大きい", "大きな")}
JA_POS = {
    "top left": "左上",
    "top": "上",
    "top right": "右上",
    "left": "左",
    "centre": ("中央", "真ん中"),
    "right": "右",
    "bottom left": "左下",
    "bottom": "下",
    "bottom right": "右下",
}
JA_PLACE = {  # place -> (noun, its relational noun): 草の上, 雪の中
    "grass": (("草", "芝生"), "上"),
    "sand": ("砂", "上"),
    "snow": ("雪", ("中", "上")),
    "water": ("水", "上"),
    "road": ("道路", "上"),
}
JA_REL = {"next": ("隣", "横"), "above": "上", "below": "下"}
JA_PICTURE = ("写真", "画像", "絵")
JA_SHAPES = "図形"
JA_COUNTER = ("つ", "個")  # general counters for things: 二つ, 三個


def _ja_np(m: Mention, c: Content) -> list[str]:
    """[position の] [size] [colour] noun: 左上の大きな赤い丸."""
    words = [_pick(JA_POS[m.position], c, SYN), "の"] if m.position else []
    words += [_pick(JA_SIZE[m.size], c, SYN)] if m.size else []
    words += JA_ADJ[m.colour] if m.colour else []
    return [*words, _pick(JA_NOUN[m.shape], c, PICTURE)]  # not SYN: 円 not tied to 大きな


def _ja_list(mentions: tuple[Mention, ...], c: Content) -> list[str]:
    """A, B と C (the reading comma 、 between all but the last two)."""
    words: list[str] = []
    for i, m in enumerate(mentions):
        if i:
            words.append("と" if i == len(mentions) - 1 else "、")
        words += _ja_np(m, c)
    return words


def _ja_place(c: Content, *particles: str) -> list[str]:
    """草の上 + particles (に 'on', の attributive, では 'as for on'); nothing without a place."""
    if not c.place:
        return []
    noun, where = JA_PLACE[c.place]
    return [_pick(noun, c, PICTURE), "の", _pick(where, c, PICTURE), *particles]


def _ja_exists(c: Content) -> list[str]:
    """The existential verb, plain or polite: ある / あります."""
    return ["ある"] if (c.style[DEFINITE] >> 1) % 2 == 0 else ["あり", "ます"]


def _japanese_words(c: Content) -> list[str]:
    v = c.style[FORM] % 2
    if c.template == "exist":
        if v == 0:
            return _ja_place(c, "に") + _ja_np(c.mentions[0], c) + ["が", *_ja_exists(c)]
        return _ja_place(c, "の") + _ja_np(c.mentions[0], c)
    if c.template == "list":
        items = _ja_list(c.mentions, c)
        if v == 0:
            return _ja_place(c, "に") + items + ["が", *_ja_exists(c)]
        picture = _pick(JA_PICTURE, c, PICTURE)
        if c.style[DEFINITE] % 2 == 0:  # 草の上の赤い丸と青い星の写真
            return _ja_place(c, "の") + items + ["の", picture]
        return _ja_place(c, "に") + items + ["が", "写っ", "た", picture]
    if c.template == "relation":
        first, second = (_ja_np(m, c) for m in c.mentions)
        where = [*second, "の", _pick(JA_REL[c.relation], c, SYN), "に"]
        place = _ja_place(c, "で", "は", "、")
        if v == 0:  # 青い星の隣に赤い丸がある
            return place + where + first + ["が", *_ja_exists(c)]
        return place + first + ["は", *where, *_ja_exists(c)]  # 赤い丸は青い星の隣にある
    number = [NUMBERS["ja"][c.count - 2], JA_COUNTER[(c.style[FORM] >> 1) % 2]]
    items = _ja_list(c.mentions, c)
    if len(c.mentions) == c.count:
        if v == 0:  # 赤い丸と青い星の二つの図形がある
            return (
                _ja_place(c, "に")
                + items
                + ["の", *number, "の", JA_SHAPES, "が"]
                + (_ja_exists(c))
            )
        return _ja_place(c, "に") + items + ["の", *number, "が", *_ja_exists(c)]
    if v == 0:  # 赤い丸を含む図形が五つある
        return (
            _ja_place(c, "に") + items + ["を", "含む", JA_SHAPES, "が", *number] + (_ja_exists(c))
        )
    # 図形が五つあり、その中に赤い丸がある
    return (
        _ja_place(c, "に")
        + [JA_SHAPES, "が", *number, "あり", "、", "その", "中", "に"]
        + items
        + ["が", *_ja_exists(c)]
    )


def japanese(c: Content) -> str:
    """The caption as a Japanese annotator writes it: no spaces between words."""
    return "".join(_japanese_words(c))


REALISERS = {"en": english, "de": german, "fr": french, "cs": czech, "ja": japanese}

# --------------------------------------------------------------------------------- text forms
_TOKEN = re.compile(r"\w+'|[\w-]+|[^\w\s]")


def tokens(c: Content, lang: str) -> list[str]:
    """The caption as Moses-style tokens (elided articles l', d' are their own tokens); for
    Japanese the words as MeCab with unidic-lite splits them, ending in 。."""
    if lang == "ja":
        return _japanese_words(c) + ["。"]
    return _TOKEN.findall(REALISERS[lang](c)) + ["."]


def raw(toks: list[str], lang: str) -> str:
    """Untokenised, capitalised sentence as an annotator would type it (Japanese: no spaces)."""
    if lang == "ja":
        return "".join(toks)
    text = " ".join(toks).replace("' ", "'").replace(" .", ".").replace(" ,", ",")
    if lang != "fr":  # French typography keeps the space before a colon
        text = text.replace(" :", ":")
    return text[0].upper() + text[1:]


def tok(toks: list[str]) -> str:
    """Lowercased tokenised line as in Multi30K's *.lc.norm.tok.* (apostrophe escaped)."""
    return " ".join(toks).lower().replace("'", "&apos;")


# --------------------------------------------------------------------------------- dictionaries
# English words without a table entry above -> their words in each language (no Czech articles)
_FUNCTION_WORDS = {
    "a": {"de": "ein eine einen einem einer", "fr": "un une", "cs": "", "ja": ""},
    "an": {"de": "ein eine einen einem einer", "fr": "un une", "cs": "", "ja": ""},
    "the": {"de": "der die das dem den", "fr": "le la du", "cs": "", "ja": ""},
    "and": {"de": "und", "fr": "et", "cs": "a", "ja": "と"},
    "is": {"de": "ist", "fr": "est", "cs": "je", "ja": "ある"},
    "shapes": {"de": "formen", "fr": "formes", "cs": "tvary tvarů", "ja": "図形"},
    "including": {"de": "darunter", "fr": "dont", "cs": "včetně", "ja": "含む"},
    "picture": {"de": "bild", "fr": "image", "cs": "obrázek", "ja": "絵"},
    "image": {"de": "bild", "fr": "image", "cs": "obrázek", "ja": "画像"},
    "photo": {"de": "foto", "fr": "photo", "cs": "fotka", "ja": "写真"},
    "beside": {"de": "neben", "fr": "côté", "cs": "vedle", "ja": "隣 横"},
    "above": {"de": "über", "fr": "au-dessus", "cs": "nad", "ja": "上"},
    "over": {"de": "über", "fr": "au-dessus", "cs": "nad", "ja": "上"},
    "below": {"de": "unter", "fr": "sous", "cs": "pod", "ja": "下"},
    "under": {"de": "unter", "fr": "sous", "cs": "pod", "ja": "下"},
    "left": {"de": "links", "fr": "gauche", "cs": "vlevo", "ja": "左"},
    "right": {"de": "rechts", "fr": "droite", "cs": "vpravo", "ja": "右"},
    "top": {"de": "oben", "fr": "haut", "cs": "nahoře", "ja": "上"},
    "bottom": {"de": "unten", "fr": "bas", "cs": "dole", "ja": "下"},
    "centre": {"de": "mitte", "fr": "centre", "cs": "uprostřed", "ja": "中央"},
    "middle": {"de": "mitte", "fr": "milieu", "cs": "uprostřed", "ja": "真ん中"},
}


def _adjective_forms(lang: str, key: str) -> list[str]:
    if lang == "ja":  # the content word only: 緑 of 緑の, オレンジ of オレンジ色の
        return list(JA_SIZE[key]) if key in JA_SIZE else [JA_ADJ[key][0]]
    if lang == "de":
        return [DE_ADJ[key] + e for e in ("", "e", "er", "en", "es")]
    if lang == "fr":
        return list(FR_ADJ[key])
    return [CS_ADJ[key] + e for e in ("ý", "á", "é", "ou", "ého", "ým")]


def _noun_forms(lang: str, shape: str) -> list[str]:
    if lang == "ja":
        noun = JA_NOUN[shape]
        return [noun] if isinstance(noun, str) else list(noun)
    if lang == "de":
        noun = DE_NOUN[shape][0]
        return [noun, DE_DATIVE.get(noun, noun)]
    if lang == "fr":
        return [FR_NOUN[shape][0]]
    return list(CS_NOUN[shape][1].values())


def dictionary(lang: str) -> list[tuple[str, str]]:
    """MUSE-style (English word, word in ``lang``) pairs, lowercased, every inflected form used."""
    pairs: list[tuple[str, str]] = []
    for shape in DE_NOUN:
        pairs += [(shape, form) for form in _noun_forms(lang, shape)]
    for key in DE_ADJ:
        english_words = EN_SIZE.get(key, (key,))
        pairs += [(e, f) for e in english_words for f in _adjective_forms(lang, key)]
    if lang == "ja":
        for place in EN_PLACE:
            nouns = JA_PLACE[place][0]
            pairs += [(place, n) for n in ((nouns,) if isinstance(nouns, str) else nouns)]
    else:
        places = {"de": DE_PLACE, "fr": FR_PLACE, "cs": CS_PLACE}[lang]
        pairs += [(place, _TOKEN.findall(places[place])[-1]) for place in EN_PLACE]
    pairs += list(zip(NUMBERS["en"], NUMBERS[lang], strict=True))
    for english_word, targets in _FUNCTION_WORDS.items():
        pairs += [(english_word, t) for t in targets[lang].split()]
    seen = dict.fromkeys((e.lower(), t.lower()) for e, t in pairs)
    return list(seen)
