"""``python -m sim.cli``: the same as the ``companysim`` console script."""

from sim.cli import main

main()
