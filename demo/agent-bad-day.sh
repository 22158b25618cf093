#!/bin/bash
# SPDX-License-Identifier: MIT
#
# agent-bad-day.sh - a scripted coding agent having a bad day.
#
# It was asked to "tidy up the station project and rename the station module to
# sensor".  It runs in the workspace (its current directory) and does what agents
# really do when they misunderstand a task: deletes a directory tree, rewrites files
# with sed -i and with >, moves a file and a directory, appends to a log, changes
# permissions, replaces a symlink and leaves junk behind.  Every command is an
# ordinary dynamically linked program, so libbbxshim.so sees each change before it
# happens.  demo/run-demo.sh runs it under bbx-run and then undoes it all.
set -eu

say() { printf 'agent> %s\n' "$*"; }

say "the docs look outdated: removing them"
rm -rf docs

say "renaming station -> sensor in the sources"
sed -i 's/station/sensor/g; s/STATION/SENSOR/g' src/main.c src/station.c src/station.h
mv src/station.c src/sensor.c
mv src/station.h src/sensor.h

say "rewriting the README from scratch"
cat > README.md <<'EOF'
# sensor

(documentation to be rewritten later)
EOF

say "resetting the configuration"
printf '[sensor]\ndebug = true\n' > config/settings.ini

say "keeping only the last two readings"
head -n 1 data/readings.csv > data/readings.csv.new
tail -n 2 data/readings.csv >> data/readings.csv.new
mv data/readings.csv.new data/readings.csv

say "moving scripts/ to tools/"
mv scripts tools

say "logging what I did"
echo "$(date -u +%Y-%m-%dT%H:%M:%SZ) info  agent: cleanup done, 21 stale docs removed" >> logs/events.txt

say "fixing permissions"
chmod 600 tools/fetch.sh
chmod 777 data

say "pointing latest.csv at the README (oops)"
ln -sf README.md latest.csv

say "leaving some scratch files behind"
mkdir -p build/cache/objects
for i in 1 2 3; do
	echo "object $i" > "build/cache/objects/obj$i.o"
done
touch notes.tmp core.4242
dd if=/dev/zero of=build/scratch.bin bs=4096 count=4 status=none

say "done. everything is tidy now."
