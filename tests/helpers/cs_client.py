#!/usr/bin/env python3
"""cs_client.py SOCKET REQUEST [options] - a raw client of the node engine's
socket (launcher/shared/proto.h) for tests/61-serve.bats.  Unlike `cosched status`
it sends exactly what it is told, malformed requests included.

  REQUEST       the request; Python escapes are decoded (\\x00, \\x07, \\n),
                a newline is appended unless --nonl
  --nonl        send REQUEST without the final newline, then shut down the
                writing side (a truncated request)
  --silent      connect and send nothing (REQUEST ignored: give ''); wait
                for the reply
  --many N      open N connections first, then send REQUEST on each (or
                nothing with --silent), then read every reply; prints one line
                per connection: "<k> <first reply line>" ("<k> EOF" for none,
                " [+N more lines]" appended when the reply had more)
  --timeout S   give up reading after S seconds (default 10)

Prints the reply as received (all lines).  Exit status: 0 when a reply
arrived, 2 on bad usage, 3 when the engine could not be reached, 4 on a read
timeout."""
import argparse
import socket
import sys
import time


def recv_all(s, deadline):
    data = b""
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError
        s.settimeout(left)
        try:
            b = s.recv(65536)
        except ConnectionResetError:
            break
        if not b:
            break
        data += b
    return data


def main():
    if len(sys.argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    # SOCKET and REQUEST by position: a request may look like an option
    ap = argparse.ArgumentParser(prog="cs_client.py SOCKET REQUEST")
    ap.add_argument("--nonl", action="store_true")
    ap.add_argument("--silent", action="store_true")
    ap.add_argument("--many", type=int, default=0)
    ap.add_argument("--timeout", type=float, default=10.0)
    a = ap.parse_args(sys.argv[3:])
    a.socket, a.request = sys.argv[1], sys.argv[2]
    req = a.request.encode("latin-1").decode("unicode_escape").encode("latin-1")
    if not a.nonl:
        req += b"\n"
    n = a.many or 1
    conns = []
    try:
        for _ in range(n):
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.connect(a.socket)
            conns.append(s)
    except OSError as e:
        print(f"cs_client: cannot reach {a.socket}: {e}", file=sys.stderr)
        return 3
    for s in conns:
        if a.silent:
            continue
        try:
            s.sendall(req)
            if a.nonl:
                s.shutdown(socket.SHUT_WR)
        except (BrokenPipeError, ConnectionResetError):
            # the engine cut the connection before the request was all sent
            # (busy, or a request over its limit: it replies and closes after
            # the limit, and under load that can come first); its reply, if
            # any, is what counts
            pass
        except OSError as e:
            if not a.many:
                print(f"cs_client: send: {e}", file=sys.stderr)
    deadline = time.monotonic() + a.timeout
    rc = 0
    for k, s in enumerate(conns):
        try:
            data = recv_all(s, deadline)
        except TimeoutError:
            print(f"cs_client: no reply within {a.timeout} s", file=sys.stderr)
            data, rc = b"", 4
        text = data.decode("utf-8", "replace")
        if a.many:
            ls = text.split("\n")
            if ls and ls[-1] == "":
                ls.pop()
            more = f" [+{len(ls) - 1} more lines]" if len(ls) > 1 else ""
            print(f"{k} {ls[0] if ls else 'EOF'}{more}")
        else:
            sys.stdout.write(text)
        s.close()
    return rc


sys.exit(main())
