#!/usr/bin/env python3
"""trace_check.py - assertions over a cosched --trace file (JSON lines).

    trace_check.py TRACE gang  CPUS          every step runs exactly one job, on all of CPUS
    trace_check.py TRACE tft   CPUS          every step runs at most two jobs, disjoint halves of CPUS
                                             (exactly two whenever two or more jobs were live)
    trace_check.py TRACE linux CPUS          every live job runs on all of CPUS in every step
    trace_check.py TRACE shares TOL [STAT]   in full steps, running jobs used >= (1-TOL) of the CPU
                                             time available to them (below) summed over the steps, and
                                             each >= a tenth of it in every step; at most (1+TOL) of
                                             their cpus x duration; frozen ~0
    trace_check.py TRACE fair MAXDIFF        quanta run per job differ by at most MAXDIFF, counted
                                             over the steps in which every job was live
    trace_check.py TRACE steps               print the number of steps
    trace_check.py TRACE apart NJOBS [HOW]   space sharing: no fallback plan, the running jobs' cpus
                                             are disjoint in every step, and NJOBS distinct jobs ran.
                                             HOW: "pairs" (also allowed: exactly two jobs sharing one
                                             identical cpu list), "time" (jobs 1 and 2 never in one
                                             step), "llc" (jobs 1 and 2 never both on cpu 0 or both
                                             on cpu 1: the synthetic shape l3:2 core:1)

CPUS is a list like 0-1.  Exit 1 with a message naming the step on failure.
Steps cut short by a job's end (end-start < 0.9 planned) are skipped by
'shares'; the first running step of a job (exec, start-up) is skipped too.
'shares' holds the running jobs to 1-TOL of the plan over all steps together
and to a tenth of it in each step (it ran): a burst of load from outside the
test (other work on a 2-core CI machine) can take a single step's CPU, and
failed one step by a thousandth while the run as a whole followed the plan.

The CPU time available to a running job is its cpus x the step's duration,
times the share of the machine that the rest of the machine left to the run:
STAT (jobs.bash: stat_mark before and after the run) holds two "cpu" lines of
/proc/stat; what the whole machine did between them less what the trace's
jobs used is the others' CPU (other work, the test itself, cosched), and
available = 1 - others / (cpus x wall).  On a quiet machine that is ~1; with
two CPU hogs beside a run on 2 cores, ~0.5, and the jobs get about that
(cosched(1) freezes and confines the jobs, it does not reserve cpus for them).
Without STAT the whole machine counts as available.
"""
import os
import json
import sys


def cpulist(s):
    out = set()
    for part in filter(None, s.split(",")):
        if "-" in part:
            a, b = part.split("-")
            out.update(range(int(a), int(b) + 1))
        else:
            out.add(int(part))
    return out


def fail(msg):
    print("trace_check: " + msg, file=sys.stderr)
    sys.exit(1)


def read_steps(path, who="trace_check"):
    """The step records of the trace at path, in order (also for 35-counters'
    counters_check); a line that is not JSON: exit 1 naming it, after who."""
    steps = []
    with open(path) as f:
        for n, line in enumerate(f, 1):
            try:
                obj = json.loads(line)
            except ValueError as e:
                print("%s: %s:%d: not JSON: %s" % (who, path, n, e), file=sys.stderr)
                sys.exit(1)
            if obj.get("type") == "step":
                steps.append(obj)
    return steps


