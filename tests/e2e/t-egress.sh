#!/bin/bash
# SPDX-License-Identifier: MIT
# t-egress.sh - [network] enforcement (issue 3 item 3; bbx-policy(5)) by real programs
# (curl, python3) against loopback servers this test starts (tests/e2e/netserve.py:
# TCP on 127.0.0.1 and ::1, UDP on 127.0.0.1, two unix stream sockets), under the
# fixture policies tests/policy/net-*.ini.  A refusal must fail the program's call with
# ECONNREFUSED, reach no server (the server logs every connection and datagram), print
# one "bbx: refused connection to ADDR" line and leave a DENY record with that ADDR; an
# allowed egress must work and leave a NET record.  Records are read with
# tests/e2e/netrec.py (the binary format), independent of bbx-log's text.
. "${BBX_SRCDIR:?is set by make check (tests/local.mk)}/tests/e2e/lib.sh" || exit 99
plan 43

PY=$(python3 -c 'import sys; print(sys.executable)')
SRV="$T_TMP/srv"
mkdir -p "$SRV"
"$PY" "$BBX_SRCDIR/tests/e2e/netserve.py" "$SRV" 2>"$SRV/err" &
SRV_PID=$!
trap 'kill $SRV_PID 2>/dev/null; rm -rf "$T_TMP"' EXIT
for _ in $(seq 100); do [ -e "$SRV/ports" ] && break; sleep 0.05; done
[ -e "$SRV/ports" ]
ok $? "loopback servers listening"
. "$SRV/ports" # TCP_A TCP_B TCP6 UDP
SOCK_OK=$(realpath "$SRV/ok.sock")
SOCK_DENY=$(realpath "$SRV/deny.sock")
touch "$SRV/events"

# fixture NAME: tests/policy/NAME.ini with @VAR@ filled in, into $T_TMP.
fixture() {
	sed -e "s|@TCP_A@|$TCP_A|g; s|@TCP_B@|$TCP_B|g; s|@TCP6@|$TCP6|g; s|@UDP@|$UDP|g" \
		-e "s|@SOCK_OK@|$SOCK_OK|g; s|@SOCK_DENY@|$SOCK_DENY|g" \
		"$BBX_SRCDIR/tests/policy/$1.ini" >"$T_TMP/$1.ini"
	echo "$T_TMP/$1.ini"
}
PORT=$(fixture net-port)
CIDR=$(fixture net-cidr)
HOSTP=$(fixture net-host)
AUDIT=$(fixture net-audit)

# The client: python3 client.py KIND TARGET [COUNT]; prints the first reply line, or
# "errno N NAME" and exits 1.
cat >"$T_TMP/client.py" <<'PYEOF'
import errno, socket, sys
kind, target = sys.argv[1], sys.argv[2]
try:
    if kind == "unix":
        s = socket.socket(socket.AF_UNIX)
        s.connect(target)
        print("connected")
        sys.exit(0)
    host, port = target.rsplit(":", 1)
    host, port = host.strip("[]"), int(port)
    if kind == "tcp":  # through getaddrinfo (a name, or a number it does not resolve)
        s = socket.create_connection((host, port), timeout=3)
    elif kind == "tcpnum":  # no lookup at all
        s = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
        s.settimeout(3)
        s.connect((host, port))
    elif kind == "udp":
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        for i in range(int(sys.argv[3]) if len(sys.argv) > 3 else 1):
            s.sendto(b"hello", (host, port))
        print("sent")
        sys.exit(0)
    s.sendall(b"GET / HTTP/1.0\r\n\r\n")
    print(s.recv(100).decode().split("\r\n")[0])
except OSError as e:
    print("errno", e.errno, errno.errorcode.get(e.errno, "?"))
    sys.exit(1)
PYEOF

