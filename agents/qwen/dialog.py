"""Qwen Code ``-p --output-format stream-json`` → dialog events.

Qwen Code prints Claude Code's stream-json shape: ``system`` (``init``), ``assistant``
messages with ``text``/``thinking``/``tool_use`` blocks, ``user`` messages carrying
``tool_result`` blocks and a closing ``result`` with usage and duration, so the Claude
converter reads it; only the agent name differs.
"""

from __future__ import annotations

from ssebench.agents.claude.dialog import ClaudeDialog


class QwenDialog(ClaudeDialog):
    agent = "qwen"