def main():
    path, what = sys.argv[1], sys.argv[2]
    arg = sys.argv[3] if len(sys.argv) > 3 else None
    steps = read_steps(path)
    if not steps:
        fail("no steps in " + path)
    if what == "steps":
        print(len(steps))
        return
    if what in ("gang", "tft", "linux"):
        cpus = cpulist(arg)
        for s in steps:
            if s["fallback"]:
                fail("step %d: fallback plan" % s["seq"])
            running = [j for j in s["jobs"] if j["state"] == "run"]
            if what == "gang":
                if len(running) != 1:
                    fail("step %d: %d jobs running, want 1: %s" % (s["seq"], len(running), s["jobs"]))
                if cpulist(running[0]["cpus"]) != cpus:
                    fail("step %d: job %d on %s, want %s" % (s["seq"], running[0]["id"], running[0]["cpus"], arg))
            elif what == "linux":
                for j in s["jobs"]:
                    if j["state"] != "run" or cpulist(j["cpus"]) != cpus:
                        fail("step %d: job %d %s on %s" % (s["seq"], j["id"], j["state"], j["cpus"]))
            else:
                live = len(s["jobs"])
                want = 1 if live == 1 else 2
                if len(running) != want:
                    fail("step %d: %d jobs running of %d live, want %d" % (s["seq"], len(running), live, want))
                if want == 2:
                    a, b = (cpulist(j["cpus"]) for j in running)
                    if a & b:
                        fail("step %d: halves overlap: %s" % (s["seq"], running))
                    if a | b != cpus or abs(len(a) - len(b)) > 1:
                        fail("step %d: not two halves of %s: %s" % (s["seq"], arg, running))
        return
    if what == "shares":
        tol = float(arg)
        avail = available(steps, sys.argv[4]) if len(sys.argv) > 4 else 1.0
        seen = set()
        checked = 0
        got_all = want_all = 0.0
        for s in steps:
            dur = s["end"] - s["start"]
            full = dur >= 0.9 * s["planned"]
            for j in s["jobs"]:
                first = j["state"] == "run" and j["id"] not in seen
                if j["state"] == "run":
                    seen.add(j["id"])
                if not full or first:
                    continue
                if j["state"] == "frozen":
                    if j["cpu_s"] > tol * dur:
                        fail("step %d: frozen job %d used %.3f s of CPU in %.3f s" % (s["seq"], j["id"], j["cpu_s"], dur))
                elif j["state"] == "run":
                    want = len(cpulist(j["cpus"])) * dur
                    if j["cpu_s"] < 0.1 * avail * want:
                        fail("step %d: running job %d used %.3f s of CPU, want >= %.3f (a tenth of %d cpus x %.3f s"
                             " x %.2f available)"
                             % (s["seq"], j["id"], j["cpu_s"], 0.1 * avail * want, len(cpulist(j["cpus"])), dur, avail))
                    got_all += j["cpu_s"]
                    want_all += avail * want
                    if j["cpu_s"] > (1 + tol) * want + 0.02:
                        fail("step %d: running job %d used %.3f s of CPU, more than its %d cpus x %.3f s"
                             % (s["seq"], j["id"], j["cpu_s"], len(cpulist(j["cpus"])), dur))
                    checked += 1
        if checked < 2:
            fail("only %d full running steps to check" % checked)
        if got_all < (1 - tol) * want_all:
            fail("running jobs used %.3f s of CPU in all, want >= %.3f (their cpus x their steps' durations"
                 " x %.2f available)" % (got_all, (1 - tol) * want_all, avail))
        print("checked %d running steps; %.2f of the machine was available to the run" % (checked, avail))
        return
    if what == "fair":
        maxdiff = int(arg)
        runs = {}
        most = max(len(s["jobs"]) for s in steps)
        for s in steps:
            if len(s["jobs"]) < most:   # only while every job is live
                continue
            for j in s["jobs"]:
                runs.setdefault(j["id"], 0)
                if j["state"] == "run":
                    runs[j["id"]] += 1
        if max(runs.values()) - min(runs.values()) > maxdiff:
            fail("quanta run per job differ by more than %d: %s" % (maxdiff, runs))
        print(runs)
        return
    if what == "apart":
        apart(steps, int(arg), sys.argv[4] if len(sys.argv) > 4 else "")
        return
    fail("unknown check " + what)


def available(steps, statfile):
    """The share of the machine's CPU time left to the run (module doc)."""
    with open(statfile) as f:
        marks = [[int(x) for x in line.split()[1:]] for line in f if line.startswith("cpu ")]
    if len(marks) != 2:
        fail("%s: want two 'cpu' lines of /proc/stat (stat_mark before and after the run), got %d"
             % (statfile, len(marks)))
    d = [b - a for a, b in zip(*marks)]
    hz = os.sysconf("SC_CLK_TCK")
    # user nice system idle iowait irq softirq steal (guest time is in user)
    total = sum(d[:8]) / hz
    busy = total - (d[3] + d[4]) / hz
    jobs = sum(j["cpu_s"] for s in steps for j in s["jobs"])
    others = max(0.0, busy - jobs)
    avail = 1 - others / total if total > 0 else 1.0
    return min(1.0, max(avail, 0.05))


def apart(steps, njobs, how):
    if how not in ("", "pairs", "time", "llc"):
        fail("apart: HOW is pairs, time or llc, not '%s'" % how)
    ran = set()
    for s in steps:
        if s["fallback"]:
            fail("step %d: fallback plan" % s["seq"])
        run = [j for j in s["jobs"] if j["state"] == "run"]
        ids = {j["id"]: cpulist(j["cpus"]) for j in run}
        ran.update(ids)
        for i, a in enumerate(run):
            for b in run[i + 1:]:
                ca, cb = cpulist(a["cpus"]), cpulist(b["cpus"])
                if not ca & cb:
                    continue
                if how != "pairs" or ca != cb:
                    fail("step %d: jobs %d and %d overlap: %s / %s" % (s["seq"], a["id"], b["id"], a["cpus"], b["cpus"]))
                if sum(1 for c in run if cpulist(c["cpus"]) & ca) != 2:
                    fail("step %d: more than a pair on %s" % (s["seq"], a["cpus"]))
        if how == "time" and 1 in ids and 2 in ids:
            fail("step %d: group-1 job 1 and group-2 job 2 run together" % s["seq"])
        if how == "llc" and 1 in ids and 2 in ids and ids[1] & ids[2] & {0, 1}:
            fail("step %d: jobs 1 and 2 share an LLC: %s / %s" % (s["seq"], sorted(ids[1]), sorted(ids[2])))
    if len(ran) != njobs:
        fail("jobs that ran: %s, want %d" % (sorted(ran), njobs))
    print("%d steps, %d jobs ran" % (len(steps), len(ran)))


if __name__ == "__main__":
    main()
