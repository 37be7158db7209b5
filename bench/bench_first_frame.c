/* bench_first_frame BIN FILE [RUNS]: time from exec to the explorer's first
 * full frame. Runs `BIN FILE` RUNS times (default 10) in a pseudo-terminal
 * (120x40) with GGSCOPE_EXIT_AFTER_FIRST_FRAME=1, which makes ggscope exit
 * right after its first doupdate() and print the in-process figure.
 * Reports, over the runs, the median and min of:
 *   - wall: fork+exec → process exit (includes teardown and endwin);
 *   - frame: ggscope's own clock, main() → first doupdate() done. */
#include <errno.h>
#include <pty.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: %s GGSCOPE_BIN FILE [RUNS]\n", argv[0]);
        return 2;
    }
    int runs = argc > 3 ? atoi(argv[3]) : 10;
    if (runs < 1 || runs > 1000)
        runs = 10;
    double *wall = calloc((size_t)runs, sizeof *wall), *frame = calloc((size_t)runs, sizeof *frame);
    int nframe = 0;
    for (int r = 0; r < runs; r++) {
        struct winsize ws = {.ws_row = 40, .ws_col = 120};
        int master;
        double t0 = now_ms();
        pid_t pid = forkpty(&master, NULL, NULL, &ws);
        if (pid < 0) {
            perror("forkpty");
            return 1;
        }
        if (pid == 0) {
            setenv("GGSCOPE_EXIT_AFTER_FIRST_FRAME", "1", 1);
            setenv("TERM", "xterm-256color", 1);
            execl(argv[1], argv[1], argv[2], (char *)NULL);
            _exit(127);
        }
        char buf[65536];
        size_t len = 0;
        for (;;) {
            ssize_t n = read(master, buf + len, sizeof buf - 1 - len);
            if (n <= 0) {
                if (n < 0 && errno == EINTR)
                    continue;
                break;
            }
            len += (size_t)n;
            if (len > sizeof buf / 2) {   /* keep the tail */
                memmove(buf, buf + len - 1024, 1024);
                len = 1024;
            }
        }
        int st;
        waitpid(pid, &st, 0);
        wall[r] = now_ms() - t0;
        close(master);
        buf[len] = 0;
        const char *m = strstr(buf, "first frame after ");
        if (m)
            frame[nframe++] = atof(m + strlen("first frame after "));
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
            fprintf(stderr, "run %d: ggscope failed (status %d)\n", r, st);
            return 1;
        }
    }
    qsort(wall, (size_t)runs, sizeof *wall, cmp);
    qsort(frame, (size_t)nframe, sizeof *frame, cmp);
    printf("%s: %d runs in a 120x40 pty\n", argv[2], runs);
    printf("  wall  (exec -> exit)        median %7.2f ms  min %7.2f ms\n", wall[runs / 2], wall[0]);
    if (nframe)
        printf("  frame (main -> doupdate)    median %7.2f ms  min %7.2f ms\n", frame[nframe / 2], frame[0]);
    else
        printf("  frame: ggscope printed no figure (was it built with the explorer?)\n");
    free(wall);
    free(frame);
    return 0;
}
