"""LiteLLM's proxy, started for one job on 127.0.0.1 and stopped with it, however the job ends.

Why a process of its own from a venv of its own: ``litellm[proxy]`` brings ~120 packages
(rich<14 among them, where ssebench uses rich 15), so it is installed apart from ssebench from
the hashed lock in configs/gateway/ and found as ``SSE_GATEWAY_LITELLM`` or ``litellm`` on PATH.
Its private folder (mode 0700, a temporary one) holds the config, ssebench's hooks
(configs/gateway/ssebench_gateway_hooks.py), one file per run's key (its sha256, never the
key) and the ledger; the vendor's key reaches the proxy only through its environment
(``os.environ/KEY_ENV`` in the config), never a file. The proxy's output goes to the job
folder's ``gateway.log``, which holds no key (the tests check it).
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import BinaryIO

from ssebench import settings, supervise
from ssebench.jobs.gateway.spec import APIS, GatewaySpec

LITELLM_VAR = "SSE_GATEWAY_LITELLM"
START_TIMEOUT = 180.0  # seconds; a cold start on a busy 2-core machine took 33-70 s
PINS = Path("gateway") / "pins.json"  # under configs/
HOOKS = "ssebench_gateway_hooks"
LOG = "gateway.log"  # in the job folder
STOP_GRACE = 5.0


class GatewayError(RuntimeError):
    """The gateway could not start: one line naming why (and the log's last lines)."""


def litellm_command(environ: dict[str, str] | None = None) -> Path | None:
    """The ``litellm`` command: ``SSE_GATEWAY_LITELLM``, else the one on PATH (None: none)."""
    configured = settings.value(LITELLM_VAR, settings.path, None, environ)
    if configured is not None:
        return Path(configured)
    found = shutil.which("litellm")
    return Path(found) if found else None


def pinned() -> str:
    """The LiteLLM version the gateway is pinned at (configs/gateway/pins.json)."""
    from ssebench.resources import data_dir, pinned_version

    return pinned_version("litellm", data_dir("configs") / PINS)


def install_hint() -> str:
    return (
        f"python3 -m venv DIR && DIR/bin/pip install --no-deps --require-hashes -r configs/gateway/requirements.txt "
        f"(litellm[proxy]=={pinned()} and its locked dependencies), then set {LITELLM_VAR}=DIR/bin/litellm"
    )


def _append_log(path: Path) -> BinaryIO:
    """The job's gateway log, appended to (``jobs resume`` starts the proxy again), never
    through a symlink."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND | getattr(os, "O_NOFOLLOW", 0) | os.O_CLOEXEC
    return os.fdopen(os.open(path, flags, 0o644), "ab")


def _lines_since(path: Path, offset: int) -> list[str]:
    """The log's lines written after OFFSET (at most its last 64 KiB)."""
    with open(path, "rb") as log:
        log.seek(max(offset, os.fstat(log.fileno()).st_size - (64 << 10)))
        return log.read().decode("utf-8", "replace").splitlines()


class Proxy:
    """One running proxy: its URL, its folders; :meth:`close` stops it and removes them."""

    def __init__(self, spec: GatewaySpec, job_folder: Path, command: Path) -> None:
        self.spec, self.command, self.log = spec, command, job_folder / LOG
        self.home = Path(tempfile.mkdtemp(prefix="ssebench-gateway-"))  # 0700
        self.keys, self.ledger = self.home / "keys", self.home / "ledger"
        self.proc: subprocess.Popen[bytes] | None = None
        self.port = 0
        self.seconds = 0.0  # how long the start took

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> Proxy:
        """Write the config, start the proxy and wait for its health route (GatewayError)."""
        try:
            self._start()
        except BaseException:
            self.close()
            raise
        return self

    def _start(self) -> None:
        from ssebench.resources import data_dir

        self.keys.mkdir(mode=0o700)
        self.ledger.mkdir(mode=0o700)
        shutil.copyfile(data_dir("configs") / "gateway" / f"{HOOKS}.py", self.home / f"{HOOKS}.py")
        state = {"keys": str(self.keys), "ledger": str(self.ledger), "prices": self.spec.to_json()["prices"]}
        (self.home / "gateway.json").write_text(json.dumps(state), encoding="utf-8")
        (self.home / "config.yaml").write_text(json.dumps(self._config()), encoding="utf-8")  # JSON is YAML
        self.port = supervise.free_port()
        argv = [str(self.command), "--config", str(self.home / "config.yaml"), "--host", "127.0.0.1"]
        with _append_log(self.log) as log:
            since = log.tell()  # this start's lines: an earlier start's stay above them
            self.proc = supervise.popen(
                [*argv, "--port", str(self.port)],
                self._env(),
                die_with_parent=True,  # a kill -9 of ssebench jobs takes the proxy with it
                cwd=self.home,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        try:
            self.seconds = supervise.wait_for_http(
                f"{self.url}/health/liveliness",
                what="the model gateway (LiteLLM's proxy)",
                timeout=START_TIMEOUT,
                gone=supervise.exited(self.proc),
                tail=lambda: _lines_since(self.log, since)[-5:],
            )
        except supervise.StartupError as error:
            tail = "; ".join(line.strip() for line in error.log_tail if line.strip())
            raise GatewayError(f"{error.message}{': ' + tail if tail else ''} (its log: {self.log})") from None

    def _config(self) -> dict[str, object]:
        provider = APIS[self.spec.api][0]
        upstream = {"model": f"{provider}/*", "api_base": self.spec.url, "api_key": f"os.environ/{self.spec.key_env}"}
        return {
            "model_list": [{"model_name": "*", "litellm_params": upstream}],
            "litellm_settings": {"callbacks": f"{HOOKS}.ledger", "telemetry": False, "drop_params": False},
            "general_settings": {"custom_auth": f"{HOOKS}.auth"},
        }

    def _env(self) -> dict[str, str]:
        """Ours, with a master key no one is told (the proxy refuses to start without one;
        the hooks never accept it) and LiteLLM's own price table from its install, offline."""
        return {
            **os.environ,
            "LITELLM_MASTER_KEY": f"sk-{secrets.token_hex(32)}",
            "LITELLM_LOCAL_MODEL_COST_MAP": "True",
            "LITELLM_LOG": "ERROR",
            "NO_COLOR": "1",
        }

    def close(self) -> None:
        """Stop the proxy (SIGTERM, SIGKILL after the grace) and remove its folder."""
        if self.proc is not None:
            supervise.stop(self.proc, STOP_GRACE)
            self.proc = None
        shutil.rmtree(self.home, ignore_errors=True)

    def __enter__(self) -> Proxy:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
