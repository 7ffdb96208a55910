"""``ssebench agents list``'s table: one row per client, each cell coloured by its meaning."""

from __future__ import annotations

from ssebench import ui


def _timeout_cell(row) -> str:
    if not row.registered:
        return "-"
    if row.client.timeout_key is None:
        return "no timeout key"
    if row.timeout_seconds is None:
        return "not set"
    return f"{row.timeout_seconds:g} s"


def print_table(rows, found, record) -> None:
    table = [("AGENT", "INSTALLED", "CONFIG", "SCOPE", "REGISTERED", "URL", "TIMEOUT", "FILE")]
    for row in rows:
        registered = "unreadable" if row.error else "yes" if row.registered else "no"
        installed, present = found[row.client.name]
        config = "yes" if present else "ssebench" if row.exists and record.ours_only(row.path) else "no"
        table.append(
            (
                row.client.name,
                {True: "yes", False: "no", None: "-"}[installed],
                config,
                row.scope.value,
                registered,
                row.url or "-",
                _timeout_cell(row),
                str(row.path) + ("" if row.exists else " (no file)"),
            )
        )
    widths = [max(len(r[i]) for r in table) for i in range(len(table[0]) - 1)]
    meaning = {"yes": "ok", "no": "dim", "-": "dim", "unreadable": "fail", "ssebench": "warn"}
    for n, r in enumerate(table):
        parts: list[str | tuple[str, str]] = []
        for i, (cell, w) in enumerate(zip(r, widths, strict=False)):
            padded = cell.ljust(w) + "  "
            if n == 0:
                parts.append((padded, "head"))
            elif i in (1, 2, 4):
                parts.append((padded, meaning.get(cell, "")))
            else:
                parts.append(padded)
        parts.append((r[-1], "head") if n == 0 else r[-1])
        ui.echo(*parts)
    if any(cell == "ssebench" for r in table[1:] for cell in r[2:3]):
        ui.echo(
            (
                "CONFIG ssebench: the config exists only because ssebench wrote it; the client itself was not found.",
                "dim",
            )
        )
