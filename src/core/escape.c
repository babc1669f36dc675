/* core/escape.c: per-language escapers and a shell-free launcher (see escape.h). */
#define _GNU_SOURCE
#include "core/escape.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

void gt_esc_gnuplot(char *out, size_t n, const char *s) {
    size_t k = 0;
    if (!n) return;
    for (; s && *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '\'') {
            if (k + 2 >= n) break;
            out[k++] = '\'';
            out[k++] = '\'';
        } else {
            if (k + 1 >= n) break;
            out[k++] = (c < 0x20 || c == 0x7f) ? '?' : (char)c;
        }
    }
    out[k] = 0;
}

void gt_esc_html(FILE *f, const char *s) {
    for (; s && *s; s++) {
        switch (*s) {
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '&': fputs("&amp;", f); break;
        case '"': fputs("&quot;", f); break;
        case '\'': fputs("&#39;", f); break;
        default: fputc(*s, f);
        }
    }
}

void gt_esc_md(FILE *f, const char *s) {
    for (; s && *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c < 0x20 || c == 0x7f) fputc(' ', f);
        else if (strchr("|\\`*_[]<>#", c)) {
            fputc('\\', f);
            fputc(c, f);
        } else fputc(c, f);
    }
}

void gt_esc_csv(FILE *f, const char *s) {
    if (!s) s = "";
    int formula = *s && strchr("=+-@\t\r", *s);
    int quote = strpbrk(s, ",\"\r\n") != NULL;
    if (quote) fputc('"', f);
    if (formula) fputc('\'', f);
    for (; *s; s++) {
        if (*s == '"') fputc('"', f);
        fputc(*s, f);
    }
    if (quote) fputc('"', f);
}

int gt_run_argv(const char *const argv[], const char *log) {
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) return -1;
    if (pid == 0) {
        if (log) {
            int fd = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0644);
            if (fd >= 0) {
                dup2(fd, 1);
                dup2(fd, 2);
            }
        }
        execvp(argv[0], (char *const *)argv);
        _exit(127);
    }
    int st;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR) return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}
