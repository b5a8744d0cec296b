#!/usr/bin/env python3
# pinself.py widen|hold: a job that pins itself where it starts, as GROMACS and
# LLVM's OpenMP runtime do while they probe the machine (they set each
# thread's affinity to the mask it started with).  It waits until it runs
# folded (on a crowded machine it may run before its first step), pins
# itself, writes the CPUs it pinned to in a.first and its pid in a.pid
# (each atomically), then
#   widen: spins until the kernel (sched_getaffinity) gives it more CPUs:
#          prints "widened to LIST", exit 0; after 60 s "still on LIST", exit 3
#   hold:  sleeps 120 s (for a test that kills cosched meanwhile)
import os, sys, time

def put(path, text):
    with open(path + ".tmp", "w") as f:
        f.write(text)
    os.rename(path + ".tmp", path)

def cpus():
    return ",".join(map(str, sorted(os.sched_getaffinity(0))))

t0 = time.monotonic()
while len(os.sched_getaffinity(0)) >= os.cpu_count() and time.monotonic() - t0 < 30:
    time.sleep(0.02)
os.sched_setaffinity(0, os.sched_getaffinity(0))
first = len(os.sched_getaffinity(0))
put("a.first", cpus() + "\n")
put("a.pid", "%d\n" % os.getpid())
if sys.argv[1:] == ["hold"]:
    time.sleep(120)
    sys.exit(0)
t = time.monotonic()
while time.monotonic() - t < 60:
    if len(os.sched_getaffinity(0)) > first:
        print("widened to", cpus())
        sys.exit(0)
    sum(range(20000))
print("still on", cpus())
sys.exit(3)
