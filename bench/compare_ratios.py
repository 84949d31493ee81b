#!/usr/bin/env python3
"""Per-figure speed-ups from alternated throughput_bench runs.

    bench/compare_ratios.py BASE_1 HEAD_1 [BASE_2 HEAD_2 ...]

Each argument is the output of `throughput_bench --format=markdown` (for
instance the files bench/compare_commits.sh keeps under results/), given
round by round: a base run, then the head run of the same round. For
every figure both sides report (dense: GB/s of each cluster column; sparse:
GB/s of each op, key set and cluster) it prints HEAD / BASE of each pair and
their median. Older benchmark builds print other columns beside these; only
the GB/s columns are read, by their headers.
"""
import statistics
import sys


def figures(path):
    """{(section, op, size or keys, cluster): GB/s} of one run's tables."""
    out = {}
    header = None
    with open(path, encoding="utf-8") as f:
        for line in f:
            if not line.startswith("|"):
                header = None
                continue
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if cells[0] == "op":
                header = cells
                continue
            if header is None or cells[0].startswith(":"):
                continue
            if header[1] == "size" and cells[0] in ("push", "pull"):
                for i, name in enumerate(header):
                    if name.endswith(" GB/s") and "shard" in name:
                        out[("dense", cells[0], cells[1], name[:-5])] = float(cells[i])
            elif header[1] == "keys" and "GB/s" in header:
                out[("sparse", cells[0], cells[1], cells[2])] = float(
                    cells[header.index("GB/s")])
    return out


def main(argv):
    if len(argv) < 2 or len(argv) % 2 != 0:
        sys.exit(__doc__)
    pairs = [(figures(argv[i]), figures(argv[i + 1]))
             for i in range(0, len(argv), 2)]
    for key in pairs[0][1]:
        if not all(key in base and key in head for base, head in pairs):
            continue
        ratios = [head[key] / base[key] for base, head in pairs]
        print(f"{' '.join(key):44s} "
              + " ".join(f"{r:.2f}" for r in ratios)
              + f"  median {statistics.median(ratios):.2f}")


if __name__ == "__main__":
    main(sys.argv[1:])
