"""Distillers: turn a teacher into a transparent controller.

A distiller receives a teacher (``interp_rl.teachers.SB3Teacher`` or any
:class:`interp_rl.policy.Policy`) and an environment factory ``env_fn(seed)``;
it never imports :mod:`envs`. No distiller has landed yet.
"""

__all__: list[str] = []
