#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# bench/scale.sh - how bbx scales: rm -rf of trees of 1k, 10k and 100k files bare and
# under bbx-run (journal size, objects), then bbx-undo of that run (files restored per
# second, the restored tree checked against the original: names, types, sizes); and an
# O_TRUNC of a 1 GB file under the shim: time, what the journal says, the undo time, and
# the content checked after undo.
# Usage: bench/scale.sh   (BENCH_SCALE_SIZES default "1000 10000 100000";
#                          BENCH_SCALE_ROUNDS default 1; BENCH_TRUNC_MB default 1024, 0 skips)
. "$(dirname "$0")/lib.sh"
SIZES=${BENCH_SCALE_SIZES:-1000 10000 100000}
SR=${BENCH_SCALE_ROUNDS:-1}
MB=${BENCH_TRUNC_MB:-1024}
# What undo must restore: names, types, modes, file sizes (a directory's own st_size is
# ext4's block count for its entries, which grows with history and never shrinks).
listing() { (cd "$1" && find . \( -type f -printf '%p %y %s %m\n' \) -o \( ! -type f -printf '%p %y %m\n' \) | sort); }
printf '%-9s %9s %9s %7s %11s %12s %9s %13s\n' files bare_rm_s bbx_rm_s ratio journal_KiB objects_KiB undo_s undo_files/s
for n in $SIZES; do
	rm -rf "$W/tpl"
	dirs=$(((n + 99) / 100))
	for d in $(seq "$dirs"); do
		mkdir -p "$W/tpl/d$d"
		for f in $(seq $((n / dirs))); do printf 'file %s in %s\n' "$f" "$d" >"$W/tpl/d$d/f$f"; done
	done
	listing "$W/tpl" >"$W/want"
	: >"$W/bare"; : >"$W/bbx"; : >"$W/undo"; : >"$W/jk"; : >"$W/ok"
	for r in $(seq "$SR"); do
		cp -a "$W/tpl" "$W/t"
		timeit "$W/bare" rm -rf "$W/t"
		cp -a "$W/tpl" "$W/t"
		timeit "$W/bbx" $BBX_RUN --journal "$J" -- rm -rf "$W/t"
		echo $(($(stat -c %s "$J/journal") / 1024)) >>"$W/jk"
		kib "$J/objects" >>"$W/ok"
		timeit "$W/undo" "$UNDO" -q "$J"
		listing "$W/t" | cmp -s - "$W/want" || { echo "scale: undo of rm -rf of $n files did not restore the tree" >&2; exit 1; }
		chmod -R u+w "$J"; rm -rf "$W/t" "$J"
	done
	printf '%-9s %9.3f %9.3f %7.2f %11s %12s %9.3f %13.0f\n' "$(find "$W/tpl" -type f | wc -l)" \
		"$(med "$W/bare")" "$(med "$W/bbx")" "$(div "$(med "$W/bbx")" "$(med "$W/bare")")" \
		"$(med "$W/jk")" "$(med "$W/ok")" "$(med "$W/undo")" "$(div "$n" "$(med "$W/undo")")"
done
rm -rf "$W/tpl"
[ "$MB" -gt 0 ] || exit 0
echo
echo "O_TRUNC of a $MB MiB file (sh -c ': > big'):"
mkdir -p "$W/big"
dd if=/dev/zero of="$W/big/f" bs=1M count="$MB" status=none
printf 'tail' >>"$W/big/f"
sum=$(md5sum <"$W/big/f")
: >"$W/bare"
timeit "$W/bare" sh -c ": > '$W/big/f'"
dd if=/dev/zero of="$W/big/f" bs=1M count="$MB" status=none
printf 'tail' >>"$W/big/f"
: >"$W/bbx"
timeit "$W/bbx" $BBX_RUN --journal "$J" -- sh -c ": > '$W/big/f'"
printf '  bare %.3f s, under bbx %.3f s; file now %s bytes; journal %s bytes, objects %s KiB on disk\n' \
	"$(med "$W/bare")" "$(med "$W/bbx")" "$(stat -c %s "$W/big/f")" \
	"$(stat -c %s "$J/journal")" "$(kib "$J/objects")"
echo "  the journal (bbx-log, records naming the file):"
"$LOG" "$J" 2>&1 | grep -F "$W/big" | sed 's/^/    /' | head -n 10
: >"$W/undo"
timeit "$W/undo" "$UNDO" -q "$J"
if [ "$(md5sum <"$W/big/f")" = "$sum" ]; then r="content restored"; else r="CONTENT NOT RESTORED"; fi
printf '  bbx-undo %.3f s: %s (%s bytes)\n' "$(med "$W/undo")" "$r" "$(stat -c %s "$W/big/f")"