# run POLICY CMD...: under bbx-run in a fresh workspace; output in $T_TMP/o, stderr in
# $T_TMP/e, the journal in $J, the exit status returned.
N=0
run() {
	local p=$1
	shift
	N=$((N + 1))
	J="$T_TMP/j.$N"
	W=$(new_ws)
	(cd "$W" && bbx-run --quiet --policy "$p" --journal "$J" -- "$@") >"$T_TMP/o" 2>"$T_TMP/e"
}
# events: how many times the server saw NAME (a line of $SRV/events starting with it).
events() { sleep 0.2; grep -c "^$1" "$SRV/events"; }
recs() { "$PY" "$BBX_SRCDIR/tests/e2e/netrec.py" "$J"; }
# has PATTERN: a DENY/NET/RESOLVE record of $J matches the extended regex.
has() {
	local r
	r=$(recs)
	grep -qE -- "$1" <<<"$r" && return 0
	diag "no record matching: $1"
	sed 's/^/#   /' <<<"$r" >&2
	return 1
}
said() { grep -q -- "$1" "$T_TMP/e" || { diag "stderr lacks: $1"; sed 's/^/#   /' "$T_TMP/e" >&2; return 1; }; }
refused() { grep -q "errno 111 ECONNREFUSED" "$T_TMP/o" || { diag "not ECONNREFUSED:"; sed 's/^/#   /' "$T_TMP/o" "$T_TMP/e" >&2; return 1; }; }

# ---- net-port: exact address and port --------------------------------------------------
n0=$(events tcp_a)
run "$PORT" curl -s "http://127.0.0.1:$TCP_A/"
[ $? -eq 0 ] && grep -qx ok "$T_TMP/o" && [ "$(events tcp_a)" -eq $((n0 + 1)) ]
ok $? "curl to an allowed 127.0.0.1:port: connected, the server answered"
has "^NET op=connect addr=127\.0\.0\.1:$TCP_A decision=0 rule=net-port\.ini:6 \[network\] allow( |$)"
ok $? "... NET record naming the address and the rule"

n0=$(events tcp_b)
run "$PORT" curl -s "http://127.0.0.1:$TCP_B/"
[ $? -eq 7 ] && [ "$(events tcp_b)" -eq "$n0" ]
ok $? "curl to another port: fails to connect (exit 7), the server saw nothing"
said "bbx: refused connection to 127.0.0.1:$TCP_B (.*no \[network\] allow rule matches)"
ok $? "... one explanation line"
has "^DENY op=connect addr=127\.0\.0\.1:$TCP_B decision=2"
ok $? "... DENY record with the address"

n0=$(events tcp6)
run "$PORT" "$PY" "$T_TMP/client.py" tcp "[::1]:$TCP6"
[ $? -eq 0 ] && grep -q "200 OK" "$T_TMP/o" && [ "$(events tcp6)" -eq $((n0 + 1)) ]
ok $? "python3 to an allowed [::1]:port: connected"
has "^NET op=connect addr=\[::1\]:$TCP6"
ok $? "... NET record [::1]:port"

n0=$(events sock_ok)
run "$PORT" "$PY" "$T_TMP/client.py" unix "$SOCK_OK"
[ $? -eq 0 ] && [ "$(events sock_ok)" -eq $((n0 + 1)) ]
ok $? "python3 to an allowed unix socket: connected"

n0=$(events sock_deny)
run "$PORT" "$PY" "$T_TMP/client.py" unix "$SOCK_DENY"
[ $? -eq 1 ] && refused && [ "$(events sock_deny)" -eq "$n0" ]
ok $? "python3 to a denied unix socket: ECONNREFUSED, nothing accepted"
has "^DENY op=connect addr=unix:$SOCK_DENY decision=2 .*rule=net-port\.ini:9 \[network\] deny( |$)"
ok $? "... DENY record naming the deny rule"

ln -s "$SOCK_DENY" "$T_TMP/innocent.sock"
run "$PORT" "$PY" "$T_TMP/client.py" unix "$T_TMP/innocent.sock"
[ $? -eq 1 ] && refused && [ "$(events sock_deny)" -eq "$n0" ]
ok $? "... and through a symlink to it: refused, nothing accepted"
has "^DENY op=connect addr=unix:$SOCK_DENY "
ok $? "... decided (and recorded) on the socket the symlink reaches"

run "$PORT" "$PY" "$T_TMP/client.py" unix "@bbx-test-abstract-$$"
[ $? -eq 1 ] && refused
ok $? "an abstract unix name no rule allows: ECONNREFUSED"

