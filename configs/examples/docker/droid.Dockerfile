# ssebench agent layer for droid: droid@0.215.0 on top of the task image,
# registered with the test_patch server by `ssebench agents install droid`.
# Rendered from configs/docker/agent.Dockerfile.j2; do not edit the rendered copy.
#
# Build context (made by ssebench.container.docker.build_agent_image):
#   node           the host's Node 20 binary (Debian bookworm's nodejs is 18;
#                  Gemini CLI needs 20, and nodejs.org is not reachable offline)
#   cli/           `npm install droid@0.215.0` done on the host (pin: configs/agent-clis/package.json)
FROM ssebench-task:latest

LABEL org.ssebench.image="agent" \
      org.ssebench.agent="droid" \
      org.ssebench.agent-package="droid@0.215.0"

COPY node /usr/local/bin/node
COPY cli/ /opt/ssebench-agent/
RUN ln -s /opt/ssebench-agent/node_modules/.bin/droid /usr/local/bin/droid \
 && droid --version

# Register the test_patch server (user scope, http://localhost:3000/mcp), then the run
# recipe's one-time setup in the agent's HOME (agents/recipe.py: e.g. Gemini's API-key auth).
# HOME (/root) is then opened to every user: the one-container layout runs the whole
# container as a non-root user (any uid, HOME=/root), and the CLI writes its state there.
RUN ssebench agents install droid \
 && python3 -c "import os, pathlib; from ssebench.agents.recipe import get_recipe; \
get_recipe('droid').prepare(home=pathlib.Path.home(), env=dict(os.environ))" \
 && chmod -R a+rwX /root
