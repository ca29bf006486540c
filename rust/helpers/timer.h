/* SPDX-License-Identifier: GPL-2.0 */
/* A timer whose callback gets a data pointer (rust/zcnet/stacked.rs). */
#ifndef ZCNET_HELPERS_TIMER_H
#define ZCNET_HELPERS_TIMER_H

/* A timer_list whose callback gets `data`; softirq context. */
struct zcnet_timer;
struct zcnet_timer *zcnet_helper_timer_new(void (*fn)(void *data), void *data);
/* Arms the timer `delay_us` microseconds from now unless it is pending. */
void zcnet_helper_timer_arm(struct zcnet_timer *t, unsigned long delay_us);
/* Takes a pending expiry back and waits for a running callback (which must
 * not arm it again meanwhile); it may be armed again later. */
void zcnet_helper_timer_cancel(struct zcnet_timer *t);
/* Stops the timer for good: waits for a running callback; arming it later does nothing. */
void zcnet_helper_timer_shutdown(struct zcnet_timer *t);
/* Shuts the timer down (waiting for a running callback) and frees it. */
void zcnet_helper_timer_free(struct zcnet_timer *t);

#endif /* ZCNET_HELPERS_TIMER_H */
