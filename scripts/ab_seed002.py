#!/usr/bin/env python3
"""A/B of two extentdb builds (or two option sets) on `bench seed002 --rule 2022 --growth 64MB`.

Runs them alternately, one at a time, N rounds (each round starting with the next build), and
prints each run's duration, the inserting session's CPU seconds and vs_raw, then the median
ratio of session CPU A/B (above 1: B used less). `--also C` adds a build to every round,
compared with A the same way. `bench seed002` prints a table, not JSON, so
scripts/ab.py does not serve it.

  scripts/ab_seed002.py A B N [--a-args "..."] [--b-args "..."] [--also C ...] [-- extra bench args]

Examples, from the repository root:
  scripts/ab_seed002.py /tmp/old/extentdb target/release/extentdb 6
  scripts/ab_seed002.py target/release/extentdb target/release/extentdb 6 \\
      --b-args "--affinity-mask 1 --affinity-io-mask 2"
"""

import argparse
import shlex
import statistics
import subprocess
import sys


def run(binary, extra):
    command = [binary, "bench", "seed002", "--rule", "2022", "--growth", "64MB", *extra]
    out = subprocess.run(command, capture_output=True, text=True, check=True).stdout
    row = next(line.split() for line in out.splitlines() if line.startswith("2022"))
    return {"duration_s": float(row[2]), "session_cpu_s": float(row[-1]), "vs_raw": float(row[-3])}


def describe(result):
    return (
        f"{result['duration_s']:.2f} s (session CPU {result['session_cpu_s']:.2f}, "
        f"vs_raw {result['vs_raw']:.2f})"
    )


def main():
    argv = sys.argv[1:]
    split = argv.index("--") if "--" in argv else len(argv)
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("a", help="build A (the baseline)")
    parser.add_argument("b", help="build B")
    parser.add_argument("rounds", type=int)
    parser.add_argument("--a-args", default="", help="options for A's runs only")
    parser.add_argument("--b-args", default="", help="options for B's runs only")
    parser.add_argument(
        "--also", action="append", default=[], metavar="BUILD",
        help="a further build run in each round, compared with A like B (repeatable)",
    )
    args = parser.parse_args(argv[:split])
    common = argv[split + 1 :]
    setups = {"A": (args.a, shlex.split(args.a_args) + common),
              "B": (args.b, shlex.split(args.b_args) + common)}
    for n, build in enumerate(args.also):
        setups[chr(ord("C") + n)] = (build, common)
    names = list(setups)
    results = {name: [] for name in names}
    for round_no in range(args.rounds):
        # Each round starts with the next build, so that none always runs first.
        shift = round_no % len(names)
        order = names[shift:] + names[:shift]
        for name in order:
            results[name].append(run(*setups[name]))
        runs = "; ".join(f"{name} {describe(results[name][-1])}" for name in names)
        print(f"round {round_no + 1}: {runs}", flush=True)
    for name in names[1:]:
        ratios = [a["session_cpu_s"] / x["session_cpu_s"] for a, x in zip(results["A"], results[name])]
        print(
            f"median session CPU A/{name} {statistics.median(ratios):.3f} ({name} used less in "
            f"{sum(r > 1 for r in ratios)} of {args.rounds}); median duration "
            f"A {statistics.median(r['duration_s'] for r in results['A']):.2f} s, "
            f"{name} {statistics.median(r['duration_s'] for r in results[name]):.2f} s"
        )


if __name__ == "__main__":
    main()
