#!/usr/bin/env python3
"""A/B of two extentdb builds on one `bench` command, the way docs/benchmarks.md compares them.

This machine's speed swings by up to 1.7x from one minute to the next, so a build is never
compared with figures from another time. Two methods, each giving per-run figures and the
median ratio:

  --pairs N      N rounds, each running build A then build B (alternating which goes first),
                 one at a time: rows/s ratio B/A per round.
  --together N   N rounds, each starting both builds at once, so both see the same phase of
                 the machine: CPU per row ratio A/B (the fairer figure when both share the
                 cores; rows/s is printed too).

The command must accept --json and print one JSON object with rows_per_s (and cpu_us_per_row
for --together), as `bench insert` and `bench tsql` do. Where it also has vs_baseline (`bench
insert`'s in-process baseline), each run prints it with the cache line's round trip between
the CPUs, and --pairs also prints the median B/A of that ratio: each run measured against the
machine of its own minute. Each build compiles the baseline into its own binary, where code
placement can move it by a few per cent (docs/benchmarks.md, thirty-third session): decide
between builds by rows/s and CPU per row.

Example, from the repository root, with the change uncommitted:
  d=$(mktemp -d)
  cargo build --release -p extentdb && cp target/release/extentdb "$d/b"
  git stash && cargo build --release -p extentdb && cp target/release/extentdb "$d/a"
  git stash pop
  scripts/ab.py "$d/a" "$d/b" --pairs 8 -- bench insert --sessions 16 --files 1 --rows 400000
"""

import argparse
import json
import statistics
import subprocess
import sys


def run_one(binary, command):
    out = subprocess.run([binary, *command, "--json"], capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def start(binary, command):
    return subprocess.Popen(
        [binary, *command, "--json"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
    )


def finish(process):
    stdout, _ = process.communicate()
    if process.returncode != 0:
        sys.exit(f"a run failed with exit code {process.returncode}")
    return json.loads(stdout)


def describe(result):
    cpu = result.get("cpu_us_per_row")
    cpu_text = f", {cpu:.2f} us CPU per row" if cpu is not None else ""
    return f"{result['rows_per_s']:,.0f} rows/s{cpu_text}{describe_baseline(result)}"


def describe_baseline(result):
    """`bench insert`'s in-process baseline, where the run has one: the load's rate over the
    baseline's, and a cache line's round trip between the CPUs before and after the load."""
    ratio = result.get("vs_baseline")
    if ratio is None:
        return ""
    baseline = result["baseline"]
    trips = (baseline.get("round_trip_before_ns"), baseline.get("round_trip_after_ns"))
    trip_text = f", round trip {trips[0]:.0f}/{trips[1]:.0f} ns" if None not in trips else ""
    return f", {ratio:.3f} of the baseline{trip_text}"


def pairs(a, b, rounds, command):
    ratios = []
    baseline_ratios = []
    for round_no in range(rounds):
        order = ("a", "b") if round_no % 2 == 0 else ("b", "a")
        results = {name: run_one({"a": a, "b": b}[name], command) for name in order}
        ratio = results["b"]["rows_per_s"] / results["a"]["rows_per_s"]
        ratios.append(ratio)
        if results["a"].get("vs_baseline") and results["b"].get("vs_baseline"):
            baseline_ratios.append(results["b"]["vs_baseline"] / results["a"]["vs_baseline"])
        print(
            f"round {round_no + 1}: A {describe(results['a'])}; B {describe(results['b'])}; "
            f"rows/s B/A {ratio:.3f}",
            flush=True,
        )
    wins = sum(r > 1 for r in ratios)
    print(f"median rows/s B/A {statistics.median(ratios):.3f} (B faster in {wins} of {rounds})")
    if len(baseline_ratios) == rounds:
        wins = sum(r > 1 for r in baseline_ratios)
        print(
            f"median of B/A of each run's rate over its own baseline "
            f"{statistics.median(baseline_ratios):.3f} (B higher in {wins} of {rounds})"
        )


def together(a, b, rounds, command):
    cpu_ratios = []
    for round_no in range(rounds):
        order = ("a", "b") if round_no % 2 == 0 else ("b", "a")
        processes = {name: start({"a": a, "b": b}[name], command) for name in order}
        results = {name: finish(process) for name, process in processes.items()}
        cpu_a, cpu_b = results["a"].get("cpu_us_per_row"), results["b"].get("cpu_us_per_row")
        if cpu_a is None or cpu_b is None:
            sys.exit("--together needs cpu_us_per_row in the JSON output")
        cpu_ratios.append(cpu_a / cpu_b)
        print(
            f"round {round_no + 1}: A {describe(results['a'])}; B {describe(results['b'])}; "
            f"CPU per row A/B {cpu_a / cpu_b:.3f}",
            flush=True,
        )
    lower = sum(r > 1 for r in cpu_ratios)
    print(
        f"median CPU per row A/B {statistics.median(cpu_ratios):.3f} "
        f"(B used less in {lower} of {rounds})"
    )


def main():
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], usage="%(prog)s A B (--pairs N | --together N) -- COMMAND"
    )
    parser.add_argument("a", help="build A (the baseline): a path to an extentdb binary")
    parser.add_argument("b", help="build B (the change)")
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--pairs", type=int, metavar="N", help="N alternating rounds, one at a time")
    mode.add_argument("--together", type=int, metavar="N", help="N rounds, both builds at once")
    argv = sys.argv[1:]
    split = argv.index("--") if "--" in argv else len(argv)
    args = parser.parse_args(argv[:split])
    command = argv[split + 1 :]
    if not command:
        parser.error("give the bench command after --")
    if args.pairs is not None:
        pairs(args.a, args.b, args.pairs, command)
    else:
        together(args.a, args.b, args.together, command)


if __name__ == "__main__":
    main()
