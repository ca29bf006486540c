// SPDX-License-Identifier: GPL-2.0
/*
 * zctsc: prints the host's TSC rate in kHz, for the guest's tsc_early_khz.
 *
 * Under TCG a guest's RDTSC returns the host's TSC, so the guest runs at
 * the host's rate. A kernel without ACPI has no HPET or PM timer to
 * calibrate the TSC against (and QEMU's PIT calibration fails under TCG),
 * so scripts/run-guest.sh tells it the rate. Five 20 ms samples of the TSC
 * against CLOCK_MONOTONIC_RAW; the median is printed.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <x86intrin.h>

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC_RAW, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

int main(void)
{
	const struct timespec pause = { .tv_sec = 0, .tv_nsec = 20 * 1000 * 1000 };
	double khz[5];

	for (int i = 0; i < 5; i++) {
		double t0 = now();
		uint64_t c0 = __rdtsc();

		nanosleep(&pause, NULL);
		uint64_t c1 = __rdtsc();
		double t1 = now();

		khz[i] = (double)(c1 - c0) / (t1 - t0) / 1000.0;
	}
	qsort(khz, 5, sizeof(khz[0]), cmp);
	if (khz[2] < 1000.0) {
		fprintf(stderr, "zctsc: no plausible TSC rate (%.0f kHz)\n", khz[2]);
		return 1;
	}
	printf("%.0f\n", khz[2]);
	return 0;
}
