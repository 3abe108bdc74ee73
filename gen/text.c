/*
 * text.c - text helpers shared by the pipeline and the inspection commands: the growing buffer that
 * generated code is written into (ndg_buf), the one JSON string writer, and the identifier scan of C
 * text that tells a macro body from code read where it stands (ndg_each_ident).
 */
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <errno.h>
#include <string.h>
#include <sys/stat.h>

#include "ndgen.h"

/* ---------------------------------------------------------------- the one allocation path
 *
 * ndgen cannot go on without memory for what it reads or writes: it says so and exits (1), rather than
 * write a truncated kernel or dereference NULL. Nothing is in place yet (outputs are put in place only
 * when every spec succeeded), and the temporary files of the run are removed by the next one. Every
 * allocation of the generator goes through these, but the Lua state's, which must return NULL to Lua to
 * enforce --spec-memory (spec.c). */
static _Noreturn void out_of_memory(size_t bytes)
{
    fprintf(stderr, "ndgen: out of memory (%zu bytes)\n", bytes);
    exit(1);
}

void *ndg_malloc(size_t bytes)
{
    void *p = malloc(bytes ? bytes : 1);
    if (!p)
        out_of_memory(bytes);
    return p;
}

void *ndg_calloc(size_t count, size_t size)
{
    void *p = calloc(count ? count : 1, size ? size : 1);
    if (!p)
        out_of_memory(count * size);
    return p;
}

void *ndg_realloc(void *p, size_t bytes)
{
    void *grown = realloc(p, bytes ? bytes : 1);
    if (!grown)
        out_of_memory(bytes);
    return grown;
}

char *ndg_strdup(const char *s) { return ndg_strndup(s, strlen(s)); }

char *ndg_strndup(const char *s, size_t n)
{
    size_t len = strnlen(s, n);
    char *p = ndg_malloc(len + 1);
    memcpy(p, s, len);
    p[len] = '\0';
    return p;
}

/* Room for more bytes and a NUL. */
static void reserve(ndg_buf *b, size_t more)
{
    if (b->len + more + 1 <= b->cap)
        return;
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < b->len + more + 1)
        cap *= 2;
    b->data = ndg_realloc(b->data, cap);
    b->cap = cap;
}

void ndg_buf_put(ndg_buf *b, const char *s, size_t n)
{
    reserve(b, n);
    if (n) /* s may be NULL when n is 0 */
        memcpy(b->data + b->len, s, n);
    b->len += n;
    b->data[b->len] = '\0';
    for (size_t i = 0; i < n; ++i)
        b->lines += s[i] == '\n';
}

void ndg_buf_printf(ndg_buf *b, const char *fmt, ...)
{
    va_list ap, ap2;
    va_start(ap, fmt);
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    reserve(b, (size_t)n);
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap2);
    va_end(ap2);
    for (int i = 0; i < n; ++i)
        b->lines += b->data[b->len + (size_t)i] == '\n';
    b->len += (size_t)n;
}

void ndg_buf_free(ndg_buf *b)
{
    free(b->data);
    memset(b, 0, sizeof *b);
}

void ndg_json_string(FILE *fp, const char *s)
{
    fputc('"', fp);
    for (; *s; ++s) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(fp, "\\%c", c);
        else if (c < 0x20)
            fprintf(fp, "\\u%04x", c);
        else
            fputc(c, fp);
    }
    fputc('"', fp);
}

bool ndg_ident_char(char c) { return isalnum((unsigned char)c) || c == '_'; }

/* The directive of the line whose '#' is at text[i]: sets *define and *include; returns its end. */
static size_t directive_name(const char *text, size_t len, size_t i, bool *define, bool *include)
{
    size_t j = i + 1;
    while (j < len && (text[j] == ' ' || text[j] == '\t'))
        ++j;
    size_t k = j;
    while (k < len && ndg_ident_char(text[k]))
        ++k;
    *define = k - j == 6 && strncmp(text + j, "define", 6) == 0;
    *include = k - j == 7 && strncmp(text + j, "include", 7) == 0;
    return k;
}

/* See ndgen.h. */
int ndg_each_ident(const char *text, size_t len, int (*f)(const ndg_ident *, void *), void *data)
{
    int line = 1, rc = 0;
    size_t line_at = 0; /* offset of the line's first character */
    bool line_start = true, directive = false, define = false, named = false, include = false;
    for (size_t i = 0; i < len && !rc; ++i) {
        char ch = text[i];
        if (ch == '\\' && i + 1 < len && text[i + 1] == '\n') {
            ++i, ++line, line_at = i + 1;
        } else if (ch == '\n') {
            ++line, line_at = i + 1;
            line_start = true, directive = define = named = include = false;
        } else if (ch == '/' && i + 1 < len && text[i + 1] == '*') {
            for (i += 2; i + 1 < len && !(text[i] == '*' && text[i + 1] == '/'); ++i)
                if (text[i] == '\n')
                    ++line, line_at = i + 1;
            ++i;
        } else if (ch == '/' && i + 1 < len && text[i + 1] == '/') {
            while (i + 1 < len && text[i + 1] != '\n')
                ++i;
        } else if (ch == '"' || ch == '\'') {
            for (++i; i < len && text[i] != ch && text[i] != '\n'; ++i)
                i += text[i] == '\\';
        } else if (ch == '#' && line_start) {
            directive = true;
            line_start = false;
            i = directive_name(text, len, i, &define, &include) - 1;
        } else if (isdigit((unsigned char)ch) || (ch == '.' && i + 1 < len && isdigit((unsigned char)text[i + 1]))) {
            while (i + 1 < len && (ndg_ident_char(text[i + 1]) || text[i + 1] == '.'))
                ++i; /* a number, suffixes and exponents included */
            line_start = false;
        } else if (ndg_ident_char(ch) && !include) {
            size_t j = i;
            while (j < len && ndg_ident_char(text[j]))
                ++j;
            ndg_ident id = {text + i, j - i, line, (int)(i - line_at) + 1, define && named, directive && !(define && named)};
            named |= define;
            rc = f(&id, data);
            i = j - 1;
            line_start = false;
        } else if (ch != ' ' && ch != '\t') {
            line_start = false;
        }
    }
    return rc;
}

/* ---------------------------------------------------------------- reading sources */

int ndg_read_text(const char *path, char **text, size_t *len)
{
    FILE *fp = fopen(path, "rb");
    struct stat st;
    *text = NULL;
    *len = 0;
    if (!fp)
        return -1;
    int e = fstat(fileno(fp), &st) ? errno : !S_ISREG(st.st_mode) ? EINVAL : st.st_size > NDG_MAX_INPUT_BYTES ? EFBIG : 0;
    char *t = e ? NULL : malloc((size_t)st.st_size + 1);
    size_t got = t ? fread(t, 1, (size_t)st.st_size, fp) : 0;
    if (!e && (!t || ferror(fp)))
        e = t ? EIO : ENOMEM;
    fclose(fp);
    if (e) {
        free(t);
        errno = e;
        return -1;
    }
    t[got] = '\0'; /* a file that shrank since fstat: what was there */
    *text = t;
    *len = got;
    return 0;
}

const char *ndg_read_why(int e)
{
    return e == EFBIG ? "larger than 16 MiB, past any source ndgen reads" : e == EINVAL ? "not a regular file" : strerror(e);
}
