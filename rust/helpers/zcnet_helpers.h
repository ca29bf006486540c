/* SPDX-License-Identifier: GPL-2.0 */
/*
 * C helpers for zcnet: wrappers for static inline kernel functions and macros
 * that bindgen cannot turn into callable Rust functions. Each module links its
 * own copy (see the module directories' *_helpers.c), so KBUILD_MODNAME and
 * THIS_MODULE are right in every .ko.
 */
#ifndef ZCNET_HELPERS_H
#define ZCNET_HELPERS_H

#include <linux/types.h>

struct module;

/* THIS_MODULE of the .ko the helper is linked into. */
struct module *zcnet_helper_this_module(void);
/* The kernel's release string (utsname()->release), for log lines. */
const char *zcnet_helper_kernel_release(void);

#endif
