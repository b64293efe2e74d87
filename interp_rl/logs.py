"""Old name of :mod:`interp_rl.logged_data` (logged datasets), kept because tutorials and users import it."""

from interp_rl.logged_data import *  # noqa: F403
from interp_rl.logged_data import __all__  # noqa: F401
