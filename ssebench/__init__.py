"""ssebench: let a coding agent check its own vulnerability fix while it works.

The distribution installs one import namespace. ``ssebench/`` holds the core (task
file, difficulty rule, daemon, grading, CLI); the top-level folders ``server/`` and
``agents/`` are ``ssebench.server`` and ``ssebench.agents`` through the committed
symlinks ``ssebench/server`` and ``ssebench/agents`` (pyproject.toml says how the wheel
and the editable install treat them).
"""

__version__ = "0.1.0"
