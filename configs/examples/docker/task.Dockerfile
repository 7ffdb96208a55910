# ssebench task image: the daemon, the test_patch MCP server and `ssebench entrypoint`.
# Rendered from configs/docker/task.Dockerfile.j2; do not edit the rendered copy.
#
# Build context (made by ssebench.container.docker.prepare_task_context):
#   wheels/deps/     wheels of ssebench's dependencies, built on the host
#   wheels/project/  the ssebench wheel itself
# Nothing is downloaded while the image builds: the build needs no registry and no network.
FROM ssebench-base:bookworm

LABEL org.ssebench.image="task" \
      org.ssebench.version="0.1.0"

# Dependencies first, in their own layer: they change far less often than ssebench.
COPY wheels/deps/ /opt/ssebench-wheels/deps/
RUN python3 -m venv /opt/ssebench \
 && /opt/ssebench/bin/pip install --no-cache-dir --no-index --disable-pip-version-check \
        /opt/ssebench-wheels/deps/*.whl \
 && rm -rf /opt/ssebench-wheels/deps

COPY wheels/project/ /opt/ssebench-wheels/project/
RUN /opt/ssebench/bin/pip install --no-cache-dir --no-index --no-deps --disable-pip-version-check \
        /opt/ssebench-wheels/project/*.whl \
 && rm -rf /opt/ssebench-wheels \
 && /opt/ssebench/bin/ssebench --version

ENV PATH=/opt/ssebench/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    PYTHONDONTWRITEBYTECODE=1

WORKDIR /task
ENTRYPOINT ["ssebench", "entrypoint"]
