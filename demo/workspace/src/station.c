/* station.c - reads samples from the station's serial device. */
#include "station.h"

#include <fcntl.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

int station_open(const char *device)
{
	return open(device, O_RDONLY | O_NOCTTY);
}

int station_sample(int station, struct station_sample *out)
{
	char line[128];
	ssize_t n = read(station, line, sizeof line - 1);
	if (n <= 0)
		return -1;
	line[n] = 0;
	out->when = (long)time(NULL);
	return sscanf(line, "%lf %lf %lf", &out->celsius, &out->humidity, &out->hpa) == 3 ? 0 : -1;
}

void station_close(int station)
{
	close(station);
}