n0=$(events udp)
run "$PORT" "$PY" "$T_TMP/client.py" udp "127.0.0.1:$UDP"
[ $? -eq 1 ] && refused && [ "$(events udp)" -eq "$n0" ]
ok $? "UDP sendto to a port not allowed: ECONNREFUSED, the server received nothing"
has "^DENY op=sendto addr=127\.0\.0\.1:$UDP decision=2"
ok $? "... DENY record of op sendto"

n0=$(events tcp_b)
run "$PORT" env -i /usr/bin/curl -s "http://127.0.0.1:$TCP_B/"
[ $? -eq 7 ] && [ "$(events tcp_b)" -eq "$n0" ]
ok $? "env -i curl (empty environment): still refused"
has "^DENY op=connect addr=127\.0\.0\.1:$TCP_B"
ok $? "... DENY record from the child"

run "$PORT" sh -c "exec env -i /bin/sh -c '$PY $T_TMP/client.py tcpnum 127.0.0.1:$TCP_B'"
[ $? -eq 1 ] && refused && [ "$(events tcp_b)" -eq "$n0" ]
ok $? "python3 under env -i under sh: refused"

# ---- net-cidr: a CIDR allow, a deny that beats it, no IPv6 rule ---------------------------
n0=$(events tcp_a)
run "$CIDR" "$PY" "$T_TMP/client.py" tcpnum "127.0.0.1:$TCP_A"
[ $? -eq 0 ] && [ "$(events tcp_a)" -eq $((n0 + 1)) ]
ok $? "127.0.0.0/8 allows 127.0.0.1:port"
has "^NET op=connect addr=127\.0\.0\.1:$TCP_A decision=0 rule=net-cidr\.ini:5 \[network\] allow( |$)"
ok $? "... NET record naming the CIDR rule"

n0=$(events tcp_b)
run "$CIDR" "$PY" "$T_TMP/client.py" tcpnum "127.0.0.1:$TCP_B"
[ $? -eq 1 ] && refused && [ "$(events tcp_b)" -eq "$n0" ]
ok $? "a deny rule for one port beats the CIDR allow"
has "^DENY op=connect addr=127\.0\.0\.1:$TCP_B decision=2 .*rule=net-cidr\.ini:6 \[network\] deny( |$)"
ok $? "... DENY record naming the deny rule"

n0=$(events tcp6)
run "$CIDR" "$PY" "$T_TMP/client.py" tcpnum "[::1]:$TCP6"
[ $? -eq 1 ] && refused && [ "$(events tcp6)" -eq "$n0" ]
ok $? "no IPv6 rule: [::1] refused"
run "$CIDR" "$PY" -c "
import socket, sys
s = socket.socket(socket.AF_INET6)
s.settimeout(3)
try:
    s.connect(('::ffff:127.0.0.1', $TCP_B))
except ConnectionRefusedError:
    sys.exit(0)
sys.exit(1)"
ok $? "an IPv4-mapped IPv6 address is decided as IPv4 (the deny rule holds)"

n0=$(events udp)
run "$CIDR" "$PY" "$T_TMP/client.py" udp "127.0.0.1:$UDP" 5
[ $? -eq 0 ] && [ "$(events udp)" -eq $((n0 + 5)) ]
ok $? "UDP allowed by CIDR: the server received all 5 datagrams"
[ "$(recs | grep -c "^NET op=sendto addr=127\.0\.0\.1:$UDP ")" -eq 1 ]
ok $? "... one NET record for the destination, not one per datagram"

# ---- net-host: a host-name rule --------------------------------------------------------
n0=$(events tcp_a)
run "$HOSTP" "$PY" "$T_TMP/client.py" tcp "localhost:$TCP_A"
[ $? -eq 0 ] && [ "$(events tcp_a)" -eq $((n0 + 1)) ]
ok $? "allow = localhost:port: python3 connecting by name gets through"
has "^RESOLVE op=getaddrinfo addr=127\.0\.0\.1.* host=localhost"
ok $? "... RESOLVE record of the lookup"
has "^NET op=connect addr=127\.0\.0\.1:$TCP_A host=localhost decision=0 rule=net-host\.ini:6 \[network\] allow( |$)"
ok $? "... NET record naming the host and the host rule"

