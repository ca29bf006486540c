// SPDX-License-Identifier: GPL-2.0
/*
 * zcseeded SEED COUNT: COUNT deterministic pseudo-random bytes on stdout,
 * the data of the suites' byte-exact transfers (ktap.sh: seeded_bytes).
 *
 * splitmix64 from SEED, each 64-bit output written little-endian: every
 * 4 KiB page of a stream differs from every other, so a page delivered at
 * the wrong offset or from another stream changes the receiver's hash.
 * Under TCG Python's random.randbytes made 256 MiB in 9.9 s, which the
 * suites paid for every size they sent.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static uint64_t splitmix64(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static int parse(const char *s, unsigned long long *v)
{
	char *end;

	errno = 0;
	*v = strtoull(s, &end, 0);
	return errno || end == s || *end || *s == '-' ? -1 : 0;
}

int main(int argc, char **argv)
{
	static unsigned char buf[1 << 16];
	unsigned long long seed, count;
	uint64_t x;

	if (argc != 3 || parse(argv[1], &seed) || parse(argv[2], &count)) {
		fprintf(stderr, "usage: zcseeded SEED COUNT\n");
		return 2;
	}
	x = seed;
	while (count) {
		size_t n = count < sizeof(buf) ? count : sizeof(buf), off = 0;

		for (size_t i = 0; i < sizeof(buf); i += 8) {
			uint64_t v = splitmix64(&x);

			for (int b = 0; b < 8; b++)
				buf[i + b] = (unsigned char)(v >> (8 * b));
		}
		while (off < n) {
			ssize_t w = write(1, buf + off, n - off);

			if (w < 0 && errno == EINTR)
				continue;
			if (w <= 0) {
				if (errno != EPIPE)
					perror("zcseeded: write");
				return 1;
			}
			off += (size_t)w;
		}
		count -= n;
	}
	return 0;
}
