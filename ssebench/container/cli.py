"""``ssebench entrypoint`` (a task container's main process) and ``ssebench run`` (one whole run)."""

from __future__ import annotations

import argparse
import sys


def register(sub: argparse._SubParsersAction) -> None:
    _register_entrypoint(sub)
    from ssebench.container.run import register as register_run

    register_run(sub)


def _register_entrypoint(sub: argparse._SubParsersAction) -> None:
    from ssebench.agents.registry import names

    p = sub.add_parser(
        "entrypoint",
        help="run a task container: daemon, MCP server, agent, final grading",
        description="Start the daemon and the MCP server, wait until the server answers an MCP initialize, "
        "run AGENT_CMD under its timeout, grade every check, write results.json. Settings come "
        "from the environment (docs/container.md); flags override them.",
    )
    p.add_argument(
        "--sidecar",
        action="store_true",
        help="the daemon is already served at SSE_DAEMON_SOCKET (by a sidecar): do not start it",
    )
    p.add_argument("--task", help="task.toml (default: SSE_TASK)")
    p.add_argument("--tree", help="the agent's source tree (default: SSE_TREE, else the task's source)")
    p.add_argument("--results-dir", help="where results.json goes (default: SSE_RESULTS_DIR, else /results)")
    p.add_argument("--agent-timeout", help="seconds the agent may run (default: SSE_AGENT_TIMEOUT, else 3600)")
    p.add_argument("--mcp-timeout", help="seconds to wait for the MCP server (default: SSE_MCP_TIMEOUT, else 300)")
    p.add_argument("--port", dest="mcp_port", help="MCP server port (default: SSE_MCP_PORT, else 3000)")
    p.add_argument(
        "--dialog",
        metavar="AGENT",
        help=f"convert the agent's stdout ({'|'.join(names())} stream) into dialog.jsonl (default: SSE_DIALOG)",
    )
    p.add_argument("--prompt", help="the agent's prompt, logged as the dialog's prompt line (default: SSE_PROMPT)")
    p.add_argument(
        "--no-sandbox",
        action="store_true",
        help="the daemon and grading run checks without the bwrap sandbox (same as SSE_NO_SANDBOX=1)",
    )
    p.add_argument("agent", nargs=argparse.REMAINDER, metavar="-- AGENT_CMD ...")
    p.set_defaults(func=_entrypoint)


def _entrypoint(args: argparse.Namespace) -> int:
    from ssebench.container.entrypoint import Entrypoint, print_stage
    from ssebench.container.gatewayroute import relayed_in_container
    from ssebench.container.results import EXIT_USAGE
    from ssebench.container.settings import SettingsError, from_environment

    command = list(args.agent)
    if command and command[0] == "--":
        command = command[1:]
    try:
        settings = from_environment(
            task=args.task,
            tree=args.tree,
            results_dir=args.results_dir,
            agent_timeout=args.agent_timeout,
            mcp_timeout=args.mcp_timeout,
            mcp_port=args.mcp_port,
            dialog=args.dialog,
            prompt=args.prompt,
            sidecar=args.sidecar,
        )
        if args.no_sandbox:  # the daemon and `ssebench grade` inherit it (docs/security.md)
            settings.env["SSE_NO_SANDBOX"] = "1"
        with relayed_in_container():  # a job's model gateway on this container's 127.0.0.1
            result = Entrypoint(settings, command, on_stage=print_stage).run()
    except SettingsError as exc:
        print(f"ssebench entrypoint: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:  # a second Ctrl-C before the agent ran: everything is stopped
        print("ssebench entrypoint: interrupted", file=sys.stderr)
        return 130
    from ssebench import runrecord

    code = result.exit_code
    assert code is not None
    where = runrecord.path_in(settings.results_dir)
    print(f"ssebench entrypoint: {result.status} (exit {code}); results in {where}", file=sys.stderr)
    if result.error:
        print(f"ssebench entrypoint: {result.error}", file=sys.stderr)
    return code
