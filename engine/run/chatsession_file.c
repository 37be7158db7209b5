/* chatsession: session files (chs_session_parse, chs_session_read,
 * chs_file_free): untrusted JSON checked before anything uses it. */
#include "chatsession.h"
#include "chatsession_internal.h"
#include "rfile.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* Bytes of the first invalid UTF-8 sequence or disallowed control
 * character of s[0..n): its offset, or n when there is none; *ctrl is the
 * control character's code point (0: invalid UTF-8). */
static size_t text_check(const unsigned char *s, size_t n, unsigned *ctrl)
{
    *ctrl = 0;
    for (size_t i = 0; i < n;) {
        unsigned c = s[i];
        if (c < 0x80) {
            if ((c < 0x20 && c != '\t' && c != '\n' && c != '\r') || c == 0x7f) {
                *ctrl = c;
                return i;
            }
            i++;
            continue;
        }
        size_t k;
        unsigned cp, min;
        if ((c & 0xE0) == 0xC0) {
            k = 1, cp = c & 0x1F, min = 0x80;
        } else if ((c & 0xF0) == 0xE0) {
            k = 2, cp = c & 0x0F, min = 0x800;
        } else if ((c & 0xF8) == 0xF0) {
            k = 3, cp = c & 0x07, min = 0x10000;
        } else {
            return i;
        }
        if (n - i <= k)
            return i;
        for (size_t j = 1; j <= k; j++) {
            if ((s[i + j] & 0xC0) != 0x80)
                return i;
            cp = (cp << 6) | (s[i + j] & 0x3F);
        }
        if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
            return i;
        if (cp >= 0x80 && cp <= 0x9F) {
            *ctrl = cp;
            return i;
        }
        i += k + 1;
    }
    return n;
}

/* A string field of the file: true when it is fine, else false with why in msg. */
static bool text_ok(const char *what, const char *s, char *msg, size_t cap)
{
    size_t n = strlen(s);
    unsigned ctrl;
    size_t at = text_check((const unsigned char *)s, n, &ctrl);
    if (at == n)
        return true;
    if (ctrl)
        emsg_set(msg, cap, "%s holds a control character (U+%04X at byte %zu; only tab and new lines are allowed)",
               what, ctrl, at);
    else
        emsg_set(msg, cap, "%s is not valid UTF-8 (byte %zu)", what, at);
    return false;
}

static bool num_field(const cJSON *set, const char *name, double lo, double hi, double *v)
{
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(set, name);
    if (!x)
        return true;   /* absent: keep */
    if (!cJSON_IsNumber(x) || !isfinite(x->valuedouble) || x->valuedouble < lo || x->valuedouble > hi)
        return false;
    *v = x->valuedouble;
    return true;
}

void chs_file_free(chs_file *f)
{
    if (!f)
        return;
    for (size_t i = 0; i < f->n; i++)
        chs__msg_free(&f->m[i]);
    free(f->m);
    free(f->system);
    memset(f, 0, sizeof *f);
}

