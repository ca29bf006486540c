// SPDX-License-Identifier: GPL-2.0
/*
 * iproute2 plugin for zcfrag links:
 *
 *   ip link add zf0 link eth0 type zcfrag [slots N] [timeout USEC]
 *        [admission open|required] [implicit on|off] [grant_timeout MSEC]
 *   ip link set zf0 type zcfrag ...        (the same options)
 *   ip -d link show zf0                    (prints them; ip -j gives JSON)
 *
 * ip loads `link_<kind>.so` from IP_LIB_DIR (default /usr/lib/ip) for a link
 * kind it does not know. `make tools` builds this file into
 * tools/target/ip/link_zcfrag.so; `make install-ip` copies it to /usr/lib/ip.
 *
 * The few iproute2 internals a link plugin uses are declared here, as in every
 * iproute2 release since 4.x: struct link_util's first members, addattr32 and
 * the json_print functions (ip exports them with -rdynamic).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>

#include "../../include/uapi/zcnet/zcfrag.h"

struct link_util {
	struct link_util *next;
	const char *id;
	int maxattr;
	int (*parse_opt)(struct link_util *lu, int argc, char **argv, struct nlmsghdr *n);
	void (*print_opt)(struct link_util *lu, FILE *f, struct rtattr *tb[]);
	void (*print_xstats)(struct link_util *lu, FILE *f, struct rtattr *xstats);
	void (*print_help)(struct link_util *lu, int argc, char **argv, FILE *f);
	/* Members later releases added; zero means "not provided". */
	void *later[8];
};

int addattr32(struct nlmsghdr *n, int maxlen, int type, uint32_t data);
bool is_json_context(void);
/* enum output_type: PRINT_FP 1, PRINT_JSON 2, PRINT_ANY 4; COLOR_NONE is 6. */
#define ZC_PRINT_ANY 4
#define ZC_COLOR_NONE 6
int print_color_string(int t, int color, const char *key, const char *fmt, const char *value);
int print_color_u64(int t, int color, const char *key, const char *fmt, uint64_t value);

/* The room ip gives a request message (iplink.c: struct iplink_req). */
#define ZC_MSG_ROOM 1024

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: ... zcfrag [ slots N ] [ timeout USEC ] [ admission { open | required } ]\n"
		"                  [ implicit { on | off } ] [ grant_timeout MSEC ]\n"
		"\n"
		"slots: speculation slots, 1..32; timeout: speculation timeout, 100..1000000 us\n"
		"admission: receiver policy; implicit: ask for a slot when a flow sends pages\n"
		"grant_timeout: an idle grant ends after it, 10..600000 ms\n");
}

static int bad(const char *what, const char *arg)
{
	fprintf(stderr, "Error: zcfrag: invalid %s \"%s\"\n", what, arg);
	return -1;
}

static int parse_num(const char *arg, uint32_t *v)
{
	char *end;
	unsigned long long x;

	if (!*arg || *arg == '-')
		return -1;
	errno = 0;
	x = strtoull(arg, &end, 0);
	if (errno || *end || x > UINT32_MAX)
		return -1;
	*v = (uint32_t)x;
	return 0;
}

/* *v = 0 for `zero`, 1 for `one`; -1 for anything else. */
static int parse_word(const char *arg, const char *zero, const char *one, uint32_t *v)
{
	if (!strcmp(arg, zero))
		*v = 0;
	else if (!strcmp(arg, one))
		*v = 1;
	else
		return -1;
	return 0;
}

static int zcfrag_parse_opt(struct link_util *lu, int argc, char **argv, struct nlmsghdr *n)
{
	(void)lu;
	while (argc > 0) {
		const char *key = *argv;
		int type;
		uint32_t v;

		if (!strcmp(key, "help")) {
			usage(stdout);
			exit(0);
		}
		if (argc < 2) {
			fprintf(stderr, "Error: zcfrag: \"%s\" needs a value\n", key);
			return -1;
		}
		argc--, argv++;
		if (!strcmp(key, "slots")) {
			type = IFLA_ZCFRAG_SLOTS;
		} else if (!strcmp(key, "timeout")) {
			type = IFLA_ZCFRAG_TIMEOUT_US;
		} else if (!strcmp(key, "grant_timeout")) {
			type = IFLA_ZCFRAG_GRANT_TIMEOUT_MS;
		} else if (!strcmp(key, "admission")) {
			if (parse_word(*argv, "open", "required", &v))
				return bad("admission (open or required)", *argv);
			type = IFLA_ZCFRAG_ADMISSION;
			goto put;
		} else if (!strcmp(key, "implicit")) {
			if (parse_word(*argv, "off", "on", &v))
				return bad("implicit (on or off)", *argv);
			type = IFLA_ZCFRAG_IMPLICIT;
			goto put;
		} else {
			fprintf(stderr, "Error: zcfrag: unknown option \"%s\"\n", key);
			usage(stderr);
			return -1;
		}
		if (parse_num(*argv, &v))
			return bad(key, *argv);
put:
		if (addattr32(n, ZC_MSG_ROOM, type, v))
			return -1;
		argc--, argv++;
	}
	return 0;
}

static bool get_u32(struct rtattr *tb[], int type, uint32_t *v)
{
	if (!tb[type] || RTA_PAYLOAD(tb[type]) < sizeof(uint32_t))
		return false;
	memcpy(v, RTA_DATA(tb[type]), sizeof(*v));
	return true;
}

static void zcfrag_print_opt(struct link_util *lu, FILE *f, struct rtattr *tb[])
{
	uint32_t v;

	(void)lu;
	(void)f;
	if (!tb)
		return;
	if (get_u32(tb, IFLA_ZCFRAG_SLOTS, &v))
		print_color_u64(ZC_PRINT_ANY, ZC_COLOR_NONE, "slots", "slots %" PRIu64 " ", v);
	if (get_u32(tb, IFLA_ZCFRAG_TIMEOUT_US, &v))
		print_color_u64(ZC_PRINT_ANY, ZC_COLOR_NONE, "timeout_us", "timeout %" PRIu64 " ", v);
	if (get_u32(tb, IFLA_ZCFRAG_ADMISSION, &v))
		print_color_string(ZC_PRINT_ANY, ZC_COLOR_NONE, "admission", "admission %s ",
				   v ? "required" : "open");
	if (get_u32(tb, IFLA_ZCFRAG_IMPLICIT, &v))
		print_color_string(ZC_PRINT_ANY, ZC_COLOR_NONE, "implicit", "implicit %s ",
				   v ? "on" : "off");
	if (get_u32(tb, IFLA_ZCFRAG_GRANT_TIMEOUT_MS, &v))
		print_color_u64(ZC_PRINT_ANY, ZC_COLOR_NONE, "grant_timeout_ms",
				"grant_timeout %" PRIu64 " ", v);
}

static void zcfrag_print_help(struct link_util *lu, int argc, char **argv, FILE *f)
{
	(void)lu;
	(void)argc;
	(void)argv;
	usage(f);
}

struct link_util zcfrag_link_util = {
	.id = "zcfrag",
	.maxattr = IFLA_ZCFRAG_MAX,
	.parse_opt = zcfrag_parse_opt,
	.print_opt = zcfrag_print_opt,
	.print_help = zcfrag_print_help,
};
