"""Datasets of tasks: content hashes, ``ssebench.lock`` (lock, verify), the verdict
cache, and ``dataset import`` from a public benchmark's records (docs/datasets.md)."""
