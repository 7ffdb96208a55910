"""``python -m tests.e2e.models CLI [--port N] [--record FILE]``: serve a scripted model until killed."""

from __future__ import annotations

import argparse
import signal
import sys
import threading

from . import TOOL_NAMES, for_cli


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.e2e.models")
    parser.add_argument("cli", choices=sorted(TOOL_NAMES))
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--record", help="append every request to this file, one JSON line each")
    parser.add_argument("--final-text", default="I ran test_patch.")
    args = parser.parse_args()
    model = for_cli(args.cli, port=args.port, final_text=args.final_text, record_path=args.record)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    with model:
        print(model.url, flush=True)
        try:
            stop.wait()
        except KeyboardInterrupt:
            pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
