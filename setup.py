"""The one compiled part of mlmm: the k-best MIRA epoch loop (src/mlmm/_mira_epoch.c).

Everything else is in pyproject.toml. ``optional=True``: without a C compiler or Python's
headers the install goes on without it, and mlmm.rerank runs the same loop in numpy (slower,
the same steps; ``mlmm mira`` says which ran). The build records the source's sha256
(``SOURCE_SHA256``), by which mlmm.rerank refuses a build older than the source beside it.
"""

import hashlib
from pathlib import Path

from setuptools import Extension, setup

SOURCE = "src/mlmm/_mira_epoch.c"
DIGEST = hashlib.sha256((Path(__file__).parent / SOURCE).read_bytes()).hexdigest()

setup(
    ext_modules=[
        Extension(
            "mlmm._mira_epoch",
            [SOURCE],
            define_macros=[("MLMM_SOURCE_SHA256", f'"{DIGEST}"')],
            optional=True,
        )
    ]
)
