/*
 * text.c - text helpers shared by the pipeline and the inspection commands: the growing buffer that
 * generated code is written into (ndg_buf), and the one JSON string writer.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ndgen.h"

/* Room for more bytes and a NUL. ndgen cannot go on without memory for its output: it says so and
 * exits, rather than write a truncated kernel. */
static void reserve(ndg_buf *b, size_t more)
{
    if (b->len + more + 1 <= b->cap)
        return;
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < b->len + more + 1)
        cap *= 2;
    char *grown = realloc(b->data, cap);
    if (!grown) {
        fprintf(stderr, "ndgen: out of memory (a text buffer of %zu bytes)\n", cap);
        exit(1);
    }
    b->data = grown;
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
