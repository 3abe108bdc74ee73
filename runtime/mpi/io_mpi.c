/*
 * io_mpi.c - a tensor to and from a file of its row-major elements through MPI-IO, and to and from each
 * process's own slice of the row-major array, each process moving only the elements of the pages it
 * holds. Not the whole-array scatter and gather (hostio.c).
 *
 * Per copy, a process lists the row runs of its pages (file offset, length, address in the page),
 * sorts them by file offset (a file view's displacements must not decrease), makes them one hindexed
 * file type and moves them with one collective call through a staging buffer of exactly their bytes.
 * A slice is those runs over every copy, merged; each copy's sorted runs find their place in it in one
 * walk, and are copied straight between the slice and the pages (no staging).
 */
#include <assert.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "mpi_internal.h"

typedef struct io_run {
    int64_t file_off, len;
    uint8_t *mem;
} io_run;

typedef struct io_list {
    io_run *runs;
    int64_t n, cap, bytes, elem_bytes;
    uint8_t *slot;     /* the page being listed */
    int64_t page_bytes;
    const bool *edge;  /* whether that page has padding, known once its first run is listed */
    bool first, zero_padding, failed;
} io_list;

static void add_run(void *ctx, int64_t host_elem, int64_t page_elem, int64_t elems)
{
    io_list *l = ctx;
    if (l->first && l->zero_padding && *l->edge) /* a loaded edge page's padding reads zero, as hostio's */
        memset(l->slot, 0, (size_t)l->page_bytes);
    l->first = false;
    if (l->failed)
        return;
    if (l->n == l->cap) {
        int64_t cap = l->cap ? 2 * l->cap : 64;
        io_run *r = realloc(l->runs, (size_t)cap * sizeof *r);
        if (!r) {
            l->failed = true;
            return;
        }
        l->runs = r;
        l->cap = cap;
    }
    l->runs[l->n++] = (io_run){host_elem * l->elem_bytes, elems * l->elem_bytes, l->slot + page_elem * l->elem_bytes};
    l->bytes += elems * l->elem_bytes;
}

static int by_offset(const void *a, const void *b)
{
    int64_t x = ((const io_run *)a)->file_off, y = ((const io_run *)b)->file_off;
    return (x > y) - (x < y);
}

/* Appends the runs of this process's pages of copy r, unsorted (zeroing edge pages' padding when
 * zero_padding); l->failed when out of memory. */
static void add_copy(const nd_tensor *t, int64_t r, int me, io_list *l)
{
    const nd_dist *d = &t->dist;
    bool edge = false;
    l->elem_bytes = d->elem_bytes;
    l->page_bytes = d->page_bytes;
    l->edge = &edge;
    for (int64_t p = 0; p < d->layout.num_pages && !l->failed; ++p) {
        nd_loc loc = nd_layout_locate_id(&d->squeezed, p);
        int64_t i = r * d->layout.ncores + loc.core;
        if (nd_tensor_rank_of(t, i) != me)
            continue;
        l->slot = t->base[i] + loc.offset * d->page_bytes;
        l->first = true;
        nd_page_runs(d, p, &edge, add_run, l);
    }
    l->edge = NULL; /* edge is gone */
}

/* The runs of this process's pages of copy r, sorted; 0, or -1 when out of memory. */
static int list_copy(const nd_tensor *t, int64_t r, int me, bool load, io_list *l)
{
    l->n = l->bytes = 0;
    l->zero_padding = load;
    l->failed = false;
    add_copy(t, r, me, l);
    if (l->failed)
        return -1;
    qsort(l->runs, (size_t)l->n, sizeof *l->runs, by_offset);
    return 0;
}

typedef struct io_job {
    MPI_Comm comm;
    MPI_File fh;
    int me;
    const char *path, *what;
} io_job;

