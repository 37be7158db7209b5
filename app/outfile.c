/* Output files of the commands: every command that writes a file goes
 * through these (engine/base/afile.h underneath: a temporary file in the
 * destination's folder, renamed into place). SIGINT, SIGTERM and SIGHUP
 * remove the temporary file, then kill the process with the default action. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "app.h"

static char guard_path[4096];            /* the temporary file to remove */
static volatile sig_atomic_t guard_armed;
static const int guard_signals[] = {SIGINT, SIGTERM, SIGHUP};
static struct sigaction guard_old[3];
static bool guard_installed[3];

static void on_signal(int sig)
{
    if (guard_armed)
        unlink(guard_path);
    /* SA_RESETHAND restored the default action; this signal is blocked
     * while the handler runs, so it kills the process once we return */
    raise(sig);
}

static void block_signals(sigset_t *old)
{
    sigset_t set;
    sigemptyset(&set);
    for (int i = 0; i < 3; i++)
        sigaddset(&set, guard_signals[i]);
    pthread_sigmask(SIG_BLOCK, &set, old);
}

static void guard_install(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sa.sa_flags = SA_RESETHAND;
    sigemptyset(&sa.sa_mask);
    for (int i = 0; i < 3; i++) {
        guard_installed[i] = false;
        if (sigaction(guard_signals[i], NULL, &guard_old[i]) != 0)
            continue;
        if (guard_old[i].sa_handler == SIG_IGN)
            continue;   /* ignored by whoever started us (nohup): stays ignored */
        guard_installed[i] = sigaction(guard_signals[i], &sa, NULL) == 0;
    }
}

static void guard_remove(void)
{
    for (int i = 0; i < 3; i++)
        if (guard_installed[i]) {
            sigaction(guard_signals[i], &guard_old[i], NULL);
            guard_installed[i] = false;
        }
}

static const char *out_what;   /* "the demo model", or NULL */

void app_out_error(const afile *a)
{
    char dir[4096], head[4200];
    const char *path = a->path ? a->path : "?";
    if (out_what)
        snprintf(head, sizeof head, "cannot write %s to %s", out_what, path);
    else
        snprintf(head, sizeof head, "cannot write %s", path);
    switch (a->step) {
    case AFILE_CREATE:
        if (a->err == ENOENT || a->err == ENOTDIR)
            app_error("%s: the folder %s does not exist", head, afile_dir(path, dir, sizeof dir));
        else
            app_error("%s: cannot create a temporary file in %s: %s", head, afile_dir(path, dir, sizeof dir),
                      strerror(a->err));
        break;
    case AFILE_RENAME:
        app_error("%s: cannot rename the temporary file into place: %s", head, strerror(a->err));
        break;
    default:
        app_error("%s: %s", head, strerror(a->err ? a->err : EIO));
        break;
    }
}

int app_out_open(afile *a, const char *path, const char *what)
{
    out_what = what;
    memset(a, 0, sizeof *a);
    a->fd = -1;
    struct stat st;
    if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
        /* renaming over a folder fails late; over a device (/dev/null as
         * root) it would replace the device node */
        app_error("%s: exists and is not a regular file (%s): refusing to replace it", path,
                  S_ISDIR(st.st_mode) ? "a folder" : "a device, a pipe or a socket");
        return APP_BADINPUT;
    }
    char stale[4096];
    int n = afile_find_stale(path, stale, sizeof stale);
    if (n > 0)
        fprintf(stderr, "ggscope: warning: a stale temporary file from an interrupted write of %s exists: %s%s "
                        "(remove it if no other ggscope is writing %s)\n",
                path, stale, n > 1 ? n == 2 ? " and 1 more" : " and more" : "", path);
    sigset_t old;
    block_signals(&old);
    int rc = afile_open(a, path);
    if (rc == 0 && strlen(a->tmp) < sizeof guard_path) {
        memcpy(guard_path, a->tmp, strlen(a->tmp) + 1);
        guard_armed = 1;
        guard_install();
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        app_out_error(a);
        return a->step == AFILE_CREATE && (a->err == ENOENT || a->err == ENOTDIR) ? APP_BADINPUT : APP_FAIL;
    }
    return APP_OK;
}

int app_out_commit(afile *a)
{
    /* the slow part (fsync) with the signals open; then rename and disarm
     * with them blocked, so a signal never removes a renamed file's name */
    int rc = afile_sync(a);
    if (rc == 0) {
        sigset_t old;
        block_signals(&old);
        rc = afile_commit(a);
        guard_armed = 0;
        guard_remove();
        pthread_sigmask(SIG_SETMASK, &old, NULL);
    }
    if (rc != 0) {
        app_out_error(a);
        app_out_close(a);
        return APP_FAIL;
    }
    return APP_OK;
}

void app_out_close(afile *a)
{
    sigset_t old;
    block_signals(&old);
    afile_close(a);
    guard_armed = 0;
    guard_remove();
    pthread_sigmask(SIG_SETMASK, &old, NULL);
}

bool app_out_is_input(const char *out, const gguf_file *in)
{
    uint32_t n = gguf_shard_count(in);
    for (uint32_t i = 0; i < (n ? n : 1); i++) {
        const char *p = n ? gguf_shard_path(in, i) : gguf_path(in);
        if (p && afile_same(out, p)) {
            if (n > 1)
                app_error("%s: refusing to write over the input (it is shard %u of the %u-shard model %s)", out, i + 1, n,
                          gguf_path(in));
            else
                app_error("%s: refusing to write over the input %s (the same file)", out, gguf_path(in));
            return true;
        }
    }
    return false;
}
