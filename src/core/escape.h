/* core/escape.h: one escaper per output language for strings that come from
 * data (appliance, channel, turbine, farm and event names, paths, config
 * values), and a shell-free process launcher. */
#ifndef GT_CORE_ESCAPE_H
#define GT_CORE_ESCAPE_H
#include <stddef.h>
#include <stdio.h>

/* gnuplot: the body of a single-quoted string ('' for ', control bytes and
 * newlines as '?'); no backslash, backtick or macro substitution happens in
 * gnuplot's single-quoted strings. Truncates to n-1 bytes, never mid-escape. */
void gt_esc_gnuplot(char *out, size_t n, const char *s);
/* HTML text and attribute values: & < > " ' as entities. */
void gt_esc_html(FILE *f, const char *s);
/* Markdown table cell / inline text: | \ ` * _ [ ] < > # backslashed,
 * newlines and control bytes as a space. */
void gt_esc_md(FILE *f, const char *s);
/* CSV field: quoted when it holds , " CR or LF (" doubled); a field starting
 * with = + - @ TAB or CR gets a ' prefix (no spreadsheet formula). */
void gt_esc_csv(FILE *f, const char *s);
/* Runs argv[0] (PATH lookup) with argv, no shell; stdout and stderr appended
 * to log (or inherited when NULL). Returns the exit status, -1 when it could
 * not start or died on a signal. */
int gt_run_argv(const char *const argv[], const char *log);
#endif