/* Whether every process has ok; a failed agreement ends the job. */
static bool all_ok(const nd_tensor *t, MPI_Comm comm, int ok)
{
    int everywhere = 0, rc = MPI_Allreduce(&ok, &everywhere, 1, MPI_INT, MPI_MIN, comm);
    if (rc != MPI_SUCCESS) {
        if (t->dev->procs)
            nd_mpi_die(t->dev->procs->ctx, "MPI_Allreduce of an I/O step's outcome", rc);
        MPI_Abort(comm, 1);
    }
    return everywhere != 0;
}

static int mpi_message(int rc, char *text)
{
    int len = 0;
    text[0] = 0;
    MPI_Error_string(rc, text, &len);
    return len;
}

/* Moves this process's runs of one copy between the file and the pages: one collective call. */
static int move_copy(const nd_tensor *t, io_job *j, io_list *l, bool load, int64_t *staged, nd_error *err)
{
    int ok = l->n <= INT_MAX && l->bytes <= INT_MAX;
    for (int64_t i = 0; ok && i < l->n; ++i)
        ok = l->runs[i].len <= INT_MAX;
    if (!all_ok(t, j->comm, ok))
        return nd_failc(err, ND_ERANGE, "%s '%s': a process holds more than 2 GiB of one copy (this one %lld bytes in "
                                        "%lld runs); one MPI-IO call moves at most that", j->what, j->path,
                        (long long)l->bytes, (long long)l->n);
    int *lens = malloc((size_t)(l->n ? l->n : 1) * sizeof *lens);
    MPI_Aint *offs = malloc((size_t)(l->n ? l->n : 1) * sizeof *offs);
    uint8_t *stage = malloc((size_t)(l->bytes ? l->bytes : 1));
    MPI_Datatype ft = MPI_DATATYPE_NULL;
    ok = lens && offs && stage;
    for (int64_t i = 0; ok && i < l->n; ++i) {
        lens[i] = (int)l->runs[i].len;
        offs[i] = (MPI_Aint)l->runs[i].file_off;
    }
    ok = ok && MPI_Type_create_hindexed((int)l->n, lens, offs, MPI_BYTE, &ft) == MPI_SUCCESS &&
         MPI_Type_commit(&ft) == MPI_SUCCESS;
    if (!all_ok(t, j->comm, ok)) {
        if (ft != MPI_DATATYPE_NULL)
            MPI_Type_free(&ft);
        free(lens), free(offs), free(stage);
        return nd_failc(err, ND_ENOMEM, "%s '%s': a process is out of memory for its %lld bytes in %lld runs", j->what,
                        j->path, (long long)l->bytes, (long long)l->n);
    }
    *staged = *staged > l->bytes ? *staged : l->bytes;
    uint8_t *p = stage;
    if (!load)
        for (int64_t i = 0; i < l->n; p += l->runs[i].len, ++i)
            memcpy(p, l->runs[i].mem, (size_t)l->runs[i].len);
    MPI_Status st;
    int rc = MPI_File_set_view(j->fh, 0, MPI_BYTE, ft, "native", MPI_INFO_NULL);
    if (rc == MPI_SUCCESS)
        rc = load ? MPI_File_read_all(j->fh, stage, (int)l->bytes, MPI_BYTE, &st)
                  : MPI_File_write_all(j->fh, stage, (int)l->bytes, MPI_BYTE, &st);
    int count = 0;
    if (rc == MPI_SUCCESS && MPI_Get_count(&st, MPI_BYTE, &count) == MPI_SUCCESS && count != (int)l->bytes)
        rc = MPI_ERR_TRUNCATE; /* a short read or write */
    char text[MPI_MAX_ERROR_STRING];
    if (rc != MPI_SUCCESS)
        mpi_message(rc, text);
    if (!all_ok(t, j->comm, rc == MPI_SUCCESS)) {
        MPI_Type_free(&ft);
        free(lens), free(offs), free(stage);
        return nd_failc(err, ND_EIO, "%s '%s': %s", j->what, j->path,
                        rc != MPI_SUCCESS ? text : "another process's read or write failed");
    }
    p = stage;
    if (load)
        for (int64_t i = 0; i < l->n; p += l->runs[i].len, ++i)
            memcpy(l->runs[i].mem, p, (size_t)l->runs[i].len);
    MPI_Type_free(&ft);
    free(lens), free(offs), free(stage);
    return 0;
}

