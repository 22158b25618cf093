# SPDX-License-Identifier: MIT
"""netserve.py DIR: loopback servers for t-egress.sh.

Listens on 127.0.0.1 (two TCP ports, one UDP port), ::1 (one TCP port) and two unix
stream sockets DIR/ok.sock and DIR/deny.sock; writes NAME=PORT lines to DIR/ports once
all are listening, and one line per connection or datagram to DIR/events ("tcp_a",
"udp hello", "sock_deny", ...).  A TCP client gets a minimal HTTP reply (curl exits 0).
Runs until killed."""
import os, select, socket, sys

d = sys.argv[1]
socks = {}


def listen(name, fam, addr, kind=socket.SOCK_STREAM):
    s = socket.socket(fam, kind)
    s.bind(addr)
    if kind == socket.SOCK_STREAM:
        s.listen(16)
    socks[s] = name
    return s


a = listen("tcp_a", socket.AF_INET, ("127.0.0.1", 0))
b = listen("tcp_b", socket.AF_INET, ("127.0.0.1", 0))
v6 = listen("tcp6", socket.AF_INET6, ("::1", 0))
u = listen("udp", socket.AF_INET, ("127.0.0.1", 0), socket.SOCK_DGRAM)
listen("sock_ok", socket.AF_UNIX, os.path.join(d, "ok.sock"))
listen("sock_deny", socket.AF_UNIX, os.path.join(d, "deny.sock"))
with open(os.path.join(d, "ports.tmp"), "w") as f:
    for s, n in ((a, "TCP_A"), (b, "TCP_B"), (v6, "TCP6"), (u, "UDP")):
        f.write("%s=%d\n" % (n, s.getsockname()[1]))
os.rename(os.path.join(d, "ports.tmp"), os.path.join(d, "ports"))
ev = open(os.path.join(d, "events"), "a", buffering=1)
while True:
    for s in select.select(list(socks), [], [])[0]:
        name = socks[s]
        if name == "udp":
            data = s.recv(4096)
            ev.write("udp %s\n" % data.decode(errors="replace"))
            continue
        c, _ = s.accept()
        ev.write(name + "\n")
        c.settimeout(2)
        try:
            if name.startswith("tcp"):
                c.recv(4096)
                c.sendall(b"HTTP/1.0 200 OK\r\nContent-Length: 3\r\n\r\nok\n")
        except OSError:
            pass
        c.close()
