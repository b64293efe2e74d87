"""``python -m interp_rl.cli``: the ``interp-rl`` command."""

from interp_rl.cli import main

main()
