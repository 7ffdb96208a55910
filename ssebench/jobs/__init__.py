"""``ssebench jobs``: many runs of ``ssebench run`` under one scheduler, resumable, one report (docs/jobs.md)."""
