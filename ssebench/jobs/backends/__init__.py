"""One file per backend (docs/jobs.md, "Backends"): local, docker, kubernetes."""