static int64_t tensor_bytes(const nd_tensor *t)
{
    int64_t n = t->dist.elem_bytes;
    for (int i = 0; i < t->dist.spec.rank; ++i)
        n *= t->dist.spec.shape[i];
    return n;
}

static int file_io(nd_tensor *t, const char *path, bool load, int64_t *host_bytes, nd_error *err)
{
    const nd_dist_spec *s = &t->dist.spec;
    nd_device_procs *procs = t->dev->procs;
    io_job j = {procs ? ((nd_mpi_ctx *)procs->ctx)->comm : MPI_COMM_SELF, MPI_FILE_NULL, procs ? procs->rank : 0,
                path, load ? "tensor load" : "tensor save"};
    int inited = 0;
    if (host_bytes)
        *host_bytes = 0;
    if (MPI_Initialized(&inited) != MPI_SUCCESS || !inited)
        return nd_fail(err, "%s: MPI is not initialized (call MPI_Init first)", j.what);
    if (!path || !*path)
        return nd_fail(err, "%s: no file name", j.what);
    if (!load && s->parts > 1)
        return nd_failc(err, ND_EREFUSED, "tensor save '%s': the tensor is Partial, %d parts pending a %s; resolve it "
                                          "with an all_reduce or reduce_scatter first", path, (int)s->parts,
                        nd_reduce_name(s->reduce));
    /* Before anything collective: a process making another call is named here, not left waiting in one. */
    if (procs) /* no process reads pages this load changes: earlier reads are done */
        procs->fence(t->dev, (nd_fence_call){load ? ND_CALL_LOAD : ND_CALL_SAVE, false, t->ident});
    int rc = MPI_File_open(j.comm, path, load ? MPI_MODE_RDONLY : MPI_MODE_CREATE | MPI_MODE_WRONLY, MPI_INFO_NULL,
                           &j.fh);
    char text[MPI_MAX_ERROR_STRING];
    if (rc != MPI_SUCCESS) {
        mpi_message(rc, text);
        return nd_failc(err, ND_EIO, "%s '%s': cannot open: %s", j.what, path, text);
    }
    MPI_File_set_errhandler(j.fh, MPI_ERRORS_RETURN);
    int64_t want = tensor_bytes(t);
    MPI_Offset size = 0;
    rc = load ? MPI_File_get_size(j.fh, &size) : MPI_File_set_size(j.fh, (MPI_Offset)want);
    if (rc != MPI_SUCCESS || (load && size != want)) {
        if (rc != MPI_SUCCESS)
            mpi_message(rc, text);
        MPI_File_close(&j.fh);
        if (rc != MPI_SUCCESS)
            return nd_failc(err, ND_EIO, "%s '%s': %s", j.what, path, text);
        return nd_failc(err, ND_EIO, "%s '%s': the file has %lld bytes, but the %s tensor has %lld", j.what, path,
                        (long long)size, nd_dtype_name(s->dtype), (long long)want);
    }
    io_list l = {0};
    int64_t staged = 0;
    int out = 0;
    for (int64_t r = 0; r < (load ? s->replicas : 1) && out == 0; ++r) {
        if (load && !nd_copy_gets_value(t, r)) {
            nd_copy_fill_neutral(t, r);
            continue;
        }
        int listed = list_copy(t, r, j.me, load, &l);
        if (!all_ok(t, j.comm, listed == 0))
            out = nd_failc(err, ND_ENOMEM, "%s '%s': a process is out of memory for its list of page runs", j.what,
                           path);
        else
            out = move_copy(t, &j, &l, load, &staged, err);
    }
    free(l.runs);
    rc = MPI_File_close(&j.fh);
    if (out == 0 && !all_ok(t, j.comm, rc == MPI_SUCCESS))
        out = nd_failc(err, ND_EIO, "%s '%s': closing the file failed", j.what, path);
    if (procs)
        procs->fence(t->dev, (nd_fence_call){load ? ND_CALL_LOAD : ND_CALL_SAVE, true, t->ident}); /* every
                    process sees the loaded pages */
    if (host_bytes)
        *host_bytes = staged;
    return out;
}