run "$HOSTP" "$PY" "$T_TMP/client.py" tcpnum "127.0.0.1:$TCP_A"
[ $? -eq 1 ] && refused && [ "$(events tcp_a)" -eq $((n0 + 1)) ]
ok $? "the same address and port by number (no lookup): refused"

# curl answers "localhost" itself (RFC 6761, curl >= 7.78) without asking the resolver, so
# no lookup tells the shim the name: curl is tested with the machine's own name, when
# /etc/hosts maps it to a loopback address.
HN=$(hostname)
if getent hosts "$HN" | grep -qE '^(127\.|::1 )'; then
	printf '[network]\nallow = %s:%s\n' "$HN" "$TCP_A" >"$T_TMP/hn.ini"
	run "$T_TMP/hn.ini" curl -s "http://$HN:$TCP_A/"
	[ $? -eq 0 ] && grep -qx ok "$T_TMP/o"
	ok $? "curl http://$HN:port/ (allow = $HN:port) gets through"
	run "$T_TMP/hn.ini" curl -s "http://$HN:$TCP_B/"
	[ $? -eq 7 ]
	ok $? "curl http://$HN:otherport/ refused"
else
	skip "the host name $HN does not resolve to loopback here"
	skip "the host name $HN does not resolve to loopback here"
fi

run "$HOSTP" "$PY" -c "
import socket, sys
a = socket.gethostbyname('localhost')
s = socket.socket()
s.settimeout(3)
s.connect((a, $TCP_A))
print('connected')"
[ $? -eq 0 ] && grep -q connected "$T_TMP/o"
ok $? "gethostbyname then connect to the number it returned: allowed as localhost"

# ---- name lookups: a query to the nameserver carries the name out -----------------------
# Under net-port no rule names a host and no nameserver is an allowed address (its one
# 127.0.0.1 rule names the test's own port, never 53, so a local resolver does not count): a
# name /etc/hosts does not answer is refused before any query leaves (DNS exfiltration);
# localhost (in /etc/hosts) still resolves.
run "$PORT" "$PY" -c "
import socket, sys
try:
    socket.getaddrinfo('bbx-exfil-$$.example.invalid', 80)
except socket.gaierror as e:
    print('gaierror', e.errno == socket.EAI_NONAME)
    sys.exit(1)"
[ $? -eq 1 ] && grep -q "gaierror True" "$T_TMP/o"
ok $? "a lookup no rule allows (not in /etc/hosts, nameserver not allowed): EAI_NONAME"
has "^DENY op=getaddrinfo host=bbx-exfil-$$\.example\.invalid decision=2"
ok $? "... DENY record naming the host"
run "$PORT" "$PY" -c "import socket; print(socket.gethostbyname('localhost'))"
[ $? -eq 0 ] && grep -q "^127\." "$T_TMP/o"
ok $? "localhost (answered by /etc/hosts) still resolves"

# ---- net-audit: decided and recorded, nothing refused ------------------------------------
n0=$(events tcp_b)
run "$AUDIT" curl -s "http://127.0.0.1:$TCP_B/"
[ $? -eq 0 ] && grep -qx ok "$T_TMP/o" && [ "$(events tcp_b)" -eq $((n0 + 1)) ]
ok $? "audit mode: curl to a port no rule allows gets through"
has "^DENY op=connect addr=127\.0\.0\.1:$TCP_B decision=3"
ok $? "... DENY record with decision audit"
has "^NET op=connect addr=127\.0\.0\.1:$TCP_B decision=3"
ok $? "... and the NET record of the egress that happened"
said "bbx: audit: would refuse connection to 127.0.0.1:$TCP_B"
ok $? "... explained as 'would refuse'"

n0=$(events udp)
run "$AUDIT" "$PY" "$T_TMP/client.py" udp "127.0.0.1:$UDP"
[ $? -eq 0 ] && [ "$(events udp)" -eq $((n0 + 1)) ]
ok $? "audit mode: UDP datagram delivered"

# ---- without a policy's [network] section the defaults apply; the servers survived ------
kill -0 $SRV_PID
ok $? "servers still running (every refusal was the client's)"
[ ! -s "$SRV/err" ] || sed "s/^/#   /" "$SRV/err" >&2

finish
