"""SemEval-style STS pairs with graded gold similarity.

The gold score is 5 x the F1 overlap of what two sentences state (shapes, shape-colour,
shape-size, shape-position, relation, place, count), plus a little rater noise: a paraphrase
of the same content scores about 5, two annotators of one scene land in the middle, a changed
attribute costs part of the score, and sentences about different scenes score low.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from mlmm.demo.grammar import Content, Mention, raw, sample_content, tokens
from mlmm.demo.scenes import COLOURS, PLACES, SHAPES, sample_scene

KINDS = ("paraphrase", "same_scene", "changed", "other_scene")
_KIND_P = (0.2, 0.35, 0.25, 0.2)


def facts(c: Content) -> set[tuple]:
    """The propositions a sentence states."""
    out: set[tuple] = set()
    for m in c.mentions:
        out.add(("shape", m.shape))
        if m.colour:
            out.add(("colour", m.shape, m.colour))
        if m.size:
            out.add(("size", m.shape, m.size))
        for word in (m.position or "").split():
            out.add(("position", m.shape, word))
    if c.relation:
        out.add(("relation", c.mentions[0].shape, c.relation, c.mentions[1].shape))
    if c.place:
        out.add(("place", c.place))
    if c.count:
        out.add(("count", c.count))
    return out


def similarity(a: Content, b: Content) -> float:
    """5 x F1 of the two fact sets."""
    fa, fb = facts(a), facts(b)
    return 5.0 * 2 * len(fa & fb) / (len(fa) + len(fb))


def _restyle(c: Content, rng: np.random.Generator) -> Content:
    return dataclasses.replace(c, style=tuple(int(x) for x in rng.integers(0, 1 << 16, 4)))


def _change(c: Content, rng: np.random.Generator) -> Content:
    """The same sentence with one thing changed: a colour, a shape or the place."""
    i = int(rng.integers(len(c.mentions)))
    m = c.mentions[i]
    what = rng.choice(["colour", "shape", "place"] if c.place else ["colour", "shape"])
    if what == "place":
        return dataclasses.replace(c, place=str(rng.choice([p for p in PLACES if p != c.place])))
    if what == "colour":
        new = Mention(m.shape, str(rng.choice([x for x in COLOURS if x != m.colour])), *_rest(m))
    else:
        new = Mention(str(rng.choice([s for s in SHAPES if s != m.shape])), m.colour, *_rest(m))
    return dataclasses.replace(c, mentions=c.mentions[:i] + (new,) + c.mentions[i + 1 :])


def _rest(m: Mention) -> tuple[str | None, str | None]:
    return m.size, m.position


def sample_pairs(rng: np.random.Generator, n: int) -> list[tuple[str, str, float]]:
    """``n`` (sentence 1, sentence 2, gold score) triples in raw cased English."""
    pairs = []
    for _ in range(n):
        scene = sample_scene(rng)
        first = sample_content(scene, rng)
        kind = rng.choice(KINDS, p=_KIND_P)
        if kind == "paraphrase":
            second = _restyle(first, rng)
        elif kind == "same_scene":
            second = sample_content(scene, rng)
        elif kind == "changed":
            second = _change(first, rng)
        else:
            second = sample_content(sample_scene(rng), rng)
        score = float(np.clip(similarity(first, second) + rng.normal(0.0, 0.25), 0.0, 5.0))
        pairs.append((raw(tokens(first, "en"), "en"), raw(tokens(second, "en"), "en"), score))
    return pairs
