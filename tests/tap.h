/*
 * tap.h - a small TAP producer for the C tests.
 *
 * ok() and friends print one "ok N - name" / "not ok N - name" line; the
 * is_* forms print both values on a mismatch.  done_testing() prints the
 * plan and returns the exit status: 0 once the plan ran (failures are in
 * the "not ok" lines, which tap-driver.sh counts).
 */
#ifndef SBX_TAP_H
#define SBX_TAP_H

#include <stdbool.h>
#include <stdint.h>

void plan(int n);
bool ok(bool cond, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
bool is_int(long long got, long long want, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
bool is_str(const char *got, const char *want, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void skip(const char *why, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void diag(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void bail_out(const char *fmt, ...)
    __attribute__((format(printf, 1, 2), noreturn));
int done_testing(void);
/* Skip the whole test, loudly (before any check: else a bail out). */
void skip_all(const char *why) __attribute__((noreturn));

/* A small deterministic generator (xorshift): the same cases on every run
 * of a fuzzing test. */
uint32_t tap_rand(void);

/* "DIR/" then fmt formatted, newly allocated (free it). */
char *tap_path(const char *dir, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/*
 * The exit status the command line gives an error of this kind (1, 2 or
 * 3; 130 for a cancel), as the tests written against exit statuses check
 * it.  cli/cmd.c's cmd_kind_exit is the program's map; t-cmd checks that
 * the two agree for every kind.
 */
struct sbx_error;
int tap_status(const struct sbx_error *err);

#endif
