"""The model gateway of a job (``[gateway]`` in a job file; docs/jobs.md, "The model gateway").

LiteLLM's proxy, started per job on 127.0.0.1 between every agent and its model vendor: one key
per run, each request's tokens and cost counted, the run's budget (``max_cost``, ``max_tokens``)
enforced. ``spec`` reads the job file's keys, ``proxy`` starts and stops the proxy, ``ledger``
turns what it counted into the run's record.
"""
