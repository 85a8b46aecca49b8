"""The one compiled part of mlmm: the k-best MIRA epoch loop (src/mlmm/_mira_epoch.c).

Everything else is in pyproject.toml. ``optional=True``: without a C compiler or Python's
headers the install goes on without it, and mlmm.rerank runs the same loop in numpy (slower,
the same steps; ``mlmm mira`` says which ran).
"""

from setuptools import Extension, setup

setup(ext_modules=[Extension("mlmm._mira_epoch", ["src/mlmm/_mira_epoch.c"], optional=True)])