int nd_tensor_load_mpi(nd_tensor *t, const char *path, int64_t *host_bytes, nd_error *err)
{
    return file_io(t, path, true, host_bytes, err);
}

int nd_tensor_save_mpi(const nd_tensor *t, const char *path, int64_t *host_bytes, nd_error *err)
{
    return file_io((nd_tensor *)t, path, false, host_bytes, err); /* save only reads the tensor */
}

/*
 * A process's slice of a host array: the union of its pages' elements over every copy, as sorted,
 * disjoint, maximal element runs. The pages of one copy are disjoint and every copy's pages cut the
 * array alike, so two copies' row runs are equal or disjoint; merging any overlap keeps it general.
 */
typedef struct io_slice {
    nd_elem_run *runs;
    int64_t n, elems;
} io_slice;

/* 0, or -1 when out of memory. */
static int list_slice(const nd_tensor *t, int me, io_slice *sl)
{
    io_list l = {0};
    *sl = (io_slice){0};
    for (int64_t r = 0; r < t->dist.spec.replicas && !l.failed; ++r)
        add_copy(t, r, me, &l);
    if (l.failed) {
        free(l.runs);
        return -1;
    }
    qsort(l.runs, (size_t)l.n, sizeof *l.runs, by_offset);
    sl->runs = malloc((size_t)(l.n ? l.n : 1) * sizeof *sl->runs);
    if (!sl->runs) {
        free(l.runs);
        return -1;
    }
    for (int64_t i = 0; i < l.n; ++i) {
        int64_t off = l.runs[i].file_off / l.elem_bytes, end = off + l.runs[i].len / l.elem_bytes;
        nd_elem_run *last = sl->n ? &sl->runs[sl->n - 1] : NULL;
        if (last && off <= last->offset + last->count) { /* touches or overlaps the run before */
            int64_t grow = end - (last->offset + last->count);
            last->count += grow > 0 ? grow : 0;
            sl->elems += grow > 0 ? grow : 0;
        } else {
            sl->runs[sl->n++] = (nd_elem_run){off, end - off};
            sl->elems += end - off;
        }
    }
    free(l.runs);
    return 0;
}

int nd_tensor_local_runs_mpi(const nd_tensor *t, nd_elem_run *runs, int64_t cap, int64_t *nruns, int64_t *elems,
                             nd_error *err)
{
    io_slice sl;
    if (list_slice(t, t->dev->procs ? t->dev->procs->rank : 0, &sl))
        return nd_failc(err, ND_ENOMEM, "tensor local runs: out of memory for the list of page runs");
    *nruns = sl.n;
    *elems = sl.elems;
    int out = 0;
    if (runs && cap < sl.n)
        out = nd_fail(err, "tensor local runs: this process's slice has %lld runs, but the array has room for %lld",
                      (long long)sl.n, (long long)cap);
    else if (runs && sl.n)
        memcpy(runs, sl.runs, (size_t)sl.n * sizeof *runs);
    free(sl.runs);
    return out;
}

/* Whether every process has ok (a one-process device: ok). */
static bool agree(const nd_tensor *t, int ok)
{
    const nd_device_procs *p = t->dev->procs;
    return p ? all_ok(t, ((nd_mpi_ctx *)p->ctx)->comm, ok) : ok != 0;
}

