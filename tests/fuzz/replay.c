/*
 * replay.c - runs the fuzz target over every file of the corpus folders given, without libFuzzer, so
 * the kept corpus is a regression test in every build (including the sanitizer builds under gcc).
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int replay_file(const char *path)
{
    uint8_t buf[4096];
    FILE *fp = fopen(path, "rb");
    if (!fp)
        return -1;
    size_t n = fread(buf, 1, sizeof buf, fp);
    fclose(fp);
    LLVMFuzzerTestOneInput(buf, n);
    return 0;
}

int main(int argc, char **argv)
{
    long files = 0;
    for (int i = 1; i < argc; ++i) {
        DIR *dir = opendir(argv[i]);
        if (!dir) {
            fprintf(stderr, "replay: %s: cannot open the corpus folder\n", argv[i]);
            return 1;
        }
        for (struct dirent *e; (e = readdir(dir));) {
            char path[4096];
            if (e->d_name[0] == '.')
                continue;
            snprintf(path, sizeof path, "%s/%s", argv[i], e->d_name);
            if (replay_file(path)) {
                fprintf(stderr, "replay: %s: cannot read\n", path);
                closedir(dir);
                return 1;
            }
            ++files;
        }
        closedir(dir);
    }
    printf("replay: %ld inputs, no failure\n", files);
    return files > 0 ? 0 : 1;
}
