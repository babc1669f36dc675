/* core/fsutil.h: outputs never follow a symbolic link (issue #37, class 2).
 * In a scratch directory, each writer meets a link to a victim file and a
 * link to a victim directory at its name: the victim keeps its bytes, the
 * victim directory stays empty, and the writer either replaces the link by a
 * regular file (gt_fopen_atomic, gt_fopen_replace, gt_write_file_atomic) or
 * refuses it with ELOOP (gt_open_append, gt_mkdir_out, gt_out_dir_check). */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/fsutil.h"
#include "test.h"

static char g_dir[PATH_MAX], g_victim[PATH_MAX + 16], g_vdir[PATH_MAX + 16];
static const char k_precious[] = "precious bytes\n";

static char *at(const char *name) { /* g_dir/name; a few live at once */
    static char buf[4][PATH_MAX + 64];
    static int k = 0;
    k = (k + 1) % 4;
    snprintf(buf[k], sizeof buf[k], "%s/%s", g_dir, name);
    return buf[k];
}

static int is_regular(const char *p) {
    struct stat st;
    return lstat(p, &st) == 0 && S_ISREG(st.st_mode);
}

static int n_entries(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) n++;
    closedir(d);
    return n;
}

static void victims_intact(int line) {
    char *got = gt_read_file_bounded(g_victim, GT_READ_JSON_MAX_BYTES, NULL, NULL, NULL, 0);
    if (!got || strcmp(got, k_precious)) {
        fprintf(stderr, "line %d: the victim file changed: '%s'\n", line, got ? got : "(unreadable)");
        gt_test_failures++;
    }
    free(got);
    if (n_entries(g_vdir) != 0) {
        fprintf(stderr, "line %d: something was created in the victim directory\n", line);
        gt_test_failures++;
    }
}

/* plants name -> victim file; returns the path */
static char *plant(const char *name, const char *target) {
    char *p = at(name);
    unlink(p);
    TEST_REQUIRE(symlink(target, p) == 0);
    return p;
}

static int count_tmp(void) { /* leftover "*.tmp.*" temporaries in g_dir/out */
    DIR *d = opendir(at("out"));
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        if (strstr(e->d_name, ".tmp.")) n++;
    closedir(d);
    return n;
}

