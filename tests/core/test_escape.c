/* The per-language escapers and the UTF-8 repair of core/escape.h on
 * hostile names: each output holds the exact bytes expected. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/escape.h"
#include "test.h"

static int same(const char *what, const char *got, const char *want) {
    if (strcmp(got, want)) {
        fprintf(stderr, "%s: got '%s', want '%s'\n", what, got, want);
        return 0;
    }
    return 1;
}

/* the output of f(FILE *, s) as a string */
static void through(void (*f)(FILE *, const char *), const char *s, char *out, size_t n) {
    FILE *m = fmemopen(out, n, "w");
    f(m, s);
    fclose(m);
}

int main(void) {
    char b[256];
    /* UTF-8 repair: valid text unchanged, Latin-1 0xE9 as é, C1 0x85 and broken
     * sequences as U+FFFD (a lone continuation, a truncated 3-byte, a surrogate,
     * and the bytes of an overlong '/', each read as Latin-1) */
    TEST_CHECK(gt_utf8_valid("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x94\xa5"));
    gt_utf8_fix(b, sizeof b, "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x94\xa5");
    TEST_CHECK(same("valid", b, "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x94\xa5"));
    TEST_CHECK(!gt_utf8_valid("caf\xe9"));
    gt_utf8_fix(b, sizeof b, "caf\xe9|\x85|\x80|\xe2\x82|\xed\xa0\x80|\xc0\xaf");
    TEST_CHECK(same("repair", b,
                    "caf\xc3\xa9|\xef\xbf\xbd|\xef\xbf\xbd|\xc3\xa2\xef\xbf\xbd|\xc3\xad\xc2\xa0\xef\xbf\xbd|"
                    "\xc3\x80\xc2\xaf"));
    TEST_CHECK(gt_utf8_valid(b));
    /* never cut inside a character */
    TEST_EQ_INT((int)gt_utf8_fix(b, 5, "ab\xe9\xe9"), 4);
    TEST_CHECK(same("cut", b, "ab\xc3\xa9"));
    TEST_EQ_INT((int)gt_utf8_fix(b, 4, "ab\xe9"), 2);
    char *d = gt_utf8_dup("{\"n\":\"\xe9\"}", "\n");
    TEST_CHECK(same("dup", d, "{\"n\":\"\xc3\xa9\"}\n"));
    free(d);

    /* gnuplot single-quoted string body */
    gt_esc_gnuplot(b, sizeof b, "'.system('touch P').'\n\xe9`x`");
    TEST_CHECK(same("gnuplot", b, "\xe2\x80\x99.system(\xe2\x80\x99touch P\xe2\x80\x99).\xe2\x80\x99?\xc3\xa9`x`"));
    gt_esc_gnuplot(b, 4, "a'b"); /* a character is not cut in half */
    TEST_CHECK(same("gnuplot cut", b, "a"));

    /* data token */
    gt_esc_token(b, sizeof b, "=cmd|' /C calc'!A0");
    TEST_CHECK(same("token", b, "_cmd___/C_calc__A0"));
    gt_esc_token(b, sizeof b, "-2+3 #x,\"y\"\xe9");
    TEST_CHECK(same("token sign", b, "_2+3__x__y_\xc3\xa9"));
    gt_esc_token(b, sizeof b, "");
    TEST_CHECK(same("token empty", b, "-"));

    /* HTML, Markdown, CSV */
    through(gt_esc_html, "<script>alert('x')&\"\x01\xe9", b, sizeof b);
    TEST_CHECK(same("html", b, "&lt;script&gt;alert(&#39;x&#39;)&amp;&quot; \xc3\xa9"));
    through(gt_esc_md, "a|b`c`*_[x](y)<s>#&\n\xe9", b, sizeof b);
    TEST_CHECK(same("md", b, "a\\|b\\`c\\`\\*\\_\\[x\\](y)\\<s\\>\\#\\& \xc3\xa9"));
    through(gt_esc_md, "machine_type _x_ a_", b, sizeof b);
    TEST_CHECK(same("md underscore", b, "machine_type \\_x\\_ a\\_"));
    through(gt_esc_csv, "=cmd|' /C calc'!A0", b, sizeof b);
    TEST_CHECK(same("csv formula", b, "'=cmd|' /C calc'!A0"));
    through(gt_esc_csv, "@x,\"y\"\n", b, sizeof b);
    TEST_CHECK(same("csv quoted", b, "\"'@x,\"\"y\"\"\n\""));
    through(gt_esc_csv, "plain\xe9", b, sizeof b);
    TEST_CHECK(same("csv plain", b, "plain\xc3\xa9"));
    TEST_DONE();
}
