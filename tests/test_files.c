/* test_files - ndf_install, the move of a file another program wrote (the JIT's compiled library and
 * manifest) into place: a regular file is replaced; a named pipe, a symbolic link or a folder at the
 * destination is refused and left as it was; a failed move leaves the destination as it was; the
 * temporary file never stays behind. */
#include <errno.h>
#include <stdbool.h>
#include <sys/stat.h>
#include <unistd.h>

#include "nd_files.h"
#include "testutil.h"

static int64_t passed;
static char dir[] = "/tmp/test_files_XXXXXX";

static void put(const char *path, const char *text)
{
    FILE *fp = fopen(path, "w");
    CHECK(fp && fputs(text, fp) >= 0 && fclose(fp) == 0, "cannot write %s", path);
}

static bool holds(const char *path, const char *text)
{
    char buf[64] = "";
    FILE *fp = fopen(path, "r");
    size_t n = fp ? fread(buf, 1, sizeof buf - 1, fp) : 0;
    if (fp)
        fclose(fp);
    buf[n] = '\0';
    return fp && strcmp(buf, text) == 0;
}

static void path_of(char *out, size_t len, const char *name) { snprintf(out, len, "%s/%s", dir, name); }

/* A destination that is not a regular file: refused with what it is, left alone, tmp removed. */
static void refused_over(const char *name, const char *kind, mode_t want_type)
{
    char tmp[256], path[256];
    nd_error err;
    struct stat st;
    path_of(tmp, sizeof tmp, "tmp");
    path_of(path, sizeof path, name);
    put(tmp, "new");
    test_case = name;
    int rc = ndf_install(tmp, path, &err);
    CHECK(rc != 0 && strstr(err.msg, kind) && strstr(err.msg, "writes only regular files or new names"),
          "rc %d: %s", rc, rc ? err.msg : "(installed)");
    CHECK(lstat(path, &st) == 0 && (st.st_mode & S_IFMT) == want_type, "the destination changed");
    CHECK(access(tmp, F_OK) != 0 && errno == ENOENT, "the temporary file stayed");
    ++passed;
}

int main(void)
{
    char tmp[256], path[256], target[256];
    nd_error err;
    if (!mkdtemp(dir))
        return 1;
    path_of(tmp, sizeof tmp, "tmp");
    path_of(path, sizeof path, "entry");
    path_of(target, sizeof target, "target");

    test_case = "a new name, then a regular file";
    put(tmp, "one");
    CHECK(ndf_install(tmp, path, &err) == 0 && holds(path, "one"), "new name: %s", err.msg);
    put(tmp, "two");
    CHECK(ndf_install(tmp, path, &err) == 0 && holds(path, "two") && access(tmp, F_OK) != 0, "replace: %s", err.msg);
    ++passed;

    path_of(path, sizeof path, "fifo");
    CHECK(mkfifo(path, 0600) == 0, "mkfifo");
    refused_over("fifo", "a named pipe", S_IFIFO);
    put(target, "kept");
    path_of(path, sizeof path, "link");
    CHECK(symlink(target, path) == 0, "symlink");
    refused_over("link", "a symbolic link", S_IFLNK);
    CHECK(holds(target, "kept"), "the link's target changed");
    path_of(path, sizeof path, "folder");
    CHECK(mkdir(path, 0700) == 0, "mkdir");
    refused_over("folder", "a folder", S_IFDIR);

    test_case = "a move that fails";
    path_of(path, sizeof path, "entry");
    int rc = ndf_install(tmp, path, &err); /* tmp does not exist: rename fails */
    CHECK_ERROR(rc, err, ND_EIO, "cannot replace it");
    CHECK(holds(path, "two"), "the destination changed after a failed move");
    ++passed;

    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "test_files: could not remove %s\n", dir);
    return test_finish(passed);
}
