/* core/escape.h: one escaper per output language for strings that come from
 * data (appliance, channel, turbine, farm and event names, paths, config
 * values), UTF-8 repair, and a shell-free process launcher.
 *
 * Every escaper writes valid UTF-8: a byte that does not start a valid UTF-8
 * sequence is read as Latin-1 (0xA0..0xFF: that character, e.g. 0xE9 -> é),
 * and 0x80..0x9F, which Latin-1 holds no printable character for, becomes
 * U+FFFD. */
#ifndef GT_CORE_ESCAPE_H
#define GT_CORE_ESCAPE_H
#include <stddef.h>
#include <stdio.h>

/* UTF-8 repair (the rule above) of s into out (n bytes, NUL-terminated,
 * never cut inside a character); returns the bytes written. */
size_t gt_utf8_fix(char *out, size_t n, const char *s);
/* A new (malloc) repaired copy of s with suffix (may be NULL) appended. */
char *gt_utf8_dup(const char *s, const char *suffix);
/* 1 when s is valid UTF-8. */
int gt_utf8_valid(const char *s);
/* fputs of the repaired s: JSON text printed by cJSON (which escapes control
 * characters but passes other bytes through) becomes valid UTF-8 JSON. */
void gt_fputs_utf8(FILE *f, const char *s);
/* One token of a whitespace-separated plot data file (gnuplot, numpy
 * loadtxt): letters, digits, UTF-8 and . _ - + : / ( ) [ ] kept, anything
 * else (space, control, quote, #, comma, ...) as '_'; empty as "-". */
void gt_esc_token(char *out, size_t n, const char *s);
/* gnuplot: the body of a single-quoted string: ' as U+2019 (gnuplot's ''
 * escape does not work at the start of a string or after another ''),
 * control bytes and newlines as '?'; no backslash, backtick or macro
 * substitution happens in gnuplot's single-quoted strings. For names in
 * titles and tics: file names in scripts are constant (gnuplot runs in the
 * plot directory, gt_run_argv). Truncates to n-1 bytes, never mid-character. */
void gt_esc_gnuplot(char *out, size_t n, const char *s);
/* HTML text and attribute values: & < > " ' as entities, C0 control bytes
 * other than newline and tab as a space. */
void gt_esc_html(FILE *f, const char *s);
/* Markdown table cell / inline text: | \ ` * _ [ ] < > # & backslashed (not
 * an underscore between two letters or digits, which emphasises nothing),
 * newlines and control bytes as a space. */
void gt_esc_md(FILE *f, const char *s);
/* CSV field: quoted when it holds , " CR or LF (" doubled); a field starting
 * with = + - @ TAB or CR gets a ' prefix (no spreadsheet formula). */
void gt_esc_csv(FILE *f, const char *s);
/* Runs argv[0] (PATH lookup) with argv, no shell, in directory dir (NULL:
 * the current one), stdin from /dev/null; stdout and stderr appended to log
 * (or inherited when NULL). Returns the exit status, -1 when it could not start or died on a
 * signal (127: could not run, or no such dir). */
int gt_run_argv(const char *dir, const char *const argv[], const char *log);
#endif
