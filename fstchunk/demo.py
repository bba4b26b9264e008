"""``fstchunk demo``: the running example of the Jansche slides, on built-in data."""

from __future__ import annotations

from . import encodings as enc

#: The slides' example sentence (§1, §6) with its named entities in untyped IOB2.
SLIDES_WORDS = ("De liberale minister van Justitie Marc Verwilghen is geen kandidaat op "
                "de lokale VLD-lijst bij de komende gemeenteraadsverkiezingen in "
                "Dendermonde .").split()
SLIDES_TAGS = ("O O O O B B I O O O O O O B O O O O O B O").split()


def run(plot: str | None = None) -> int:
    print("fstchunk demo: the named entities of the Jansche slides' example sentence")
    chunks = enc.tags_to_chunks(SLIDES_TAGS, "IOB2")
    print("chunks (type, start, end):", chunks)
    print(" ".join(SLIDES_WORDS[s:e] and "[" + " ".join(SLIDES_WORDS[s:e]) + "]"
                   for _, s, e in chunks))
    width = max(map(len, SLIDES_WORDS))
    table = {s: enc.chunks_to_tags(chunks, len(SLIDES_WORDS), s) for s in enc.SCHEMES}
    print(f"\n{'word':<{width}}  " + " ".join(f"{s:<6}" for s in enc.SCHEMES))
    for i, w in enumerate(SLIDES_WORDS):
        print(f"{w:<{width}}  " + " ".join(f"{table[s][i]:<6}" for s in enc.SCHEMES))
    return 0
