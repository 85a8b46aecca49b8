# The workflow's software in one image, for `--software-deployment-method apptainer` (or
# docker/podman by hand): the packages of every env file under envs/ (the same pins that
# `--use-conda` installs, conda-forge only) in the image's base environment, and the mlmm
# package of this source tree. docs/workflow.md ("Containers") says how to build and use it.
#
#   docker build -t mlmm:$(grep -m1 '^version' pyproject.toml | cut -d'"' -f2) .
#
# The pytorch pin names the CUDA build: CONDA_OVERRIDE_CUDA tells the solver which CUDA to
# assume on a build host without a GPU driver (the image then runs on GPU and CPU nodes).
FROM mambaorg/micromamba:2.0.5
ARG CONDA_OVERRIDE_CUDA=12.6
COPY --chown=$MAMBA_USER:$MAMBA_USER envs/core.yaml envs/torch.yaml /tmp/envs/
# torch.yaml is core.yaml plus PyTorch, and core.yaml adds METEOR's Java and jar: one solve
# of both files (their shared pins are equal, tests/test_workflow.py).
RUN micromamba install --yes --name base --file /tmp/envs/core.yaml --file /tmp/envs/torch.yaml \
    && micromamba clean --all --yes
ARG MAMBA_DOCKERFILE_ACTIVATE=1
COPY --chown=$MAMBA_USER:$MAMBA_USER pyproject.toml setup.py README.md LICENSE /opt/mlmm/
COPY --chown=$MAMBA_USER:$MAMBA_USER src /opt/mlmm/src
# the package data that src/mlmm links to (the papers' tables, claims registries, the schema)
COPY --chown=$MAMBA_USER:$MAMBA_USER resources /opt/mlmm/resources
COPY --chown=$MAMBA_USER:$MAMBA_USER workflow/schemas /opt/mlmm/workflow/schemas
# without dependencies: those are the conda pins above (pip must not pull torch from PyPI)
RUN python -m pip install --no-deps --no-build-isolation /opt/mlmm && mlmm --version
# `apptainer exec` (what Snakemake's --sdm apptainer runs) and `docker run <image> CMD` skip
# the image's entrypoint, which activates the environment: the environment's bin is on PATH
# by itself, so `mlmm`, `python` and `java` are found either way. No ENTRYPOINT of our own.
ENV PATH=/opt/conda/bin:$PATH
ENV MAMBA_ROOT_PREFIX=/opt/conda
