# ssebench agent layer for fast-agent: fast-agent-mcp==0.10.48 (PyPI) on top of the task image,
# registered with the test_patch server by `ssebench agents install fast-agent`.
# Rendered from configs/docker/agent-pypi.Dockerfile.j2; do not edit the rendered copy.
#
# Build context (to be made by ssebench.container.images for a PyPI agent: not done yet, see
# docs/adding-an-agent.md, "PyPI agents"):
#   cli/requirements.txt  the hashed lock beside configs/agent-clis/pypi/fast-agent/pins.json
#   cli/wheels/           its wheels, `pip download --no-deps --require-hashes -r requirements.txt` on the host
FROM ssebench-task:latest

LABEL org.ssebench.image="agent" \
      org.ssebench.agent="fast-agent" \
      org.ssebench.agent-package="fast-agent-mcp==0.10.48"

# A venv of its own (its dependencies never meet ssebench's), installed offline from the
# wheels with their hashes checked; only its command goes on PATH.
COPY cli/ /opt/ssebench-agent/
RUN python3 -m venv --without-pip /opt/ssebench-agent/venv \
 && python3 -m pip --python /opt/ssebench-agent/venv/bin/python install --no-index \
      --find-links /opt/ssebench-agent/wheels --no-deps --require-hashes -r /opt/ssebench-agent/requirements.txt \
 && ln -s /opt/ssebench-agent/venv/bin/fast-agent /usr/local/bin/fast-agent \
 && fast-agent --version

# Register the test_patch server (user scope, http://localhost:3000/mcp), then the run
# recipe's one-time setup in the agent's HOME (agents/recipe.py), as for the npm agents.
RUN ssebench agents install fast-agent \
 && python3 -c "import os, pathlib; from ssebench.agents.recipe import get_recipe; \
get_recipe('fast-agent').prepare(home=pathlib.Path.home(), env=dict(os.environ))" \
 && chmod -R a+rwX /root
