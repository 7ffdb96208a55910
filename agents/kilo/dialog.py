"""Kilo Code CLI ``run --format json`` → dialog events.

Kilo is a fork of opencode and prints opencode's events (``step_start``, ``text``,
``tool_use`` once a call ended, ``step_finish`` with tokens, ``error``), so the converter
is opencode's under Kilo's name.
"""

from __future__ import annotations

from ssebench.agents.opencode.dialog import OpencodeDialog


class KiloDialog(OpencodeDialog):
    agent = "kilo"
