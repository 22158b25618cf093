/* main.c - the station logger: sample every minute, append to the CSV. */
#include "station.h"

#include <stdio.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	const char *device = argc > 1 ? argv[1] : "/dev/ttyUSB0";
	int station = station_open(device);
	if (station < 0) {
		perror(device);
		return 1;
	}
	for (;;) {
		struct station_sample s;
		if (station_sample(station, &s) == 0) {
			FILE *f = fopen("data/readings.csv", "a");
			if (f) {
				fprintf(f, "%ld,%.1f,%.0f,%.1f\n", s.when, s.celsius, s.humidity, s.hpa);
				fclose(f);
			}
		}
		sleep(60);
	}
	station_close(station);
	return 0;
}
