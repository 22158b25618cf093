/* station.h - one weather station: open, sample, close. */
#ifndef STATION_H
#define STATION_H

struct station_sample {
	long when;         /* seconds since the epoch */
	double celsius;    /* air temperature */
	double humidity;   /* relative, 0..100 */
	double hpa;        /* air pressure */
};

int station_open(const char *device);
int station_sample(int station, struct station_sample *out);
void station_close(int station);

#endif
