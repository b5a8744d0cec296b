#!/usr/bin/env python3
"""stub_engine.py SOCKET LOG [REPLY] - a stand-in for `cosched serve` that
only speaks the socket protocol (launcher/shared/proto.h): it appends every request
to LOG, followed for register by the registering pid's /proc/PID/cgroup lines
(prefixed "cgroup ") and its Cpus_allowed_list ("cpus "), and answers REPLY
(default "OK id=<n> policy=<policy of the request>"; "ERR ..." to refuse;
HANG to accept and never answer; ERR_AFTER_FIRST: the first registration OK,
every later one refused; HANG_DEREG: registrations OK, deregistrations never
answered; BADPAGE: registrations OK with omp_page=1 and a descriptor that is
not an engine's page - a memfd of the page's name and size, but unsealed).
For the plugin's tests (tests/60-slurm-plugin.bats); the real engine's tests
use the real engine."""
import os
import socket
import sys

path, log = sys.argv[1], sys.argv[2]
reply = sys.argv[3] if len(sys.argv) > 3 else None
try:
    os.unlink(path)
except FileNotFoundError:
    pass
srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
srv.bind(path)
os.chmod(path, 0o666)
srv.listen(16)
n = 0
while True:
    c, _ = srv.accept()
    data = b""
    while not data.endswith(b"\n"):
        b = c.recv(4096)
        if not b:
            break
        data += b
    line = data.decode(errors="replace").strip()
    kv = dict(w.split("=", 1) for w in line.split()[2:] if "=" in w)
    extra = []
    if " register " in f" {line} " and "pid" in kv:
        try:
            with open(f"/proc/{kv['pid']}/cgroup") as f:
                extra += ["cgroup " + l.strip() for l in f]
            with open(f"/proc/{kv['pid']}/status") as f:
                extra += ["cpus " + l.split(":", 1)[1].strip() for l in f if l.startswith("Cpus_allowed_list")]
        except OSError as e:
            extra.append(f"proc-error {e}")
    with open(log, "a") as f:
        f.write(line + "\n")
        for e in extra:
            f.write(e + "\n")
    verb = line.split()[1:2]
    if reply == "HANG" or (reply == "HANG_DEREG" and verb == ["deregister"]):
        hung = globals().setdefault("hung", [])
        hung.append(c)        # keep the connection open, answer nothing
        continue
    if reply == "ERR_AFTER_FIRST" and verb == ["register"] and n >= 1:
        out = "ERR refused for the test"
    elif reply is not None and reply not in ("ERR_AFTER_FIRST", "HANG_DEREG", "BADPAGE"):
        out = reply
    elif verb == ["register"]:
        n += 1
        out = f"OK id={n} policy={kv.get('policy', 'none')}"
    else:
        out = "OK"
    if reply == "BADPAGE" and verb == ["register"]:
        fd = os.memfd_create("cosched-omp-page")
        os.ftruncate(fd, 4096)
        socket.send_fds(c, [(out + " omp_page=1\n").encode()], [fd])
        os.close(fd)
    else:
        c.sendall((out + "\n").encode())
    c.close()
