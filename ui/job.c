/* job: see job.h. */
#include "job.h"

#include <stddef.h>

void ui_job_init(ui_job *j, void (*work)(ui_job *), void (*done)(ui_job *), void *owner)
{
    j->work = work;
    j->done = done;
    j->owner = owner;
    atomic_init(&j->cancel, false);
    atomic_init(&j->progress_done, 0);
    atomic_init(&j->progress_total, 0);
    atomic_init(&j->permille_sent, 0);
    j->wake = NULL;
    j->wake_ctx = NULL;
    j->next_active = NULL;
}

void ui_job_progress(ui_job *j, uint64_t done, uint64_t total)
{
    atomic_store(&j->progress_total, total);
    atomic_store(&j->progress_done, done);
    unsigned pm = total ? (unsigned)((double)done / (double)total * 200.0) : 0;
    if (pm != atomic_load(&j->permille_sent)) {
        atomic_store(&j->permille_sent, pm);
        if (j->wake)
            j->wake(j->wake_ctx);
    }
}

void ui_job_cancel(ui_job *j)
{
    atomic_store(&j->cancel, true);
}

bool ui_job_cancelled(const ui_job *j)
{
    return atomic_load(&((ui_job *)j)->cancel);
}

double ui_job_fraction(const ui_job *j)
{
    uint64_t t = atomic_load(&((ui_job *)j)->progress_total);
    uint64_t d = atomic_load(&((ui_job *)j)->progress_done);
    return t ? (double)d / (double)t : 0.0;
}