/* Copies the pages of copy r this process holds to (write) or from the slice. l's runs are sorted, each
 * inside one of sl's runs, so one walk over both finds every run's place in the slice. */
static int slice_copy(const nd_tensor *t, int64_t r, int me, const io_slice *sl, uint8_t *slice, bool write,
                      io_list *l)
{
    if (list_copy(t, r, me, write, l))
        return -1;
    int64_t k = 0, before = 0, eb = t->dist.elem_bytes; /* before: the slice's elements ahead of run k */
    for (int64_t i = 0; i < l->n; ++i) {
        int64_t off = l->runs[i].file_off / eb;
        while (k < sl->n && sl->runs[k].offset + sl->runs[k].count <= off)
            before += sl->runs[k++].count;
        assert(k < sl->n && off >= sl->runs[k].offset &&
               off + l->runs[i].len / eb <= sl->runs[k].offset + sl->runs[k].count);
        uint8_t *at = slice + (before + off - sl->runs[k].offset) * eb;
        if (write)
            memcpy(l->runs[i].mem, at, (size_t)l->runs[i].len);
        else
            memcpy(at, l->runs[i].mem, (size_t)l->runs[i].len);
    }
    return 0;
}

static int slice_io(nd_tensor *t, uint8_t *slice, int64_t bytes, bool write, nd_error *err)
{
    const char *what = write ? "tensor write_local" : "tensor read_local";
    const nd_dist_spec *s = &t->dist.spec;
    nd_device_procs *procs = t->dev->procs;
    int me = procs ? procs->rank : 0;
    if (!write && s->parts > 1) /* every process sees the same tensor: all refuse */
        return nd_failc(err, ND_EREFUSED, "%s: the tensor is Partial, %d parts pending a %s; resolve it with an "
                                          "all_reduce or reduce_scatter first", what, (int)s->parts,
                        nd_reduce_name(s->reduce));
    nd_fence_call call = {write ? ND_CALL_WRITE_LOCAL : ND_CALL_READ_LOCAL, false, t->ident};
    if (procs) /* earlier launches' and host calls' writes are seen, their reads done */
        procs->fence(t->dev, call);
    io_slice sl;
    int listed = list_slice(t, me, &sl);
    if (!agree(t, listed == 0)) {
        free(sl.runs);
        return nd_failc(err, ND_ENOMEM, "%s: a process is out of memory for its list of page runs", what);
    }
    int64_t want = sl.elems * t->dist.elem_bytes;
    if (!agree(t, bytes == want)) {
        free(sl.runs);
        if (bytes != want)
            return nd_fail(err, "%s: the slice has %lld bytes, but this process holds %lld elements of the %s "
                                "tensor, %lld bytes", what, (long long)bytes, (long long)sl.elems,
                           nd_dtype_name(s->dtype), (long long)want);
        return nd_fail(err, "%s: another process's slice has the wrong size", what);
    }
    io_list l = {0};
    int out = 0;
    for (int64_t r = 0; r < s->replicas && out == 0; ++r) {
        if (write && !nd_copy_gets_value(t, r))
            nd_copy_fill_neutral(t, r);
        else
            out = slice_copy(t, r, me, &sl, slice, write, &l);
    }
    free(l.runs);
    free(sl.runs);
    if (!agree(t, out == 0))
        out = nd_failc(err, ND_ENOMEM, "%s: a process is out of memory for its list of page runs", what);
    call.end = true;
    if (procs) /* every process sees the written pages; no page changes before all have read */
        procs->fence(t->dev, call);
    return out;
}

int nd_tensor_write_local_mpi(nd_tensor *t, const void *slice, int64_t bytes, nd_error *err)
{
    return slice_io(t, (uint8_t *)slice, bytes, true, err); /* write only reads the slice */
}

int nd_tensor_read_local_mpi(const nd_tensor *t, void *slice, int64_t bytes, nd_error *err)
{
    return slice_io((nd_tensor *)t, slice, bytes, false, err); /* read only reads the tensor */
}
