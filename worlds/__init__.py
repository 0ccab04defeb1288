"""worlds: the company as data.

WorldSpec, the typed schema (``worlds.schema``), the seeded generator (``worlds.generate``), the world store
(create, open, fork, snapshot, restore, canonical dump and state hash), named RNG streams, the Clock protocol
and the change log. This layer imports nothing from the other companysim layers.
"""
