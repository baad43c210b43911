"""The site mirror: an offline data centre's local package repository, built once from Debian's registry into the
cache, frozen, signed, and served read-only on the rehearsal network (docs/rehearse.md, "Site mirror").

:mod:`.packages` is what the roles install (the mirror's package list), :mod:`.build` resolves, downloads, indexes
and signs it, :mod:`.serve` runs its HTTP server on the rehearsal bridge, :mod:`.source` gives a node the
mirror's apt source and key and tells where each package a node installed came from.
"""
