"""Install the pinned agent CLIs (npm, and the PyPI agents' venvs) before the tests ask for them.

``make test-deps`` starts ``python -m tests.e2e.prefetch`` in the background: on a new
machine the two pin files' CLIs (~2 GiB) take minutes to install, and meanwhile lint and
the tests that do not need them run (tests/conftest.py orders those first). The fixtures
call the same :func:`install_clis`, so they wait on its lock and then find the install.
Without npm there is nothing to do; a failure here is printed and the fixtures retry it.
"""

from __future__ import annotations

import shutil
import sys

from tests.e2e.conftest import (
    CLIENT_BINS,
    CLIENT_PINS,
    CONFORMANCE_BINS,
    CONFORMANCE_PINS,
    install_clis,
    install_gateway,
    install_pypi_clis,
    install_tasks_client,
)


def main() -> int:
    if shutil.which("npm") is None or shutil.which("node") is None:
        print("prefetch: no npm/node; the agent CLI tests will skip", file=sys.stderr)
        return 0
    try:
        install_clis()
        install_pypi_clis()  # the PyPI agents, each in a venv of its own
        install_gateway()  # the jobs' model gateway (LiteLLM's proxy), in a venv of its own
        install_clis(pins=CLIENT_PINS, bins=CLIENT_BINS)
        install_clis(pins=CONFORMANCE_PINS, bins=CONFORMANCE_BINS)
        install_tasks_client()  # FastMCP's tasks client (test_mcp_clients)
    except Exception as exc:  # the fixtures install again and fail the tests with it
        print(f"prefetch: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
