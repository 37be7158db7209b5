/* tbytes: see tbytes.h. */
#include "tbytes.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "job.h"
#include "screen.h"

#define WIN_ALIGN ((uint64_t)1 << 20)

typedef struct tb_job {
    ui_job job;
    struct tbytes *owner;     /* NULL once orphaned: done frees the job */
    const gguf_file *f;
    int64_t ti;
    uint64_t off, len;
    uint8_t *buf;
    gguf_status st;
    char err[600];
} tb_job;

struct tbytes {
    struct screen *scr;
    const gguf_file *f;
    int64_t ti;               /* the window held: tensor, range, bytes */
    uint64_t off, len;
    uint8_t *buf;
    tb_job *job;              /* reading, or NULL */
    int64_t err_ti;           /* the last failed range (not retried by drawing) */
    uint64_t err_off, err_len;
    char msg[640];
};

tbytes *tbytes_new(struct screen *scr, const gguf_file *f)
{
    tbytes *b = calloc(1, sizeof *b);
    if (b) {
        b->scr = scr;
        b->f = f;
        b->ti = b->err_ti = -1;
    }
    return b;
}

static void orphan(tbytes *b)
{
    if (b->job) {
        b->job->owner = NULL;
        ui_job_cancel(&b->job->job);
        b->job = NULL;
    }
}

void tbytes_free(tbytes *b)
{
    if (!b)
        return;
    orphan(b);
    free(b->buf);
    free(b);
}

static void tb_work(ui_job *j)
{
    tb_job *t = (tb_job *)j;
    gguf_error err;
    const gguf_tensor *ten = gguf_tensor_at(t->f, (uint64_t)t->ti);
    t->st = GGUF_ENOMEM;
    snprintf(t->err, sizeof t->err, "out of memory");
    if (ten && (t->buf = malloc((size_t)t->len + 1))) {
        t->st = gguf_tensor_read(t->f, ten, t->off, t->len, t->buf, &j->cancel, &err);
        if (t->st != GGUF_OK)
            gguf_error_format(&err, t->err, sizeof t->err);
    }
}

static void tb_done(ui_job *j)
{
    tb_job *t = (tb_job *)j;
    tbytes *b = t->owner;
    if (b && b->job == t) {
        b->job = NULL;
        if (t->st == GGUF_OK) {
            free(b->buf);
            b->buf = t->buf;
            t->buf = NULL;
            b->ti = t->ti, b->off = t->off, b->len = t->len;
        } else if (!ui_job_cancelled(j)) {
            b->err_ti = t->ti, b->err_off = t->off, b->err_len = t->len;
            snprintf(b->msg, sizeof b->msg, "cannot read: %s", t->err);
        }
    }
    free(t->buf);
    free(t);
}

const uint8_t *tbytes_get(tbytes *b, int64_t ti, uint64_t off, uint64_t len, const char **msg)
{
    const gguf_tensor *t = ti >= 0 ? gguf_tensor_at(b->f, (uint64_t)ti) : NULL;
    *msg = "no data";
    if (!t || off > t->n_bytes || len > t->n_bytes - off)
        return NULL;
    if (t->data)
        return t->data + off;
    if (b->ti == ti && off >= b->off && off + len <= b->off + b->len)
        return b->buf + (off - b->off);
    /* whole aligned blocks around the range, inside the tensor */
    uint64_t w0 = off / WIN_ALIGN * WIN_ALIGN, w1 = (off + len + WIN_ALIGN - 1) / WIN_ALIGN * WIN_ALIGN;
    if (w1 > t->n_bytes)
        w1 = t->n_bytes;
    *msg = b->msg;
    if (b->err_ti == ti && b->err_off == w0 && b->err_len == w1 - w0)
        return NULL;   /* failed: shown until the view asks for another range */
    if (b->job && b->job->ti == ti && b->job->off == w0 && b->job->len == w1 - w0)
        return NULL;
    orphan(b);
    tb_job *j = calloc(1, sizeof *j);
    if (!j) {
        snprintf(b->msg, sizeof b->msg, "out of memory");
        return NULL;
    }
    ui_job_init(&j->job, tb_work, tb_done, b);
    j->owner = b;
    j->f = b->f;
    j->ti = ti;
    j->off = w0;
    j->len = w1 - w0;
    b->job = j;
    b->err_ti = -1;
    snprintf(b->msg, sizeof b->msg, "fetching %.1f MiB of %s…", (double)(w1 - w0) / 1048576.0,
             t->n_bytes > WIN_ALIGN ? "the tensor" : "data");
    if (screen_submit(b->scr, &j->job) != 0) {
        b->job = NULL;
        free(j);
        snprintf(b->msg, sizeof b->msg, "cannot start a worker");
    }
    return NULL;
}
