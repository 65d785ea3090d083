"""The report's figures (matplotlib, the ``bench`` extra): one PNG per section, each
carrying the command and the machine that produced it."""

from __future__ import annotations

import textwrap
from pathlib import Path

from common import Machine, Section

VARIANT_STYLE = {
    "pdb": ("tab:gray", "o", "python -m pdb"),
    "pkdb": ("tab:blue", "s", "pkdb (breakpoint skipping)"),
    "pkdb --debug-all-kernels": ("tab:red", "^", "pkdb --debug-all-kernels"),
}


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _finish(fig, machine: Machine, path: Path) -> None:
    """The caption (command, machine) under the axes, wrapped to the figure's width."""
    width = int(fig.get_figwidth() * 17)
    lines = textwrap.wrap(machine.command, width) + textwrap.wrap(
        f"{machine.cpu}, {machine.cores} cores, {machine.date}", width
    )
    fig.text(0.01, 0.005, "\n".join(lines), fontsize=6.5, color="dimgray", ha="left",
             va="bottom")  # fmt: skip
    fig.tight_layout(rect=(0, 0.012 * (len(lines) + 1) * 6.5 / fig.get_figheight(), 1, 1))
    fig.savefig(path, dpi=90)


def overhead(section: Section, machine: Machine, path: Path) -> None:
    """Figure 4's shape: wall time against size per program and thread count (top), and
    the ratio to pdb (bottom)."""
    plt = _pyplot()
    points = section.data["points"]
    subjects = list(dict.fromkeys(p["subject"] for p in points))
    fig, axes = plt.subplots(2, len(subjects), figsize=(5 * len(subjects), 6.5), squeeze=False)
    for col, subject in enumerate(subjects):
        mine = [p for p in points if p["subject"] == subject]
        for threads in sorted({p["threads"] for p in mine}):
            series = sorted((p for p in mine if p["threads"] == threads), key=lambda p: p["size"])
            sizes = [p["size"] for p in series]
            dash = {1: ":", 2: "-"}.get(threads, "--")
            tag = f"{threads} thr" if threads else "GPU"
            for variant, (color, marker, label) in VARIANT_STYLE.items():
                axes[0][col].plot(sizes, [p["median"][variant] for p in series], dash,
                                  color=color, marker=marker, label=f"{label}, {tag}")  # fmt: skip
                if variant != "pdb":
                    axes[1][col].plot(
                        sizes,
                        [p["ratios"][variant][0] for p in series],
                        dash,
                        color=color,
                        marker=marker,
                        label=f"{label}, {tag}",
                    )
        axes[0][col].set_title(f"{subject}: session wall time")
        axes[0][col].set_ylabel("seconds")
        axes[1][col].set_title(f"{subject}: pkdb / pdb (median per-round ratio)")
        for target, style in ((1.05, "b:"), (1.25, "r:")):
            axes[1][col].axhline(target, linestyle=":", color=style[0], linewidth=0.8)
        for ax in axes[:, col]:
            ax.set_xscale("log", base=2)
            ax.set_xlabel("size (heat: grid side; ewald: charges; yax_gpu: N)")
            ax.grid(alpha=0.3)
        axes[0][col].legend(fontsize=6)
    _finish(fig, machine, path)
    plt.close(fig)


def debug_space(section: Section, machine: Machine, path: Path) -> None:
    """Figures 5-7's shape: session wall time against atoms, log scale."""
    plt = _pyplot()
    points = section.data["points"]
    atoms = [p["atoms"] for p in points]
    fig, ax = plt.subplots(figsize=(6.5, 4.5))
    ax.plot(atoms, [p["debug_extrapolated"] for p in points], "o-", color="tab:gray",
            label="pdb + Debug space (extrapolated)")  # fmt: skip
    measured = [(p["atoms"], p["debug_measured"]) for p in points if "debug_measured" in p]
    if measured:
        ax.plot(*zip(*measured, strict=True), "kx", markersize=9,
                label="pdb + Debug space (measured, all steps)")  # fmt: skip
    for variant in ("pkdb", "pkdb --debug-all-kernels"):
        color, marker, label = VARIANT_STYLE[variant]
        ax.plot(atoms, [p["pkdb"][variant] for p in points], marker + "-", color=color,
                label=f"{label} (OpenMP)")  # fmt: skip
    gpu = section.data.get("gpu")
    if gpu:
        ax.plot([p["atoms"] for p in gpu], [p["pkdb"]["pkdb"] for p in gpu], "d-",
                color="tab:green", label="pkdb (pk.Cuda)")  # fmt: skip
    ax.set_yscale("log")
    ax.set_xlabel("atoms")
    ax.set_ylabel(f"session wall time, {section.data['steps']} steps (s)")
    ax.set_title("Debugging md.py: pkdb on OpenMP vs pdb on the Debug space")
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=7)
    _finish(fig, machine, path)
    plt.close(fig)


