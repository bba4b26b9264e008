"""Grammar sources of fstchunk: one module per machine family.

Each module has a pure builder (tag set in, pynini machine out) and an
``export`` function that writes the family's machines for a tag set to a FAR.
Installed as ``fstchunk.grammars``; the package and the CLI use these builders.
"""
