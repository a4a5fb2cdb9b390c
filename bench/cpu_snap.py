#!/usr/bin/env python3
"""cpu_snap.py — CPU snapshots of a netns cluster for shell benchmarks
(bench/ranges_netns.sh), over bench/cluster.py's helpers.

  cpu_snap.py snap DIR   prints JSON: utime + stime (s) of the processes
                         infra/netns-cluster.sh started (DIR/pids), summed
                         by kind (meta, osd, gw) and per process ("nI ROLE"),
                         and /proc/stat's busy and
                         total jiffies over every core

delta(s0, s1) (for a caller importing this module): CPU seconds by kind
between two snapshots and the cores' busy share over the interval.
Figures only; reads /proc, changes nothing.
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cluster  # noqa: E402


def snap(d):
    if os.path.isfile(d):   # DIR/pids named itself
        d = os.path.dirname(d)
    kinds = cluster.cluster_pids(d)
    busy, total = cluster.machine_busy()
    procs = {}
    with open(os.path.join(d, "pids")) as f:
        for line in f:
            parts = line.split()   # "nI ROLE PID"
            if len(parts) == 3:
                procs["%s %s" % (parts[0], parts[1])] = cluster.proc_cpu(int(parts[2]))
    return {"cpu_s": {k: sum(cluster.proc_cpu(p) for p in ps) for k, ps in kinds.items()},
            "procs": procs, "busy": busy, "total": total, "cores": os.cpu_count()}


def delta(s0, s1):
    dt = s1["total"] - s0["total"]
    return {"cpu_s": {k: v - s0["cpu_s"].get(k, 0.0) for k, v in s1["cpu_s"].items()},
            "procs": {k: v - s0.get("procs", {}).get(k, 0.0) for k, v in s1.get("procs", {}).items()},
            "busy": (s1["busy"] - s0["busy"]) / dt if dt else 0.0, "cores": s1["cores"]}


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] != "snap":
        sys.exit("usage: cpu_snap.py snap DIR")
    json.dump(snap(sys.argv[2]), sys.stdout)