def hotswap(section: Section, machine: Machine, path: Path) -> None:
    """Table VI as bars: edit-and-rerun (t_A1 + t_A2) against hotswap (t_B) per preset."""
    plt = _pyplot()
    medians = section.data["medians"]
    names = list(medians)
    fig, ax = plt.subplots(figsize=(6.5, 4))
    xs = range(len(names))
    first = [medians[n]["A1"] for n in names]
    ax.bar([x - 0.2 for x in xs], first, 0.4, color="tab:gray", label="t_A1: run to the bug")
    ax.bar([x - 0.2 for x in xs], [medians[n]["A2"] for n in names], 0.4, bottom=first,
           color="silver", label="t_A2: edit, rerun from scratch")  # fmt: skip
    ax.bar([x + 0.2 for x in xs], [medians[n]["B"] for n in names], 0.4, color="tab:blue",
           label="t_B: hotswap, continue")  # fmt: skip
    for x, n in zip(xs, names, strict=True):
        top = max(medians[n]["A"], medians[n]["B"])
        ax.text(x, top * 1.02, f"{medians[n]['A'] / medians[n]['B']:.2f}x",
                ha="center", fontsize=8)  # fmt: skip
    ax.set_xticks(list(xs), names)
    ax.set_ylabel("seconds")
    ax.set_title(f"Hotswap vs edit-and-rerun, md.py, N = {section.data['steps']} steps")
    ax.legend(fontsize=7)
    _finish(fig, machine, path)
    plt.close(fig)


def kernels(section: Section, machine: Machine, path: Path) -> None:
    """Speed of each variant relative to the hand-written C++ (log scale)."""
    plt = _pyplot()
    variants = ["pkernels OpenMP", "hand C++ OpenMP", "Numba parallel", "NumPy", "pkernels Debug"]
    colors = ["tab:blue", "tab:gray", "tab:orange", "tab:purple", "tab:red"]
    data = section.data["kernels"]
    fig, ax = plt.subplots(figsize=(7, 4))
    width = 0.8 / len(variants)
    for k, (variant, color) in enumerate(zip(variants, colors, strict=True)):
        values = []
        for kernel in data:
            hand = kernel["variants"]["hand C++ OpenMP"]["median"]
            m = kernel["variants"].get(variant)
            values.append(hand / m["median"] if m else 0.0)
        xs = [x + (k - len(variants) / 2 + 0.5) * width for x in range(len(data))]
        ax.bar(xs, values, width, color=color, label=variant)
    ax.set_yscale("log")
    ax.axhline(1.0, color="black", linewidth=0.7)
    labels = [f"{k['name']}\n{k['size'].split(' (')[0].split(',')[0]}" for k in data]
    ax.set_xticks(range(len(data)), labels, fontsize=7)
    ax.set_ylabel("speed relative to hand C++ (median times)")
    ax.set_title("Kernel speed (above 1: faster than the hand-written C++)")
    ax.legend(fontsize=7)
    _finish(fig, machine, path)
    plt.close(fig)


DRAW = {"overhead": overhead, "overhead_gpu": overhead, "debug_space": debug_space,
        "hotswap": hotswap, "kernels": kernels}  # fmt: skip


def draw(section: Section, machine: Machine, folder: Path) -> None:
    """The section's figure into ``folder`` (nothing without matplotlib: the report says
    so)."""
    if section.figure and section.key in DRAW and section.data:
        DRAW[section.key](section, machine, folder / section.figure)
