# ssebench agent layer for hermes: hermes-agent==0.19.0 (PyPI) on top of the task image,
# registered with the test_patch server by `ssebench agents install hermes`.
# Rendered from configs/docker/agent-pypi.Dockerfile.j2; do not edit the rendered copy.
#
# Build context (made by ssebench.container.pypilayer on the host):
#   cli/requirements.txt  the hashed lock beside configs/agent-clis/pypi/hermes/pins.json
#   cli/wheels/           its wheels, `pip wheel --no-deps --require-hashes -r requirements.txt` on the host
#                         (the hashes are the downloads', checked there; a wheel built from a locked
#                         sdist has a hash of its own, so the layer installs the wheels themselves)
FROM ssebench-task:latest

LABEL org.ssebench.image="agent" \
      org.ssebench.agent="hermes" \
      org.ssebench.agent-package="hermes-agent==0.19.0"

# A venv of its own (its dependencies never meet ssebench's), installed offline from exactly
# the lock's wheels; only its command goes on PATH.
COPY cli/ /opt/ssebench-agent/
RUN python3 -m venv /opt/ssebench-agent/venv \
 && /opt/ssebench-agent/venv/bin/pip install --no-cache-dir --no-index --disable-pip-version-check --no-deps \
      /opt/ssebench-agent/wheels/*.whl \
 && ln -s /opt/ssebench-agent/venv/bin/hermes /usr/local/bin/hermes \
 && hermes --version

# Register the test_patch server (user scope, http://localhost:3000/mcp), then the run
# recipe's one-time setup in the agent's HOME (agents/recipe.py), as for the npm agents.
RUN ssebench agents install hermes \
 && python3 -c "import os, pathlib; from ssebench.agents.recipe import get_recipe; \
get_recipe('hermes').prepare(home=pathlib.Path.home(), env=dict(os.environ))" \
 && chmod -R a+rwX /root
