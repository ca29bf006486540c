// SPDX-License-Identifier: GPL-2.0
/*
 * zcmark: marks a window for the zcinsn QEMU plugin (zcinsn.c) from inside
 * the guest. "zcmark reset" clears the plugin's instruction counts, "zcmark
 * dump" writes them out. The marker is an instruction no compiler emits,
 * `nopl 0x5a43000N(%rax)`: without the plugin it does nothing.
 */
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
	if (argc == 2 && !strcmp(argv[1], "reset")) {
		__asm__ volatile("nopl 0x5a430001(%%rax)" ::: "memory");
		return 0;
	}
	if (argc == 2 && !strcmp(argv[1], "dump")) {
		__asm__ volatile("nopl 0x5a430002(%%rax)" ::: "memory");
		return 0;
	}
	fprintf(stderr, "usage: zcmark reset|dump\n");
	return 2;
}
