#!/usr/bin/python3
"""Turns the CSV files of sim_experiments into the PNG plots of
docs/EXPERIMENTS.md.

    plot_experiments.py --csv_dir sim_results --out_dir docs/plots \
        --experiments staleness spikes stragglers ssp

For each experiment E it reads E_curves.csv, E_tau.csv and E_summary.csv and
writes E_accuracy.png (test accuracy and loss against simulated time),
E_tau.png (staleness histograms, runs whose tau is always 0 left out) and
E_time.png (simulated time and final accuracy per run) and, where barrier
runs exist, E_steps.png (distribution of how long each step waited).
The compression experiments (compression_*, accumulation) get
E_accuracy_progress.png (test accuracy against the fraction of the gradient
budget) instead of the tau and step plots; the ladders (compression_*) also
E_wire.png (final accuracy against the bytes pushed) and E_bars.png (wire
fraction and final accuracy per run) in place of E_time.png, since every
rung takes the same simulated time (the network is not simulated).
Needs python3 and matplotlib (Debian: python3-matplotlib).
"""
import argparse
import collections
import csv
import math
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def read_rows(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def by_run(rows):
    runs = collections.OrderedDict()
    for row in rows:
        runs.setdefault(row["run"], []).append(row)
    return runs


def as_float(text):
    try:
        return float(text)
    except ValueError:
        return math.nan


def plot_curves(name, curves, out_dir):
    fig, (acc_ax, loss_ax) = plt.subplots(1, 2, figsize=(12, 4.5))
    for run, rows in curves.items():
        t = [as_float(r["time_s"]) for r in rows]
        acc = [100 * as_float(r["test_accuracy"]) for r in rows]
        loss = [as_float(r["test_loss"]) for r in rows]
        acc_ax.plot(t, acc, marker=".", label=run)
        loss_ax.plot(t, loss, marker=".", label=run)
    acc_ax.set_xlabel("simulated time (s)")
    acc_ax.set_ylabel("test accuracy (%)")
    acc_ax.set_ylim(0, 100)
    acc_ax.grid(alpha=0.3)
    loss_ax.set_xlabel("simulated time (s)")
    loss_ax.set_ylabel("test loss (cross-entropy)")
    loss_ax.set_yscale("log")
    loss_ax.grid(alpha=0.3)
    acc_ax.legend(fontsize=8)
    fig.suptitle(f"{name}: test accuracy and loss against simulated time")
    fig.tight_layout()
    path = os.path.join(out_dir, f"{name}_accuracy.png")
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def plot_tau(name, tau, out_dir):
    # Runs with the same compute times often have identical distributions:
    # draw each distinct one once, labelled with all its runs.
    distinct = collections.OrderedDict()
    for run, rows in tau.items():
        if not any(as_float(r["tau"]) > 0 for r in rows):
            continue
        key = tuple((r["tau"], r["count"]) for r in rows)
        distinct.setdefault(key, (rows, []))[1].append(run)
    runs = [(", ".join(names), rows) for rows, names in distinct.values()]
    if not runs:
        return None
    fig, ax = plt.subplots(figsize=(9, 4.5))
    max_tau = max(as_float(r["tau"]) for _, rows in runs for r in rows)
    for run, rows in runs:
        xs = [as_float(r["tau"]) for r in rows]
        ws = [int(r["count"]) for r in rows]
        total = sum(ws)
        ax.hist(xs, bins=min(120, int(max_tau) + 1), range=(0, max_tau + 1),
                weights=[w / total for w in ws], histtype="step",
                linewidth=1.4, label=run)
    ax.set_xlabel("tau (server versions between pull and push)")
    ax.set_ylabel("fraction of pushes")
    if max_tau > 100:
        ax.set_yscale("log")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    ax.set_title(f"{name}: staleness of pushes")
    fig.tight_layout()
    path = os.path.join(out_dir, f"{name}_tau.png")
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def plot_steps(name, steps, out_dir):
    runs = [(run, rows) for run, rows in steps.items() if rows]
    if not runs:
        return None
    fig, ax = plt.subplots(figsize=(9, 4.5))
    top = max(as_float(r["duration_s"]) for _, rows in runs for r in rows)
    for run, rows in runs:
        values = sorted(as_float(r["duration_s"]) for r in rows)
        fractions = [(i + 1) / len(values) for i in range(len(values))]
        ax.step(values, fractions, where="post", label=run)
    ax.set_xlabel("step wait: time a step stayed open (simulated s)")
    ax.set_ylabel("fraction of steps (cumulative)")
    ax.set_xlim(0, top * 1.05)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    ax.set_title(f"{name}: how long each barrier step waited")
    fig.tight_layout()
    path = os.path.join(out_dir, f"{name}_steps.png")
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def plot_time(name, summary, out_dir):
    runs = [r["run"] for r in summary]
    times = [as_float(r["sim_time_s"]) for r in summary]
    accs = [100 * as_float(r["final_accuracy"]) for r in summary]
    fig, (time_ax, acc_ax) = plt.subplots(1, 2, figsize=(12, 4.5))
    time_ax.barh(runs, times, color="tab:blue")
    time_ax.set_xlabel("simulated time for the gradient budget (s)")
    time_ax.invert_yaxis()
    acc_ax.barh(runs, accs, color="tab:green")
    acc_ax.set_xlabel("final test accuracy (%)")
    low = min(a for a in accs if not math.isnan(a))
    acc_ax.set_xlim(max(0, min(low, 100) - 5), 100)
    acc_ax.invert_yaxis()
    acc_ax.set_yticklabels([])
    for ax, values, fmt in ((time_ax, times, "{:.0f}"), (acc_ax, accs, "{:.2f}")):
        for i, v in enumerate(values):
            ax.text(v, i, " " + fmt.format(v), va="center", fontsize=8)
        ax.grid(axis="x", alpha=0.3)
    fig.suptitle(f"{name}: time and accuracy per run")
    fig.tight_layout()
    path = os.path.join(out_dir, f"{name}_time.png")
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def is_compression(name):
    return name.startswith("compression") or name == "accumulation"


def plot_progress(name, curves, out_dir):
    fig, ax = plt.subplots(figsize=(10, 5))
    finals = [100 * as_float(rows[-1]["test_accuracy"]) for rows in curves.values()]
    for run, rows in curves.items():
        x = [as_float(r["progress"]) for r in rows]
        acc = [100 * as_float(r["test_accuracy"]) for r in rows]
        ladder = name.startswith("compression")
        style = "--" if ladder and "_ef" not in run and run not in ("fp32", "int8") else "-"
        ax.plot(x, acc, style, marker=".", label=run)
    ax.set_xlabel("fraction of the gradient budget")
    ax.set_ylabel("test accuracy (%)")
    low = min(f for f in finals if not math.isnan(f))
    ax.set_ylim(max(0, low - 10), min(100, max(finals) + 3))
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, ncol=2)
    note = " (dashed: no error feedback)" if name.startswith("compression") else ""
    ax.set_title(f"{name}: test accuracy along the run{note}")
    fig.tight_layout()
    path = os.path.join(out_dir, f"{name}_accuracy_progress.png")
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def plot_wire(name, summary, out_dir):
    if not summary or "push_wire_bytes" not in summary[0]:
        return None
    fig, ax = plt.subplots(figsize=(9, 5))
    for row in summary:
        wire = as_float(row["push_wire_bytes"]) / 1e6
        acc = 100 * as_float(row["final_accuracy"])
        ef = row.get("error_feedback") == "1"
        ax.scatter([wire], [acc], marker="o" if ef else "x",
                   color="tab:green" if ef else "tab:red")
        ax.annotate(row["run"], (wire, acc), fontsize=8,
                    xytext=(4, 3), textcoords="offset points")
    ax.set_xscale("log")
    ax.set_xlabel("bytes pushed over the whole run (MB, log scale; block headers included)")
    ax.set_ylabel("final test accuracy (%)")
    ax.grid(alpha=0.3, which="both")
    ax.set_title(f"{name}: accuracy against bytes on the wire "
                 "(o: error feedback, x: none)")
    fig.tight_layout()
    path = os.path.join(out_dir, f"{name}_wire.png")
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def plot_bars(name, summary, out_dir):
    runs = [r["run"] for r in summary]
    wire = [as_float(r["wire_fraction"]) for r in summary]
    accs = [100 * as_float(r["final_accuracy"]) for r in summary]
    colors = ["tab:green" if r.get("error_feedback") == "1" else "tab:red"
              for r in summary]
    fig, (wire_ax, acc_ax) = plt.subplots(1, 2, figsize=(12, 4.5))
    wire_ax.barh(runs, wire, color=colors)
    wire_ax.set_xscale("log")
    wire_ax.set_xlabel("wire bytes / fp32 bytes per push (log scale)")
    wire_ax.invert_yaxis()
    acc_ax.barh(runs, accs, color=colors)
    acc_ax.set_xlabel("final test accuracy (%)")
    low = min(a for a in accs if not math.isnan(a))
    acc_ax.set_xlim(max(0, min(low, 100) - 3), min(100, max(accs) + 3))
    acc_ax.invert_yaxis()
    acc_ax.set_yticklabels([])
    for ax, values, fmt in ((wire_ax, wire, "{:.4f}"), (acc_ax, accs, "{:.2f}")):
        for i, v in enumerate(values):
            ax.text(v, i, " " + fmt.format(v), va="center", fontsize=8)
        ax.grid(axis="x", alpha=0.3)
    fig.suptitle(f"{name}: bytes and accuracy per run "
                 "(green: error feedback, red: none)")
    fig.tight_layout()
    path = os.path.join(out_dir, f"{name}_bars.png")
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--csv_dir", required=True)
    parser.add_argument("--out_dir", required=True)
    parser.add_argument("--experiments", nargs="+",
                        default=["staleness", "spikes", "stragglers", "ssp",
                                 "compression_softmax", "compression_mlp",
                                 "accumulation"])
    args = parser.parse_args()
    os.makedirs(args.out_dir, exist_ok=True)
    for name in args.experiments:
        base = os.path.join(args.csv_dir, name)
        if not os.path.exists(base + "_curves.csv"):
            print(f"plot_experiments: no {base}_curves.csv, skipping {name}",
                  file=sys.stderr)
            continue
        if is_compression(name):
            curves = by_run(read_rows(base + "_curves.csv"))
            summary = read_rows(base + "_summary.csv")
            written = [plot_progress(name, curves, args.out_dir)]
            if name == "accumulation":
                written.append(plot_curves(name, curves, args.out_dir))
                written.append(plot_time(name, summary, args.out_dir))
            else:
                written.append(plot_wire(name, summary, args.out_dir))
                written.append(plot_bars(name, summary, args.out_dir))
            for path in written:
                if path:
                    print(f"wrote {path}")
            continue
        written = [
            plot_curves(name, by_run(read_rows(base + "_curves.csv")), args.out_dir),
            plot_tau(name, by_run(read_rows(base + "_tau.csv")), args.out_dir),
            plot_time(name, read_rows(base + "_summary.csv"), args.out_dir),
        ]
        if os.path.exists(base + "_steps.csv"):
            written.append(plot_steps(name, by_run(read_rows(base + "_steps.csv")),
                                      args.out_dir))
        for path in written:
            if path:
                print(f"wrote {path}")


if __name__ == "__main__":
    main()