int chs_session_parse(const char *buf, size_t len, const chs_settings *base, chs_file *out, char *msg, size_t cap)
{
    memset(out, 0, sizeof *out);
    out->st = base ? *base : chs_default_settings();
    if (len > CHS_FILE_MAX_BYTES) {
        emsg_set(msg, cap, "too large for a session file (%zu bytes; at most %u MiB)", len, CHS_FILE_MAX_BYTES >> 20);
        return -1;
    }
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(buf, len, &end, false);
    if (!root) {
        size_t at = end && end >= buf && end <= buf + len ? (size_t)(end - buf) : 0;
        emsg_set(msg, cap, "offset %zu: not JSON, or nested deeper than %d (a ggscope chat session file)", at,
               CJSON_NESTING_LIMIT);
        return -1;
    }
    int ret = -1;
    chs_settings st = out->st;
    const cJSON *ver = cJSON_GetObjectItemCaseSensitive(root, "ggscope_chat");
    const cJSON *sys = cJSON_GetObjectItemCaseSensitive(root, "system");
    const cJSON *set = cJSON_GetObjectItemCaseSensitive(root, "settings");
    const cJSON *arr = cJSON_GetObjectItemCaseSensitive(root, "messages");
    if (!cJSON_IsObject(root) || !cJSON_IsNumber(ver) || ver->valuedouble != 1) {
        emsg_set(msg, cap, "not a ggscope chat session file (expected an object with \"ggscope_chat\": 1)");
        goto out;
    }
    if (sys && !cJSON_IsString(sys)) {
        emsg_set(msg, cap, "system is not a string");
        goto out;
    }
    if (set && !cJSON_IsObject(set)) {
        emsg_set(msg, cap, "settings is not an object");
        goto out;
    }
    if (!cJSON_IsArray(arr)) {
        emsg_set(msg, cap, "messages is not an array");
        goto out;
    }
    if (sys && !text_ok("system", sys->valuestring, msg, cap))
        goto out;
    if (set) {
        double v[7] = {st.sp.temp,          st.sp.top_k,         st.sp.top_p, st.sp.min_p,
                       st.sp.repeat_penalty, st.sp.repeat_last_n, st.n_predict};
        static const char *names[7] = {"temp", "top_k", "top_p", "min_p", "repeat_penalty",
                                       "repeat_last_n", "n_predict"};
        /* floats within float range; counts as /set takes them */
        static const double lim[7] = {1e30, 1 << 24, 1e30, 1e30, 1e30, 1 << 24, 1 << 24};
        for (int i = 0; i < 7; i++)
            if (!num_field(set, names[i], -lim[i], lim[i], &v[i])) {
                emsg_set(msg, cap, "settings.%s is not a valid number (at most %g in magnitude)", names[i], lim[i]);
                goto out;
            }
        if (!(v[4] > 0)) {
            emsg_set(msg, cap, "settings.repeat_penalty must be > 0");
            goto out;
        }
        st.sp.temp = (float)v[0];
        st.sp.top_k = (int32_t)v[1];
        st.sp.top_p = (float)v[2];
        st.sp.min_p = (float)v[3];
        st.sp.repeat_penalty = (float)v[4];
        st.sp.repeat_last_n = (int32_t)(v[5] < 0 ? 0 : v[5]);
        st.n_predict = (int32_t)v[6];
        const cJSON *seed = cJSON_GetObjectItemCaseSensitive(set, "seed");
        if (cJSON_IsString(seed)) {
            char *e;
            errno = 0;
            unsigned long long s = strtoull(seed->valuestring, &e, 10);
            if (*e || errno || !seed->valuestring[0] || seed->valuestring[0] == '-') {
                emsg_set(msg, cap, "settings.seed is not a whole number");
                goto out;
            }
            st.sp.seed = s;
        } else if (cJSON_IsNumber(seed) && seed->valuedouble >= 0 && seed->valuedouble < 1.8e19) {
            st.sp.seed = (uint64_t)seed->valuedouble;
        } else if (seed) {
            emsg_set(msg, cap, "settings.seed is not a whole number");
            goto out;
        }
    }
    size_t count = 0;
    const cJSON *it;
    cJSON_ArrayForEach(it, arr)
    {
        if (++count > CHS_FILE_MAX_MESSAGES) {
            emsg_set(msg, cap, "more than %u messages", CHS_FILE_MAX_MESSAGES);
            goto out;
        }
    }
    out->m = calloc(count ? count : 1, sizeof *out->m);
    out->system = chs__dupn(sys ? sys->valuestring : "", sys ? strlen(sys->valuestring) : 0);
    if (!out->m || !out->system) {
        emsg_set(msg, cap, "out of memory");
        goto out;
    }
    size_t i = 0;
    cJSON_ArrayForEach(it, arr)
    {
        const cJSON *r = cJSON_GetObjectItemCaseSensitive(it, "role");
        const cJSON *t = cJSON_GetObjectItemCaseSensitive(it, "content");
        const cJSON *d = cJSON_GetObjectItemCaseSensitive(it, "dropped");
        char what[64];
        if (!cJSON_IsObject(it) || !cJSON_IsString(r) || !cJSON_IsString(t) ||
            (strcmp(r->valuestring, "user") && strcmp(r->valuestring, "assistant"))) {
            emsg_set(msg, cap, "messages[%zu]: each message needs a role (user, assistant) and a content string", i);
            goto out;
        }
        if (d && !cJSON_IsBool(d)) {
            emsg_set(msg, cap, "messages[%zu].dropped is not true or false", i);
            goto out;
        }
        snprintf(what, sizeof what, "messages[%zu].content", i);
        if (!text_ok(what, t->valuestring, msg, cap))
            goto out;
        chs_msg *m = &out->m[i];
        size_t tl = strlen(t->valuestring);
        m->role = chs__dupn(r->valuestring, strlen(r->valuestring));
        m->content = chs__dupn(t->valuestring, tl);
        m->len = tl;
        m->dropped = cJSON_IsTrue(d);
        out->n = ++i;
        if (!m->role || !m->content) {
            emsg_set(msg, cap, "out of memory");
            goto out;
        }
    }
    out->st = st;
    ret = 0;
out:
    cJSON_Delete(root);
    if (ret)
        chs_file_free(out);
    return ret;
}

int chs_session_read(const char *path, const chs_settings *base, chs_file *out, char *msg, size_t cap)
{
    memset(out, 0, sizeof *out);
    /* regular files only (a FIFO is refused without waiting for a writer),
     * at most CHS_FILE_MAX_BYTES */
    size_t sz;
    rfile_status rs;
    int e;
    char *buf = rfile_read(path, CHS_FILE_MAX_BYTES, RFILE_REGULAR, &sz, &rs, &e);
    if (!buf) {
        if (rs == RFILE_ENOTREG)
            emsg_set(msg, cap, "%s: not a regular file (a session file is)", path);
        else if (rs == RFILE_ETOOBIG) {
            struct stat sb;
            long long size = stat(path, &sb) == 0 ? (long long)sb.st_size : (long long)CHS_FILE_MAX_BYTES + 1;
            emsg_set(msg, cap, "%s: too large for a session file (%lld bytes; at most %u MiB)", path, size,
                   CHS_FILE_MAX_BYTES >> 20);
        }
        else
            emsg_set(msg, cap, "%s: %s", path, rfile_strerror(rs, e));
        return -1;
    }
    char inner[448];
    int rc = chs_session_parse(buf, sz, base, out, inner, sizeof inner);
    free(buf);
    if (rc)
        emsg_set(msg, cap, "%s: %s", path, inner);
    return rc;
}
