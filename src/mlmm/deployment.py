"""Where a conda env of the workflow installs the mlmm package from (envs/*.post-deploy.sh).

The Snakefile exports ``MLMM_SOURCE``, a pip requirement for the package of the workflow's own
source, unless the user set it: a local checkout's directory, ``git+https://<host>/<owner>/
<repo>@<ref>`` for a workflow imported with ``github(...)``/``gitlab(...)``, ``git+file://``
for a local git repository. A workflow read from a plain HTTP URL has no such source: the env
then needs ``MLMM_SOURCE`` set by hand (a wheel, a git URL, a version on an index).
Standard library only: the Snakefile calls it while it is parsed.
"""

from __future__ import annotations

import os

ENV_SOURCE = "MLMM_SOURCE"


def pip_source(basedir) -> str | None:
    """A pip requirement for the package of the workflow whose Snakefile lives in ``basedir``
    (a Snakemake SourceFile: ``workflow.current_basedir``); None where pip cannot reach it."""
    repo, host = getattr(basedir, "repo", None), getattr(basedir, "host", None)
    if repo and host:  # github(...), gitlab(...): the repository at the workflow's ref
        return f"mlmm @ git+https://{host}/{repo}@{basedir.ref}"
    repo_path = getattr(basedir, "repo_path", None)
    if repo_path:  # a local git repository at a ref (git+file://)
        return f"mlmm @ git+file://{os.path.abspath(repo_path)}@{basedir.ref}"
    path = basedir.get_path_or_uri(secret_free=True)
    if "://" in path:
        return None
    # the Snakefile's directory is the repository root, or its workflow/ (the bridge)
    root = os.path.abspath(path)
    if not os.path.isfile(os.path.join(root, "pyproject.toml")):
        root = os.path.dirname(root)
    return root if os.path.isfile(os.path.join(root, "pyproject.toml")) else None
