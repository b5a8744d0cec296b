#!/usr/bin/env python3
# checkpoint.py FILE CPU_SECONDS: a job that saves its state when told to stop,
# as HPC codes do on Slurm's SIGTERM.  It writes "ready" to FILE once its
# handler is in place, spins until SIGTERM, then writes "term" to FILE, spends CPU_SECONDS of its own CPU time (the checkpoint),
# appends "done" and exits 0.
import os, signal, sys, time

path, need = sys.argv[1], float(sys.argv[2])


def put(text):
    with open(path, "a") as f:
        f.write(text + "\n")


def term(sig, frame):
    t0 = time.process_time()
    put("term")
    while time.process_time() - t0 < need:
        pass
    put("done")
    sys.exit(0)


signal.signal(signal.SIGTERM, term)
put("ready")
while True:
    pass
