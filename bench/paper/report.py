"""The markdown report: the machine and command, then each section's table, notes,
verdicts and figure."""

from __future__ import annotations

from pathlib import Path

from common import Machine, Section


def table(header: list[str], rows: list[list[str]]) -> str:
    cells = [header, ["---"] * len(header), *rows]
    return "\n".join("| " + " | ".join(c.replace("|", "\\|") for c in row) + " |"
                     for row in cells)  # fmt: skip


def render(sections: list[Section], machine: Machine, revision: str, skipped: list[str]) -> str:
    lines = [
        "# The PKDB paper's evaluation, on pkernels + pkdb",
        "",
        f"Made by `{machine.command}` at revision {revision}, {machine.date}, on "
        f"{machine.cpu} ({machine.cores} cores, Python {machine.python}; load average at the "
        f"start {machine.load}). Every figure's footer repeats the command and the machine.",
        "",
        "Verdicts: PASS/MISS against the project's targets; the paper's figures are quoted "
        "beside ours for comparison, not as targets.",
    ]
    if skipped:
        lines += ["", "Not run: " + "; ".join(skipped) + "."]
    for section in sections:
        lines += ["", f"## {section.title}", "", table(section.header, section.rows), ""]
        lines += [f"{note}" for note in section.notes]
        if section.verdicts:
            lines += [""] + [f"- {v}" for v in section.verdicts]
        if section.figure and Path(section.figure).suffix == ".png":
            lines += ["", f"![{section.title}]({section.figure})"]
    return "\n".join(lines).replace("\n\n\n", "\n\n") + "\n"
