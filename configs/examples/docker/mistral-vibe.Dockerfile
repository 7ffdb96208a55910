# ssebench agent layer for mistral-vibe: mistral-vibe==2.26.1 (PyPI) on top of the task image,
# registered with the test_patch server by `ssebench agents install mistral-vibe`.
# Rendered from configs/docker/agent-pypi.Dockerfile.j2; do not edit the rendered copy.
#
# Build context (made by ssebench.container.pypilayer on the host):
#   cli/requirements.txt  the hashed lock beside configs/agent-clis/pypi/mistral-vibe/pins.json
#   cli/wheels/           its wheels, `pip wheel --no-deps --require-hashes -r requirements.txt` on the host
#                         (the hashes are the downloads', checked there; a wheel built from a locked
#                         sdist has a hash of its own, so the layer installs the wheels themselves)
#   python/               the host's Python 3.12 (the task image's python3 is Debian bookworm's
#                         3.11; mistral-vibe needs 3.12), without its tests and site-packages
FROM ssebench-task:latest

LABEL org.ssebench.image="agent" \
      org.ssebench.agent="mistral-vibe" \
      org.ssebench.agent-package="mistral-vibe==2.26.1"

# Its own libpython is found through ld.so's path, wherever the host had it.
COPY python/ /opt/ssebench-python/
RUN echo /opt/ssebench-python/lib > /etc/ld.so.conf.d/ssebench-python.conf && ldconfig \
 && /opt/ssebench-python/bin/python3.12 --version

# A venv of its own (its dependencies never meet ssebench's), installed offline from exactly
# the lock's wheels; only its command goes on PATH.
COPY cli/ /opt/ssebench-agent/
RUN /opt/ssebench-python/bin/python3.12 -m venv /opt/ssebench-agent/venv \
 && /opt/ssebench-agent/venv/bin/pip install --no-cache-dir --no-index --disable-pip-version-check --no-deps \
      /opt/ssebench-agent/wheels/*.whl \
 && ln -s /opt/ssebench-agent/venv/bin/vibe /usr/local/bin/vibe \
 && vibe --version

# Register the test_patch server (user scope, http://localhost:3000/mcp), then the run
# recipe's one-time setup in the agent's HOME (agents/recipe.py), as for the npm agents.
RUN ssebench agents install mistral-vibe \
 && python3 -c "import os, pathlib; from ssebench.agents.recipe import get_recipe; \
get_recipe('mistral-vibe').prepare(home=pathlib.Path.home(), env=dict(os.environ))" \
 && chmod -R a+rwX /root
