/* core/escape.c: per-language escapers and a shell-free launcher (see escape.h). */
#define _GNU_SOURCE
#include "core/escape.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/check.h"

/* Length of the valid UTF-8 sequence at p (1..4), 0 when p starts none. */
static int u8_len(const unsigned char *p) {
    unsigned char c = p[0];
    if (c < 0x80) return 1;
    int len;
    unsigned char lo = 0x80, hi = 0xbf; /* the range of the second byte */
    if (c >= 0xc2 && c <= 0xdf) len = 2;
    else if (c == 0xe0) len = 3, lo = 0xa0;
    else if (c == 0xed) len = 3, hi = 0x9f; /* no surrogates */
    else if (c >= 0xe1 && c <= 0xef) len = 3;
    else if (c == 0xf0) len = 4, lo = 0x90;
    else if (c == 0xf4) len = 4, hi = 0x8f; /* <= U+10FFFF */
    else if (c >= 0xf1 && c <= 0xf3) len = 4;
    else return 0;
    if (p[1] < lo || p[1] > hi) return 0;
    for (int k = 2; k < len; k++)
        if ((p[k] & 0xc0) != 0x80) return 0;
    return len;
}

/* The next character of *ps as valid UTF-8 in out (1..4 bytes, the repair
 * of escape.h); advances *ps. Returns the length, 0 at the end. */
static int u8_next(const char **ps, char out[4]) {
    const unsigned char *p = (const unsigned char *)*ps;
    if (!*p) return 0;
    int len = u8_len(p);
    if (len) {
        memcpy(out, p, (size_t)len);
        *ps += len;
        return len;
    }
    *ps += 1;
    if (*p >= 0xa0) { /* Latin-1 */
        out[0] = (char)(0xc0 | (*p >> 6));
        out[1] = (char)(0x80 | (*p & 0x3f));
        return 2;
    }
    memcpy(out, "\xef\xbf\xbd", 3); /* U+FFFD */
    return 3;
}

size_t gt_utf8_fix(char *out, size_t n, const char *s) {
    size_t k = 0;
    if (!n) return 0;
    char c[4];
    int len;
    while (s && (len = u8_next(&s, c)) > 0 && k + (size_t)len < n) {
        memcpy(out + k, c, (size_t)len);
        k += (size_t)len;
    }
    out[k] = 0;
    return k;
}

char *gt_utf8_dup(const char *s, const char *suffix) {
    if (!s) s = "";
    if (!suffix) suffix = "";
    size_t n = 3 * strlen(s) + strlen(suffix) + 1; /* a byte becomes at most 3 */
    char *o = GT_MALLOC(n);
    size_t k = gt_utf8_fix(o, n, s);
    memcpy(o + k, suffix, strlen(suffix) + 1);
    return o;
}

int gt_utf8_valid(const char *s) {
    for (const unsigned char *p = (const unsigned char *)s; p && *p;) {
        int len = u8_len(p);
        if (!len) return 0;
        p += len;
    }
    return 1;
}

void gt_fputs_utf8(FILE *f, const char *s) {
    char c[4];
    int len;
    while (s && (len = u8_next(&s, c)) > 0) fwrite(c, 1, (size_t)len, f);
}

void gt_esc_token(char *out, size_t n, const char *s) {
    size_t k = 0;
    if (!n) return;
    char c[4];
    int len;
    while (s && (len = u8_next(&s, c)) > 0 && k + (size_t)len < n) {
        unsigned char b = (unsigned char)c[0];
        if (len == 1 && !isalnum(b) && !strchr("._-+:/()[]", b)) c[0] = '_';
        if (k == 0 && (c[0] == '-' || c[0] == '+')) c[0] = '_'; /* no leading sign: not a number, not a formula */
        memcpy(out + k, c, (size_t)len);
        k += (size_t)len;
    }
    if (k == 0 && n > 1) out[k++] = '-';
    out[k] = 0;
}

void gt_esc_gnuplot(char *out, size_t n, const char *s) {
    size_t k = 0;
    if (!n) return;
    char c[4];
    int len;
    while (s && (len = u8_next(&s, c)) > 0) {
        if (len == 1 && c[0] == '\'') { /* U+2019: gnuplot's '' escape fails at a string's start */
            memcpy(c, "\xe2\x80\x99", 3);
            len = 3;
        } else if (len == 1 && ((unsigned char)c[0] < 0x20 || c[0] == 0x7f)) c[0] = '?';
        if (k + (size_t)len >= n) break;
        memcpy(out + k, c, (size_t)len);
        k += (size_t)len;
    }
    out[k] = 0;
}

void gt_esc_html(FILE *f, const char *s) {
    char c[4];
    int len;
    while (s && (len = u8_next(&s, c)) > 0) {
        if (len > 1) {
            fwrite(c, 1, (size_t)len, f);
            continue;
        }
        unsigned char b = (unsigned char)c[0];
        switch (b) {
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '&': fputs("&amp;", f); break;
        case '"': fputs("&quot;", f); break;
        case '\'': fputs("&#39;", f); break;
        default: fputc((b < 0x20 && b != '\n' && b != '\t') || b == 0x7f ? ' ' : b, f); /* no C0 controls in HTML */
        }
    }
}

void gt_esc_md(FILE *f, const char *s) {
    char c[4];
    int len, prev = 0; /* the previous byte */
    while (s && (len = u8_next(&s, c)) > 0) {
        unsigned char b = (unsigned char)c[0];
        /* an underscore inside a word (machine_type) emphasises nothing */
        int word_ = b == '_' && isalnum(prev) && isalnum((unsigned char)*s);
        prev = len > 1 ? 0x80 : b;
        if (len > 1) fwrite(c, 1, (size_t)len, f);
        else if (b < 0x20 || b == 0x7f) fputc(' ', f);
        else if (!word_ && strchr("|\\`*_[]<>#&", b)) {
            fputc('\\', f);
            fputc(b, f);
        } else fputc(b, f);
    }
}

void gt_esc_csv(FILE *f, const char *s) {
    if (!s) s = "";
    int formula = *s && strchr("=+-@\t\r", *s);
    int quote = strpbrk(s, ",\"\r\n") != NULL;
    if (quote) fputc('"', f);
    if (formula) fputc('\'', f);
    char c[4];
    int len;
    while ((len = u8_next(&s, c)) > 0) {
        if (len == 1 && c[0] == '"') fputc('"', f);
        fwrite(c, 1, (size_t)len, f);
    }
    if (quote) fputc('"', f);
}

int gt_run_argv(const char *dir, const char *const argv[], const char *log) {
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) return -1;
    if (pid == 0) {
        if (log) { /* opened before the chdir: a relative log path is the caller's */
            int fd = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0644);
            if (fd >= 0) {
                dup2(fd, 1);
                dup2(fd, 2);
            }
        }
        int in = open("/dev/null", O_RDONLY | O_CLOEXEC); /* never waits on a terminal */
        if (in >= 0) dup2(in, 0);
        if (dir && chdir(dir)) _exit(127);
        execvp(argv[0], (char *const *)argv);
        _exit(127);
    }
    int st;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR) return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}
