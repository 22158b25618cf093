#!/usr/bin/env python3
"""plot.py - print the last day of readings as a text chart."""
import csv
import sys

def main(path="data/readings.csv"):
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))[-24:]
    for r in rows:
        bar = "#" * max(0, int(float(r["celsius"]) + 10))
        print("%s %5s %s" % (r["time"], r["celsius"], bar))

if __name__ == "__main__":
    main(*sys.argv[1:])
