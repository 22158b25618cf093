#!/bin/sh
# fetch.sh - copy the readings off the station.
set -eu
host=${1:-station.local}
scp "pi@$host:station/data/readings.csv" data/readings.csv.new
mv data/readings.csv.new data/readings.csv