int main(void) {
    const char *base = getenv("GT_BINARY_DIR");
    snprintf(g_dir, sizeof g_dir, "%s/fsutil-XXXXXX", base && *base ? base : "/tmp");
    TEST_REQUIRE(mkdtemp(g_dir) != NULL);
    snprintf(g_victim, sizeof g_victim, "%s/victim.txt", g_dir);
    snprintf(g_vdir, sizeof g_vdir, "%s/victim_dir", g_dir);
    FILE *v = fopen(g_victim, "w");
    TEST_REQUIRE(v && fputs(k_precious, v) >= 0 && fclose(v) == 0);
    TEST_REQUIRE(mkdir(g_vdir, 0755) == 0);
    TEST_REQUIRE(mkdir(at("out"), 0755) == 0);

    /* gt_fopen_atomic: the link is replaced at fclose, the victim untouched;
     * before fclose the name still is the link (the new file is a temporary) */
    char *p = plant("out/a.csv", g_victim);
    FILE *f = gt_fopen_atomic(p, 1);
    TEST_REQUIRE(f != NULL);
    fputs("new\n", f);
    struct stat st;
    TEST_CHECK(lstat(p, &st) == 0 && S_ISLNK(st.st_mode));
    TEST_EQ_INT(fclose(f), 0);
    TEST_CHECK(is_regular(p));
    char *got = gt_read_file_bounded(p, GT_READ_JSON_MAX_BYTES, NULL, NULL, NULL, 0);
    TEST_CHECK(got && !strcmp(got, "new\n"));
    free(got);
    victims_intact(__LINE__);
    /* a link to a directory at the name: replaced too, nothing in the directory */
    p = plant("out/b.dat", g_vdir);
    f = gt_fopen_atomic(p, 0);
    TEST_REQUIRE(f != NULL);
    fprintf(f, "%d\n", 42);
    TEST_EQ_INT(fclose(f), 0);
    TEST_CHECK(is_regular(p));
    victims_intact(__LINE__);
    /* a rename that fails (a directory at the name): fclose reports it, the
     * temporary is removed, the directory left as it was */
    TEST_REQUIRE(mkdir(at("out/isdir"), 0755) == 0);
    f = gt_fopen_atomic(at("out/isdir"), 0);
    TEST_REQUIRE(f != NULL);
    fputs("x", f);
    errno = 0;
    TEST_CHECK(fclose(f) == EOF && errno != 0);
    TEST_EQ_INT(n_entries(at("out/isdir")), 0);
    TEST_EQ_INT(count_tmp(), 0);
    /* the temporary itself is never an existing name */
    char tmp[PATH_MAX + 32];
    TEST_EQ_INT(gt_tmp_name(at("out/c.h5"), tmp, sizeof tmp), 0);
    TEST_CHECK(strncmp(tmp, at("out/c.h5.tmp."), strlen(at("out/c.h5.tmp."))) == 0);
    TEST_CHECK(access(tmp, F_OK) != 0 && errno == ENOENT); /* chosen, not left behind */
    TEST_EQ_INT(count_tmp(), 0);

    /* gt_write_file_atomic over a link */
    p = plant("out/eval.json", g_victim);
    TEST_EQ_INT(gt_write_file_atomic(p, "{}\n"), 0);
    TEST_CHECK(is_regular(p));
    victims_intact(__LINE__);

    /* gt_fopen_replace: the link removed now, a new file in its place */
    p = plant("out/metrics.jsonl", g_victim);
    f = gt_fopen_replace(p);
    TEST_REQUIRE(f != NULL);
    TEST_CHECK(is_regular(p));
    fputs("{}\n", f);
    TEST_EQ_INT(fclose(f), 0);
    victims_intact(__LINE__);
    p = plant("out/run.log", g_vdir);
    f = gt_fopen_replace(p);
    TEST_REQUIRE(f != NULL);
    fclose(f);
    TEST_CHECK(is_regular(p));
    victims_intact(__LINE__);
    errno = 0;
    TEST_CHECK(gt_fopen_replace(at("out/isdir")) == NULL && errno == EISDIR);

    /* gt_open_append: a link is refused (ELOOP), a regular file appended, a
     * FIFO refused without blocking */
    p = plant("out/forensics.jsonl", g_victim);
    errno = 0;
    TEST_CHECK(gt_open_append(p) < 0 && errno == ELOOP);
    TEST_CHECK(gt_fopen_append(p) == NULL && errno == ELOOP);
    TEST_CHECK(strstr(gt_out_strerror(ELOOP), "symbolic link") != NULL);
    p = plant("out/gnuplot.log", g_vdir);
    TEST_CHECK(gt_open_append(p) < 0 && errno == ELOOP);
    victims_intact(__LINE__);
    f = gt_fopen_append(at("out/a.csv"));
    TEST_REQUIRE(f != NULL);
    fputs("more\n", f);
    TEST_EQ_INT(fclose(f), 0);
    got = gt_read_file_bounded(at("out/a.csv"), GT_READ_JSON_MAX_BYTES, NULL, NULL, NULL, 0);
    TEST_CHECK(got && !strcmp(got, "new\nmore\n"));
    free(got);
    TEST_REQUIRE(mkfifo(at("out/fifo"), 0644) == 0);
    errno = 0;
    TEST_CHECK(gt_open_append(at("out/fifo")) < 0 && (errno == ENXIO || errno == EINVAL));

    /* directories: a link (to a directory, or dangling) is refused by name,
     * a file is not a directory, an absent or real directory is fine */
    p = plant("plots", g_vdir);
    TEST_CHECK(gt_out_dir_check(p) != 0 && errno == ELOOP);
    char slash[PATH_MAX + 80];
    snprintf(slash, sizeof slash, "%s/", p); /* "plots/" must not resolve the link */
    TEST_CHECK(gt_out_dir_check(slash) != 0 && errno == ELOOP);
    TEST_CHECK(gt_mkdir_out(p) != 0 && errno == ELOOP);
    p = plant("dangling", "/nonexistent/gridtrain-test");
    TEST_CHECK(gt_mkdir_out(p) != 0 && errno == ELOOP);
    TEST_CHECK(gt_out_dir_check(at("out/a.csv")) != 0 && errno == ENOTDIR);
    TEST_EQ_INT(gt_out_dir_check(at("absent")), 0);
    TEST_EQ_INT(gt_mkdir_out(at("new/deeper")), 0);
    TEST_EQ_INT(gt_out_dir_check(at("new/deeper")), 0);
    TEST_EQ_INT(gt_mkdir_out(at("new/deeper")), 0); /* existing: fine */
    victims_intact(__LINE__);

    /* gt_out_dir_open: a link in a middle component below the named root is
     * refused (ELOOP) and named, nothing created through it; real components
     * are created; "." and ".." are refused */
    TEST_REQUIRE(mkdir(at("run"), 0755) == 0);
    plant("run/cells", g_vdir);
    char bad[PATH_MAX + 80];
    errno = 0;
    TEST_CHECK(gt_out_dir_open(at("run"), "cells/c1", bad, sizeof bad) < 0 && errno == ELOOP);
    TEST_CHECK(!strcmp(bad, at("run/cells")));
    TEST_CHECK(gt_mkdir_out_below(at("run"), "cells/c1/deep", bad, sizeof bad) != 0 && errno == ELOOP);
    victims_intact(__LINE__);
    TEST_REQUIRE(mkdir(at("run/rungs"), 0755) == 0);
    plant("run/rungs/0", "/nonexistent/gridtrain-test"); /* dangling */
    TEST_CHECK(gt_mkdir_out_below(at("run"), "rungs/0/c1", bad, sizeof bad) != 0 && errno == ELOOP);
    TEST_CHECK(!strcmp(bad, at("run/rungs/0")));
    int dfd = gt_out_dir_open(at("run"), "rungs/1/c1", bad, sizeof bad);
    TEST_CHECK(dfd >= 0 && is_regular(at("run")) == 0);
    struct stat sd;
    TEST_CHECK(stat(at("run/rungs/1/c1"), &sd) == 0 && S_ISDIR(sd.st_mode));
    TEST_CHECK(gt_out_dir_open(at("run"), "rungs/../cells", bad, sizeof bad) < 0 && errno == EINVAL);
    plant("runlink", at("run")); /* the root itself a link: refused as by gt_mkdir_out */
    TEST_CHECK(gt_out_dir_open(at("runlink"), "plots", bad, sizeof bad) < 0 && errno == ELOOP);
    TEST_CHECK(gt_out_dir_open(at("out/a.csv"), NULL, bad, sizeof bad) < 0 && errno == ENOTDIR);

    /* gt_tmp_openat and gt_fd_is_at: the temporary is created in the open
     * directory; a name swapped for another file (or a hard link of one) no
     * longer names the descriptor's file */
    char name[PATH_MAX];
    int tfd = gt_tmp_openat(dfd, "ckpt.h5", name, sizeof name);
    TEST_REQUIRE(tfd >= 0);
    TEST_CHECK(!strncmp(name, "ckpt.h5.tmp.", 12) && strchr(name, '/') == NULL);
    TEST_EQ_INT(gt_fd_is_at(tfd, dfd, name), 1);
    TEST_REQUIRE(linkat(dfd, name, dfd, "second", 0) == 0); /* two links: not ours alone */
    TEST_EQ_INT(gt_fd_is_at(tfd, dfd, name), 0);
    TEST_REQUIRE(unlinkat(dfd, "second", 0) == 0 && unlinkat(dfd, name, 0) == 0);
    TEST_REQUIRE(symlinkat(g_victim, dfd, name) == 0);
    errno = 0;
    TEST_CHECK(gt_fd_is_at(tfd, dfd, name) == 0 && errno == ESTALE);
    close(tfd);
    close(dfd);
    victims_intact(__LINE__);

    /* gt_getline_max: lines up to the limit whole (a last line without '\n'
     * too), a longer one refused (EFBIG) */
    f = fopen(at("out/lines"), "w+");
    TEST_REQUIRE(f != NULL);
    fputs("{\"a\":1}\n", f);
    for (int i = 0; i < 300; i++) fputc('x', f);
    fputs("\nend", f);
    rewind(f);
    char *line = NULL;
    size_t cap = 0;
    TEST_EQ_INT(gt_getline_max(&line, &cap, f, 300), 8);
    TEST_CHECK(!strcmp(line, "{\"a\":1}\n"));
    errno = 0;
    TEST_CHECK(gt_getline_max(&line, &cap, f, 300) == -2 && errno == EFBIG);
    TEST_CHECK(cap <= 2 * 302);
    rewind(f);
    TEST_EQ_INT(gt_getline_max(&line, &cap, f, 301), 8);
    TEST_EQ_INT(gt_getline_max(&line, &cap, f, 301), 301);
    TEST_EQ_INT(gt_getline_max(&line, &cap, f, 301), 3);
    TEST_CHECK(!strcmp(line, "end"));
    TEST_EQ_INT(gt_getline_max(&line, &cap, f, 301), -1);
    free(line);
    fclose(f);

    if (gt_test_failures == 0) {
        char cmd[PATH_MAX + 16];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
        if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", g_dir);
        printf("fsutil: links replaced or refused, victims intact\n");
    }
    return gt_test_failures ? 1 : 0;
}
